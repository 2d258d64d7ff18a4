// tb::Result and tb::Error: the one error channel inside torchbridge (Boost.Outcome).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <boost/outcome/result.hpp>

namespace tb {

enum class ErrorCode : std::uint8_t {
  kDecode,           // bytes that are not the expected msgpack / Burn value
  kInvalidArgument,  // a well-formed request that cannot be satisfied as asked
  kNotFound,         // unknown tensor, graph, transfer or custom-op id
  kUnsupported,      // something LibTorch or this host truly cannot do
  kExecution,        // a kernel failed while running
  kLimit,            // a configured size or count limit was exceeded
  kUnauthorized,
  kTimeout,
  kIo,
  kInternal,
};

std::string_view to_string(ErrorCode code) noexcept;

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  // Where it happened: an op name, a decode path, a session id. Kept apart from the message so
  // callers can prefix their own context without re-parsing.
  std::string context;

  // "context: message", or just the message.
  std::string what() const;
};

template <class T>
using Result = boost::outcome_v2::basic_result<T, Error, boost::outcome_v2::policy::terminate>;

using Status = Result<void>;

inline Status ok() {
  return boost::outcome_v2::success();
}

template <class... Args>
Error make_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Error{code, fmt::format(format, std::forward<Args>(args)...), {}};
}

// Prepends `ctx` to an error's context ("ctx > old context").
Error with_context(Error error, std::string_view ctx);

}  // namespace tb

// TB_TRY(expr): returns the failure of a Result expression from the enclosing function.
#define TB_TRY(...)                                     \
  do {                                                  \
    auto&& tb_try_result_ = (__VA_ARGS__);              \
    if (!tb_try_result_) return tb_try_result_.error(); \
  } while (false)

#define TB_CONCAT_IMPL(a, b) a##b
#define TB_CONCAT(a, b) TB_CONCAT_IMPL(a, b)

// TB_TRY_ASSIGN(lhs, expr): `lhs = value of expr`, or return its failure. lhs may declare.
#define TB_TRY_ASSIGN(lhs, ...) TB_TRY_ASSIGN_IMPL(TB_CONCAT(tb_try_r_, __LINE__), lhs, __VA_ARGS__)
#define TB_TRY_ASSIGN_IMPL(tmp, lhs, ...)  \
  auto&& tmp = (__VA_ARGS__);              \
  if (!tmp) return std::move(tmp).error(); \
  lhs = std::move(tmp).value()
