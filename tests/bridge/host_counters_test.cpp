#include "host_counters.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tb::test {
namespace {

using bridge::Count;
using bridge::Gauge;
using bridge::GaugeSlot;
using bridge::HostCounters;

TEST(HostCounters, AddReturnsTheNewTotal) {
  HostCounters c;
  EXPECT_EQ(c.add(Count::kFramesRejected), 1u);
  EXPECT_EQ(c.add(Count::kFramesRejected, 4), 5u);
  EXPECT_EQ(c.value(Count::kFramesRejected), 5u);
  EXPECT_EQ(c.value(Count::kBytesIn), 0u);
}

TEST(HostCounters, APlaceIsHeldUntilItsLastOwnerGoes) {
  HostCounters c;
  auto first = c.try_open(Gauge::kConnections, 2);
  ASSERT_TRUE(first);
  {
    auto second = c.try_open(Gauge::kConnections, 2);
    ASSERT_TRUE(second);
    EXPECT_FALSE(c.try_open(Gauge::kConnections, 2)) << "the limit is 2";
    EXPECT_EQ(c.open_now(Gauge::kConnections), 2u) << "a refusal takes no place";
    GaugeSlot moved = std::move(*second);  // the HTTP connection becomes a websocket one
    EXPECT_EQ(c.open_now(Gauge::kConnections), 2u);
  }
  EXPECT_EQ(c.open_now(Gauge::kConnections), 1u);
  EXPECT_TRUE(c.try_open(Gauge::kConnections, 2));
  EXPECT_EQ(c.open_now(Gauge::kDataConnections), 0u) << "gauges are separate";
  {
    GaugeSlot relay = c.open(Gauge::kRelays);
    EXPECT_EQ(c.open_now(Gauge::kRelays), 1u);
  }
  EXPECT_EQ(c.open_now(Gauge::kRelays), 0u);
}

// The test and the increment are one step: threads racing for the last places never take more
// than the limit (a load-then-increment let two through).
TEST(HostCounters, RacingThreadsNeverPassTheLimit) {
  HostCounters c;
  constexpr int kLimit = 3;
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        auto slot = c.try_open(Gauge::kDataConnections, kLimit);
        std::this_thread::yield();  // held a while, as a connection would
        const int now = static_cast<int>(c.open_now(Gauge::kDataConnections));
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), kLimit);
  EXPECT_EQ(c.open_now(Gauge::kDataConnections), 0u);
}

// The listener puts each connection on the network thread with the fewest; a connection that
// ends makes room on its own thread.
TEST(HostCounters, NewConnectionsGoToTheNetworkThreadWithTheFewest) {
  HostCounters c(3);
  ASSERT_EQ(c.network_threads(), 3u);
  std::vector<std::size_t> threads;
  std::vector<GaugeSlot> held;
  for (int i = 0; i < 4; ++i) {
    auto [thread, slot] = c.open_on_least_loaded_thread();
    threads.push_back(thread);
    held.push_back(std::move(slot));
  }
  EXPECT_EQ(threads, (std::vector<std::size_t>{0, 1, 2, 0}));
  held[1] = GaugeSlot();  // thread 1's connection ends
  EXPECT_EQ(c.open_on_thread(1), 0u);
  auto [next, slot] = c.open_on_least_loaded_thread();
  EXPECT_EQ(next, 1u);
  EXPECT_EQ(c.open_on_thread(0), 2u);
  EXPECT_EQ(c.open_on_thread(1), 1u);
  EXPECT_EQ(c.open_on_thread(2), 1u);
  EXPECT_EQ(HostCounters(0).network_threads(), 1u) << "at least one thread";
}

TEST(HostCounters, OpsCountPerLeaf) {
  HostCounters c;
  c.count_op(ir::OpKind::Float_Exp);
  c.count_op(ir::OpKind::Float_Exp);
  EXPECT_EQ(c.ops(ir::OpKind::Float_Exp), 2u);
  EXPECT_EQ(c.ops(ir::OpKind::NumericFloat_Add), 0u);
}

}  // namespace
}  // namespace tb::test
