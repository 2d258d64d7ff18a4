// The host's network threads (bridge/net/io_pool.hpp): one thread per context, so a connection's
// handlers always run on one thread, and a live host spreads its sessions over the threads.
#include "net/io_pool.hpp"

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "bridge_test_util.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::test {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Where the handlers posted to each context ran.
struct PostedTo {
  std::mutex mutex;
  std::vector<std::set<std::thread::id>> by_context;
  std::atomic<int> ran{0};
};

TEST(IoPool, EachContextRunsOnOneThreadOfItsOwn) {
  tb::net::IoPool pool(3);
  ASSERT_EQ(pool.size(), 3u);
  std::vector<std::string> reported;
  pool.start([&](const std::string& what) { reported.push_back(what); });
  PostedTo seen;
  seen.by_context.resize(pool.size());
  constexpr int kPerContext = 50;
  for (int n = 0; n < kPerContext; ++n) {
    for (std::size_t i = 0; i < pool.size(); ++i) {
      asio::post(pool.context(i), [&seen, i] {
        std::lock_guard lock(seen.mutex);
        seen.by_context[i].insert(std::this_thread::get_id());
        ++seen.ran;
      });
    }
  }
  ASSERT_TRUE(eventually([&] { return seen.ran.load() == kPerContext * 3; }));
  std::set<std::thread::id> all;
  for (const auto& ids : seen.by_context) {
    EXPECT_EQ(ids.size(), 1u) << "a context's handlers run on one thread only";
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), 3u) << "each context has a thread of its own";
  EXPECT_FALSE(all.count(std::this_thread::get_id()));
  pool.stop();
  EXPECT_FALSE(pool.running());
  EXPECT_TRUE(reported.empty());
}

TEST(IoPool, AThrowingHandlerLeavesItsThreadServing) {
  tb::net::IoPool pool(1);
  std::atomic<int> reported{0};
  pool.start([&](const std::string&) { ++reported; });
  std::atomic<bool> after{false};
  asio::post(pool.context(0), [] { throw std::runtime_error("boom"); });
  asio::post(pool.context(0), [&] { after = true; });
  EXPECT_TRUE(eventually([&] { return after.load(); }));
  EXPECT_EQ(reported.load(), 1);
  EXPECT_EQ(tb::net::IoPool(0).size(), 1u) << "at least one thread";
}

// Two sessions open at once on a host with two network threads are served by different threads,
// and the thread a closed session leaves is the next one's.
TEST(IoPool, AHostSpreadsItsSessionsOverItsNetworkThreads) {
  TestHost host(1);  // two network threads (HostOptions' default)
  const auto by_thread = [&] { return host.host().metrics().connections_by_thread; };
  ASSERT_EQ(by_thread().size(), 2u);
  using Counts = std::vector<std::uint64_t>;
  {
    Session a(host.port(), 0);
    ASSERT_TRUE(a.open());
    Session b(host.port(), 0);
    ASSERT_TRUE(b.open());
    EXPECT_TRUE(eventually([&] {
      return by_thread() == Counts{1, 1};
    })) << by_thread()[0]
        << ", " << by_thread()[1];
    EXPECT_FALSE(std::holds_alternative<ExecutionError>(a.sync()));
    EXPECT_FALSE(std::holds_alternative<ExecutionError>(b.sync()));
  }
  EXPECT_TRUE(eventually([&] {
    return by_thread() == Counts{0, 0};
  })) << "a connection's place on its thread goes with it";
}

// A host listening on IPv6 serves through its threads too (each accepted descriptor is reopened on
// its thread).
TEST(IoPool, AHostOnIpv6ServesFromItsThreads) {
  bridge::HostOptions options;
  options.host = "::1";
  options.port = 0;
  std::vector<std::shared_ptr<backend::Backend>> devices;
  devices.push_back(std::move(backend::libtorch::make_backend({"cpu", nullptr})).value());
  bridge::Host host(options, devices);
  if (auto s = host.start(); !s) GTEST_SKIP() << "no IPv6 loopback here: " << s.error().what();
  asio::io_context ioc;
  asio::ip::tcp::socket socket(ioc);
  boost::system::error_code ec;
  socket.connect({asio::ip::make_address("::1"), host.port()}, ec);
  ASSERT_FALSE(ec) << ec.message();
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: [::1]\r\n\r\n";
  asio::write(socket, asio::buffer(request), ec);
  ASSERT_FALSE(ec) << ec.message();
  std::string answer(12, '\0');
  asio::read(socket, asio::buffer(answer), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(answer, "HTTP/1.1 200");
  host.stop();
}

}  // namespace
}  // namespace tb::test
