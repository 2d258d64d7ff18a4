// The one boundary where exceptions from ATen, TorchScript and user handlers become errors
// (docs/decisions.md): every call into them that may throw runs under aten_guard, and nothing
// throws past it. The catch list is ordered once here: c10::Error (without its C++ backtrace, which
// means nothing to a remote client), then std::bad_alloc, std::system_error, std::exception and
// anything else (tb::current_exception_text).
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include "torchbridge/exception_text.hpp"
#include "torchbridge/result.hpp"

namespace tb::backend::libtorch {

namespace guard_detail {

template <class T>
struct AsResult {
  using type = Result<T>;
};
template <class T>
struct AsResult<Result<T>> {
  using type = Result<T>;
};

inline Error caught(ErrorCode code, std::string_view what, std::string_view text) {
  if (what.empty()) return Error{code, std::string(text), {}};
  return Error{code, fmt::format("{}: {}", what, text), {}};
}

}  // namespace guard_detail

// What `fn()` returns (a Result passes through, a plain value or void is wrapped), or an error of
// `code` whose message is "what: <the exception's text>" (the text alone when `what` is empty).
template <class Fn>
auto aten_guard(ErrorCode code, std::string_view what, Fn&& fn) ->
    typename guard_detail::AsResult<std::invoke_result_t<Fn&>>::type {
  using R = std::invoke_result_t<Fn&>;
  try {
    if constexpr (std::is_void_v<R>) {
      fn();
      return ok();
    } else {
      return fn();
    }
  } catch (const c10::Error& e) {
    return guard_detail::caught(code, what, e.what_without_backtrace());
  } catch (...) {
    return guard_detail::caught(code, what, current_exception_text());
  }
}

// The common case: a kernel failing while it runs.
template <class Fn>
auto aten_guard(std::string_view what, Fn&& fn) {
  return aten_guard(ErrorCode::kExecution, what, std::forward<Fn>(fn));
}

// A device named as at::Device parses it ("cpu", "cuda", "cuda:1"); its constructor throws on any
// other name.
inline Result<at::Device> parse_device(const std::string& name) {
  auto device = aten_guard(ErrorCode::kInvalidArgument, "", [&] { return at::Device(name); });
  if (!device) {
    return make_error(ErrorCode::kInvalidArgument, "invalid device \"{}\": expected cpu or cuda:N",
                      name);
  }
  return device;
}

}  // namespace tb::backend::libtorch
