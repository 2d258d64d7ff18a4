// The last-resort guard of the bridge (DESIGN 5): no exception crosses an Asio handler, a thread
// or the network. ATen's exceptions are caught at the executor's boundary; what reaches these
// guards is the rest (std::bad_alloc while encoding an answer, std::system_error from a thread or
// a lock, a bug), and it ends that session or that request, never the process.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <system_error>

namespace tb::bridge {

// What the current exception says, for a log line or a close reason. Call inside a catch.
inline std::string current_exception_text() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return "out of memory";
  } catch (const std::system_error& e) {
    return std::string("system error: ") + e.what();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown exception";
  }
}

// Runs `fn`; an exception becomes `on_exception(text)`, which must not throw.
template <class Fn, class OnException>
void guarded(Fn&& fn, OnException&& on_exception) noexcept {
  try {
    fn();
  } catch (...) {
    std::string what;
    try {
      what = current_exception_text();
    } catch (...) {
    }
    on_exception(what);
  }
}

}  // namespace tb::bridge
