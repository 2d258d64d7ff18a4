// The host's network threads: one io_context per thread, each run by that thread alone.
//
// Why not one io_context run by every thread: Asio then wakes a second thread for each event the
// first takes from epoll, so that one of them goes back to waiting while the other runs the
// handler. For a Burn client streaming small frames that was a futex wake and two context switches
// per frame, on top of the wake of the session's worker: on 2 cores, a plain client's LU 500 cost
// the host 72-92 ms of CPU with two threads against 66-68 with one (docs/benchmarks.md). With a
// context per thread, the thread that takes an event runs its handler, and a connection's handlers
// never run at once (a single thread is an implicit strand), so connections need no strand.
// Header-only like io_loop.hpp.
#pragma once

#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "net/io_loop.hpp"

namespace tb::net {

class IoPool {
 public:
  explicit IoPool(std::size_t threads) {
    if (threads == 0) threads = 1;
    for (std::size_t i = 0; i < threads; ++i) {
      // Concurrency hint 1: one thread runs it, so Asio never wakes another for it. Posting to it
      // from other threads (a session's worker sending an answer) stays safe.
      contexts_.push_back(std::make_unique<boost::asio::io_context>(1));
      // A timer's service makes the context's reactor (its epoll, eventfd and timerfd) now, not
      // when the first connection lands on it: the host's descriptors stay steady from start.
      boost::asio::steady_timer make_reactor(*contexts_.back());
    }
  }
  ~IoPool() { stop(); }
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  std::size_t size() const { return contexts_.size(); }
  boost::asio::io_context& context(std::size_t i) { return *contexts_.at(i); }

  // Starts one thread per context; each runs until stop(), reporting what a handler throws to
  // `on_exception(text)` (run_guarded) and going on.
  template <class OnException>
  void start(OnException on_exception) {
    for (auto& ioc : contexts_) {
      work_.emplace_back(ioc->get_executor());
      threads_.emplace_back([&ctx = *ioc, on_exception] { run_guarded(ctx, on_exception); });
    }
  }
  bool running() const { return !threads_.empty(); }

  // Stops every context and joins its thread; handlers still queued are destroyed with the pool.
  void stop() {
    work_.clear();
    for (auto& ioc : contexts_) ioc->stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  using Work = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::vector<Work> work_;
  std::vector<std::thread> threads_;
};

}  // namespace tb::net
