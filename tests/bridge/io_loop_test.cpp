// The network threads' last resort (bridge/net/io_loop.hpp): a throwing handler is reported and
// the loop, and a periodic task, go on.
#include "net/io_loop.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/post.hpp>

namespace {

namespace net = boost::asio;

TEST(IoLoop, AThrowingHandlerIsReportedAndTheNextOneStillRuns) {
  net::io_context ioc;
  std::vector<std::string> reported;
  bool after = false;
  net::post(ioc, [] { throw std::runtime_error("boom"); });
  net::post(ioc, [] { throw std::bad_alloc(); });
  net::post(ioc, [&] { after = true; });
  tb::net::run_guarded(ioc, [&](const std::string& what) { reported.push_back(what); });
  EXPECT_TRUE(after);
  EXPECT_EQ(reported, (std::vector<std::string>{"boom", "out of memory"}));
}

TEST(IoLoop, APeriodicTaskThatThrowsKeepsTicking) {
  net::io_context ioc;
  net::steady_timer timer{ioc};
  int calls = 0;
  std::vector<std::string> reported;
  tb::net::every(
      timer, std::chrono::milliseconds(1),
      [&] {
        if (++calls == 1) throw std::runtime_error("first tick fails");
        // A cancel from inside the tick would find no wait to cancel: the owner cancels from
        // another handler, as the host and the client do when they shut down.
        if (calls == 3) net::post(timer.get_executor(), [&] { timer.cancel(); });
      },
      [&](const std::string& what) { reported.push_back(what); });
  // Cancelling the timer is the only way the loop runs out of work.
  tb::net::run_guarded(ioc, [&](const std::string& what) { reported.push_back("loop: " + what); });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(reported, (std::vector<std::string>{"first tick fails"}));
}

TEST(IoLoop, APeriodicTaskStopsWhenItsTimerGoes) {
  net::io_context ioc;
  int calls = 0;
  {
    net::steady_timer timer{ioc};
    tb::net::every(
        timer, std::chrono::hours(1), [&] { ++calls; }, [](const std::string&) {});
  }
  ioc.run();  // the destroyed timer's wait completes as cancelled; nothing re-arms
  EXPECT_EQ(calls, 0);
}

}  // namespace
