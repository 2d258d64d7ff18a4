// Load on a live host over loopback: many concurrent sessions, each running thousands of ops with
// every result read back and checked, and sessions opening and closing concurrently. Bounded in
// time (every client operation has a timeout) and in counts.
#include <atomic>
#include <thread>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/host_raw_client.hpp"

namespace tb::test {
namespace {

constexpr int kSessions = 32;
constexpr int kResultsPerFrame = 50;  // two ops and one read each
constexpr int kFrames = 30;           // 3000 ops per session

// One session's workload: out = (a + k) * 2 for k = 0..n, every out read (and so freed) and
// compared with the expected numbers. Returns the number of wrong or missing results.
int run_session(std::uint16_t port, int index, std::atomic<int>& ops_done) {
  Session s(port, 0);
  if (!s.open()) return kFrames * kResultsPerFrame;
  const std::vector<double> a = {1.0 * index, -2.0, 0.5, 1000.0 + index};
  s.send({register_tensor(1, make_data({4}, DTypeKind::F32, a))});
  int wrong = 0;
  std::uint64_t next_id = 2;
  for (int f = 0; f < kFrames; ++f) {
    std::vector<Task> tasks;
    std::vector<std::pair<RequestId, double>> expected;  // request id, k
    for (int i = 0; i < kResultsPerFrame; ++i) {
      const double k = f * kResultsPerFrame + i;
      const std::uint64_t t = next_id++, o = next_id++;
      tasks.push_back(register_op(make_op<OpKind::NumericFloat_AddScalar>(
          ScalarOpIr{tir(1, {4}), ScalarIr::f(k), out(t, {4})}, DTypeKind::F32)));
      tasks.push_back(register_op(make_op<OpKind::NumericFloat_MulScalar>(
          ScalarOpIr{tir(t, {4}, DTypeKind::F32, TensorStatus::ReadWrite), ScalarIr::f(2),
                     out(o, {4})},
          DTypeKind::F32)));
      const RequestId request = s.next_request();
      tasks.push_back(
          ReadTensorTask{request, stream(), tir(o, {4}, DTypeKind::F32, TensorStatus::ReadWrite)});
      expected.emplace_back(request, k);
    }
    s.send(std::move(tasks));
    for (const auto& [request, k] : expected) {
      auto r = s.receive(60s);
      if (!r) return wrong + kResultsPerFrame * (kFrames - f);
      const auto* read = std::get_if<ReadTensorResponse>(&r->content);
      if (r->id != request || !read || !std::holds_alternative<TensorData>(read->result)) {
        ++wrong;
        continue;
      }
      const auto got = values_of(std::get<TensorData>(read->result));
      std::vector<double> want;
      for (double x : a) want.push_back(static_cast<float>((static_cast<float>(x) + k) * 2));
      wrong += got != want;
    }
    ops_done += 2 * kResultsPerFrame;
  }
  s.send({register_op(
      make_op<OpKind::Drop_Op>(tir(1, {4}, DTypeKind::F32, TensorStatus::ReadWrite)))});
  if (!std::holds_alternative<std::monostate>(s.sync(60s))) ++wrong;
  return wrong;
}

TEST(HostLoad, ThirtyTwoConcurrentSessionsRunThousandsOfOpsEachWithEveryResultChecked) {
  TestHost host(1);
  const auto before = host.host().metrics();
  std::atomic<int> wrong{0}, ops_done{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] { wrong += run_session(host.port(), i, ops_done); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(ops_done.load(), kSessions * kFrames * kResultsPerFrame * 2);
  const auto after = host.host().metrics();
  // Each session: 1 registration, 2 ops + 1 read per result, the drop, the sync.
  EXPECT_EQ(after.tasks - before.tasks,
            static_cast<std::uint64_t>(kSessions) * (3 + 3 * kFrames * kResultsPerFrame));
  EXPECT_EQ(after.failed_ops, 0u);
  EXPECT_TRUE(eventually([&] {
    const auto m = host.host().metrics();
    return m.sessions_open == 0 && m.live_tensors == 0;
  }));
}

TEST(HostLoad, SessionsOpeningAndClosingConcurrentlyAllWork) {
  TestHost host(2);
  constexpr int kThreads = 8, kEach = 25;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Session s(host.port(), static_cast<std::uint32_t>((t + i) % 2));
        if (!s.open()) {
          ++wrong;
          continue;
        }
        const double v = t * 100 + i;
        s.send({register_tensor(1, make_data({1}, DTypeKind::F32, {v}))});
        auto r = s.read(tir(1, {1}, DTypeKind::F32, TensorStatus::ReadWrite));
        wrong += !std::holds_alternative<TensorData>(r) ||
                 values_of(std::get<TensorData>(r)) != std::vector<double>{v};
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_TRUE(eventually([&] {
    const auto m = host.host().metrics();
    return m.sessions_open == 0 && m.live_tensors == 0;
  }));
  EXPECT_GE(host.host().metrics().sessions_total, static_cast<std::uint64_t>(kThreads * kEach));
}

}  // namespace
}  // namespace tb::test
