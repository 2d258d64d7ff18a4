// What an exception says, in one ordered list shared by every boundary that turns exceptions into
// errors or log lines: the bridge's last-resort guards and the backend's aten_guard.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <system_error>

namespace tb {

// The current exception's text. Call inside a catch.
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

// The same for a handler that must not throw: "" where even the text cannot be had.
inline std::string caught_exception_text() noexcept {
  try {
    return current_exception_text();
  } catch (...) {
    return {};
  }
}

}  // namespace tb
