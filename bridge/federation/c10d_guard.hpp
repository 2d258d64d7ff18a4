// The federation's one error boundary. c10d (its process groups) and the store client, a
// c10d::Store, report every failure by throwing; every call into them goes through `guarded`,
// which turns what they throw into a Result, so nothing else in the federation catches.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "torchbridge/result.hpp"

namespace tb::bridge {
namespace detail {

template <typename T>
struct Guarded {
  using type = Result<T>;
};
template <typename T>
struct Guarded<Result<T>> {  // a step that already answers a Result is not wrapped twice
  using type = Result<T>;
};

}  // namespace detail

// Runs `step`; a throw becomes an error `code` reading "`what`: <the exception's first line>"
// (c10d appends a C++ backtrace after it).
template <typename F, typename R = std::invoke_result_t<F&>>
typename detail::Guarded<R>::type guarded(ErrorCode code, std::string_view what, F&& step) {
  try {
    if constexpr (std::is_void_v<R>) {
      std::forward<F>(step)();
      return ok();
    } else {
      return std::forward<F>(step)();
    }
  } catch (const std::exception& e) {
    const std::string message = e.what();
    return make_error(code, "{}: {}", what, message.substr(0, message.find('\n')));
  }
}

}  // namespace tb::bridge
