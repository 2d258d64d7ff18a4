// The last-resort guard of the bridge (docs/decisions.md): no exception crosses an Asio handler, a
// thread or the network. ATen's exceptions are caught at the executor's boundary; what reaches
// these guards is the rest (std::bad_alloc while encoding an answer, std::system_error from a
// thread or a lock, a bug), and it ends that session or that request, never the process.
#pragma once

#include <string>

#include "torchbridge/exception_text.hpp"

namespace tb::bridge {

using tb::caught_exception_text;
using tb::current_exception_text;

// Runs `fn`; an exception becomes `on_exception(text)`, which must not throw.
template <class Fn, class OnException>
void guarded(Fn&& fn, OnException&& on_exception) noexcept {
  try {
    fn();
  } catch (...) {
    on_exception(caught_exception_text());
  }
}

}  // namespace tb::bridge
