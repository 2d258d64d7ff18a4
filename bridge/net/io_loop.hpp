// Network threads that no exception ends (docs/decisions.md), shared by the host and the C++
// client. Header-only like tls.hpp. Every handler guards what it knows can fail; these loops are
// the last resort for the rest (std::bad_alloc while decoding, std::system_error from a timer or a
// lock, a bug), so that one handler's failure is reported and every other connection on the
// thread goes on.
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "torchbridge/exception_text.hpp"

namespace tb::net {

// Runs `ioc` until it has no work left or is stopped. A handler that throws is reported to
// `on_exception(text)`, which must not throw, and the loop goes on with the next handler.
template <class OnException>
void run_guarded(boost::asio::io_context& ioc, OnException&& on_exception) noexcept {
  while (true) {
    try {
      ioc.run();
      return;
    } catch (...) {
      on_exception(caught_exception_text());
    }
  }
}

// Calls `fn` every `period` until `timer` is cancelled or destroyed. An exception from `fn` is
// reported to `on_exception(text)` (which must not throw) and the ticks go on; one from re-arming
// the timer is reported too, and then the ticks stop, since nothing is left to run them.
template <class Fn, class OnException>
void every(boost::asio::steady_timer& timer, std::chrono::steady_clock::duration period, Fn fn,
           OnException on_exception) {
  struct Tick {
    boost::asio::steady_timer* timer;
    std::chrono::steady_clock::duration period;
    Fn fn;
    OnException on_exception;

    void arm() {
      try {
        timer->expires_after(period);
        timer->async_wait(std::move(*this));
      } catch (...) {
        on_exception(caught_exception_text());
      }
    }
    void operator()(const boost::system::error_code& ec) {
      if (ec) return;  // cancelled: the owner is going away
      try {
        fn();
      } catch (...) {
        on_exception(caught_exception_text());
      }
      arm();
    }
  };
  Tick{&timer, period, std::move(fn), std::move(on_exception)}.arm();
}

}  // namespace tb::net
