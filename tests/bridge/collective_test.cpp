#include "cluster/collective.hpp"

#include <atomic>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "bridge/bridge_test_util.hpp"
#include "session/task_runner.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::bridge {
namespace {

using namespace tb::ir;

TensorIr t(std::uint64_t id, TensorStatus status = TensorStatus::ReadOnly) {
  return TensorIr{TensorId{id}, Shape{{3}}, status, DTypeKind::F32};
}

TensorData f32(std::vector<float> v) {
  return TensorData{Bytes::copy_of(v.data(), v.size() * 4), {v.size()}, DTypeKind::F32};
}

std::vector<float> read(backend::Executor& e, std::uint64_t id) {
  auto data = e.read_tensor(t(id));
  EXPECT_TRUE(data) << (data ? "" : data.error().what());
  if (!data) return {};
  std::vector<float> out(3);
  std::memcpy(out.data(), data.value().bytes.data(), 12);
  return out;
}

// Three sessions on three devices of one host all-reduce their tensors, as Burn's client does
// (one AllReduce op per device, the device ids being positions on the host).
TEST(Collective, ThreeDevicesAllReduceToIdenticalSumsAndMeans) {
  auto backend = std::move(backend::libtorch::make_backend({"cpu", nullptr})).value();
  CollectiveHub hub;
  SessionServices services;
  services.collectives = &hub;
  services.device_count = 3;
  services.transfer_timeout = std::chrono::milliseconds(10000);
  std::vector<std::unique_ptr<TaskRunner>> runners;
  for (std::uint32_t d = 0; d < 3; ++d) {
    runners.push_back(std::make_unique<TaskRunner>(d + 1, d, backend->new_executor(), services,
                                                   [](TaskResponse) {}));
    ASSERT_TRUE(runners[d]->executor().register_tensor(
        TensorId{1}, f32({1.0f * (d + 1), 10.0f * (d + 1), -1.0f})));
  }
  const std::vector<DeviceIdIr> devices = {{0, 2}, {0, 0}, {0, 1}};
  for (auto op : {ReduceOperation::Sum, ReduceOperation::Mean}) {
    const std::uint64_t out = op == ReduceOperation::Sum ? 2 : 3;
    std::vector<std::thread> threads;
    for (auto& r : runners) {
      threads.emplace_back([&, op, out] {
        Task task = RegisterOperationTask{
            StreamId{0}, make_op<OpKind::Distributed_AllReduce>(
                             AllReduceOpIr{t(1), t(out, TensorStatus::NotInit), op, devices})};
        r->run(task);
      });
    }
    for (auto& th : threads) th.join();
    const std::vector<float> expected =
        op == ReduceOperation::Sum ? std::vector<float>{6, 60, -3} : std::vector<float>{2, 20, -1};
    for (auto& r : runners) EXPECT_EQ(read(r->executor(), out), expected);
  }
  for (auto& r : runners) EXPECT_TRUE(r->executor().sync());
}

TEST(Collective, AMissingParticipantTimesOutWithAClearError) {
  auto backend = std::move(backend::libtorch::make_backend({"cpu", nullptr})).value();
  CollectiveHub hub;
  SessionServices services;
  services.collectives = &hub;
  services.device_count = 6;
  services.transfer_timeout = std::chrono::milliseconds(200);
  TaskRunner runner(1, 0, backend->new_executor(), services, [](TaskResponse) {});
  ASSERT_TRUE(runner.executor().register_tensor(TensorId{1}, f32({1, 2, 3})));
  Task task = RegisterOperationTask{
      StreamId{0}, make_op<OpKind::Distributed_AllReduce>(AllReduceOpIr{
                       t(1), t(2, TensorStatus::NotInit), ReduceOperation::Sum, {{0, 0}, {0, 1}}})};
  runner.run(task);
  auto r = runner.executor().read_tensor(t(2));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("all_reduce over devices [0, 1]: device 0 waited 200 ms"),
            std::string::npos)
      << r.error().what();
  Task other = RegisterOperationTask{
      StreamId{0}, make_op<OpKind::Distributed_AllReduce>(AllReduceOpIr{
                       t(1), t(3, TensorStatus::NotInit), ReduceOperation::Sum, {{0, 5}}})};
  runner.run(other);
  auto r2 = runner.executor().read_tensor(t(3));
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().what().find("device 0 is not among the devices [5]"), std::string::npos);
}

// ---- Protocol 6: Task::AllReduceLocal
// ------------------------------------------------------------

struct LocalMembers {
  std::unique_ptr<backend::Backend> backend =
      std::move(backend::libtorch::make_backend({"cpu", nullptr})).value();
  CollectiveHub hub;
  std::vector<std::unique_ptr<TaskRunner>> runners;
  // Members that asked whether the other members' sessions are open. The hub asks under its lock
  // right before it waits, and releases the lock only as it waits: once this counts a member,
  // whatever takes the hub's lock next (session_ended) finds that member waiting.
  std::atomic<int> joining{0};

  LocalMembers(std::uint32_t n, std::chrono::milliseconds timeout, std::uint32_t devices = 3) {
    SessionServices services;
    services.collectives = &hub;
    services.device_count = devices;
    services.protocol = 6;
    services.session_open = [this](std::uint64_t) {
      ++joining;
      return true;
    };
    services.transfer_timeout = timeout;
    for (std::uint32_t m = 0; m < n; ++m) {
      runners.push_back(std::make_unique<TaskRunner>(100 + m, m % devices, backend->new_executor(),
                                                     services, [](TaskResponse) {}));
      EXPECT_TRUE(runners[m]->executor().register_tensor(
          TensorId{1}, f32({1.0f * (m + 1), 10.0f * (m + 1), -1.0f})));
    }
  }

  static Task part(std::uint64_t collective, std::uint32_t member, std::uint32_t members,
                   ReduceOperation op, std::uint64_t out = 2, std::uint64_t input = 1) {
    std::vector<SessionId> sessions;
    for (std::uint32_t m = 0; m < members; ++m) sessions.push_back(SessionId{100 + m});
    return AllReduceLocalTask{
        StreamId{0}, LocalAllReducePart{t(input), TensorId{out}, collective, member, sessions, op}};
  }

  // Runs one task per runner at once.
  void run_all(std::vector<Task> tasks) {
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < tasks.size(); ++i)
      threads.emplace_back([&, i] { runners[i]->run(tasks[i]); });
    for (auto& th : threads) th.join();
  }
};

std::string error_of(backend::Executor& e, std::uint64_t id) {
  auto r = e.read_tensor(t(id));
  return r ? std::string("(no error)") : r.error().what();
}

TEST(CollectiveLocal, ThreeMembersGetIdenticalSumsAndMeans) {
  LocalMembers m(3, std::chrono::milliseconds(10000));
  const std::uint64_t id = 0xdeadbeefcafef00dULL;
  m.run_all({LocalMembers::part(id, 2, 3, ReduceOperation::Sum),
             LocalMembers::part(id, 0, 3, ReduceOperation::Sum),
             LocalMembers::part(id, 1, 3, ReduceOperation::Sum)});
  for (auto& r : m.runners) EXPECT_EQ(read(r->executor(), 2), (std::vector<float>{6, 60, -3}));
  m.run_all({LocalMembers::part(id + 1, 0, 3, ReduceOperation::Mean, 3),
             LocalMembers::part(id + 1, 1, 3, ReduceOperation::Mean, 3),
             LocalMembers::part(id + 1, 2, 3, ReduceOperation::Mean, 3)});
  // Burn 0.23 divides each part first: 1/3 + 2/3 + 3/3 in f32, the same bits on every member.
  const float mean0 = 1.0f / 3 + 2.0f / 3 + 3.0f / 3;
  for (auto& r : m.runners) EXPECT_EQ(read(r->executor(), 3)[0], mean0);
  // The rounds are forgotten once every member took its result.
  auto again = m.hub.join_local(
      100, id, 0, {1}, Result<CollectiveHub::Contribution>(nullptr),
      [](std::uint64_t) { return true; }, std::chrono::milliseconds(1));
  EXPECT_TRUE(again);
}

// Each failure lands on every member waiting, at once, not at the timeout.
TEST(CollectiveLocal, AFailureReachesEveryMemberAtOnce) {
  const auto timeout = std::chrono::milliseconds(20000);
  struct Case {
    const char* what;
    std::function<std::vector<Task>()> parts;
    std::uint32_t members;
    std::uint32_t devices;
  };
  const std::uint64_t id = 1ULL << 63;
  const std::vector<Case> cases = {
      {"arrived twice",
       [&] {
         return std::vector<Task>{LocalMembers::part(id, 0, 2, ReduceOperation::Sum),
                                  LocalMembers::part(id, 0, 2, ReduceOperation::Sum)};
       },
       2, 3},
      {"disagree on the members' sessions",
       [&] {
         return std::vector<Task>{LocalMembers::part(id, 0, 2, ReduceOperation::Sum),
                                  LocalMembers::part(id, 1, 3, ReduceOperation::Sum)};
       },
       3, 3},
      {"member 1's input failed",
       [&] {
         return std::vector<Task>{LocalMembers::part(id, 0, 2, ReduceOperation::Sum),
                                  LocalMembers::part(id, 1, 2, ReduceOperation::Sum, 2, 9)};
       },
       2, 3},
      {"an all-reduce over 3 members, and this host serves 2 device(s)",
       [&] {
         return std::vector<Task>{LocalMembers::part(id, 0, 3, ReduceOperation::Sum),
                                  LocalMembers::part(id, 1, 3, ReduceOperation::Sum)};
       },
       2, 2},
  };
  for (const auto& c : cases) {
    LocalMembers m(c.members, timeout, c.devices);
    const auto start = std::chrono::steady_clock::now();
    auto parts = c.parts();
    parts.resize(std::min(parts.size(), m.runners.size()));
    m.run_all(parts);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << c.what;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      EXPECT_NE(error_of(m.runners[i]->executor(), 2).find(c.what), std::string::npos)
          << c.what << ": " << error_of(m.runners[i]->executor(), 2);
    }
  }
}

TEST(CollectiveLocal, AMembersSessionEndingFailsTheOthers) {
  LocalMembers m(2, std::chrono::milliseconds(20000));
  std::thread waiting([&] {
    Task p = LocalMembers::part(7, 0, 2, ReduceOperation::Sum);
    m.runners[0]->run(p);
  });
  EXPECT_TRUE(tb::test::eventually([&] { return m.joining > 0; })) << "member 0 never joined";
  const auto start = std::chrono::steady_clock::now();
  m.hub.session_ended(101);  // member 1's session, before it sent its part
  waiting.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(error_of(m.runners[0]->executor(), 2)
                .find("the session 0000000000000065 of a member "
                      "ended"),
            std::string::npos)
      << error_of(m.runners[0]->executor(), 2);
  // A member arriving later hears the same failure at once.
  Task late = LocalMembers::part(7, 1, 2, ReduceOperation::Sum);
  m.runners[1]->run(late);
  EXPECT_NE(error_of(m.runners[1]->executor(), 2).find("ended"), std::string::npos);
}

// Issue 39, finding 5: members bringing [2,3] and [1,3] (one got a result, the other an error), or
// f32 and f64 (both got Ok with different values). Now both hear the same error.
TEST(CollectiveLocal, MembersThatDisagreeOnShapeOrDtypeFailAlike) {
  struct Case {
    const char* what;
    TensorIr second;
    TensorData data;
  };
  const std::vector<Case> cases = {
      {"brings float32 [2, 3] and member 0 float32 [3]",
       TensorIr{TensorId{5}, Shape{{2, 3}}, TensorStatus::ReadOnly, DTypeKind::F32},
       TensorData{Bytes::copy_of(std::vector<float>(6, 1.0f).data(), 24), {2, 3}, DTypeKind::F32}},
      {"brings float64 [3] and member 0 float32 [3]",
       TensorIr{TensorId{5}, Shape{{3}}, TensorStatus::ReadOnly, DTypeKind::F64},
       TensorData{Bytes::copy_of(std::vector<double>(3, 1.0).data(), 24), {3}, DTypeKind::F64}},
  };
  std::uint64_t id = 0x5eed;
  for (const auto& c : cases) {
    LocalMembers m(2, std::chrono::milliseconds(20000));
    ASSERT_TRUE(m.runners[1]->executor().register_tensor(TensorId{5}, c.data));
    Task other =
        AllReduceLocalTask{StreamId{0}, LocalAllReducePart{c.second,
                                                           TensorId{2},
                                                           ++id,
                                                           1,
                                                           {SessionId{100}, SessionId{101}},
                                                           ReduceOperation::Sum}};
    const auto start = std::chrono::steady_clock::now();
    m.run_all({LocalMembers::part(id, 0, 2, ReduceOperation::Sum), other});
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    for (auto& r : m.runners) {
      const std::string e = error_of(r->executor(), 2);
      EXPECT_NE(e.find("every member of an all-reduce must bring the same shape and dtype"),
                std::string::npos)
          << c.what << ": " << e;
    }
  }
}

// Issue 39, finding 4: one session's parts that fail at once (4,200 of them) filled the host's
// table of rounds, and every other session's collectives failed for the transfer timeout. A
// session's failed rounds now count against its own bound; others start theirs as before.
TEST(CollectiveLocal, OneSessionsFailingRoundsDoNotBlockTheOthers) {
  LocalMembers m(3, std::chrono::milliseconds(20000));
  for (std::uint64_t i = 0; i < CollectiveHub::kMaxLocalRounds + 100; ++i) {
    // Member 0 of a round whose other member is session 101, its input failing at once.
    auto r = m.hub.join_local(
        100, 0x1000 + i, 0, {100, 101},
        Result<CollectiveHub::Contribution>(make_error(ErrorCode::kExecution, "bad input")),
        [](std::uint64_t) { return true; }, std::chrono::milliseconds(20000));
    ASSERT_FALSE(r);
    ASSERT_NE(r.error().what().find("input failed"), std::string::npos) << r.error().what();
  }
  // Sessions 101 and 102 all-reduce as if nothing happened.
  const std::uint64_t id = 0xabc;
  std::vector<SessionId> sessions{SessionId{101}, SessionId{102}};
  std::vector<Task> parts;
  for (std::uint32_t k = 0; k < 2; ++k) {
    parts.push_back(AllReduceLocalTask{
        StreamId{0}, LocalAllReducePart{t(1), TensorId{2}, id, k, sessions, ReduceOperation::Sum}});
  }
  std::thread a([&] { m.runners[1]->run(parts[0]); });
  std::thread b([&] { m.runners[2]->run(parts[1]); });
  a.join();
  b.join();
  EXPECT_EQ(read(m.runners[1]->executor(), 2), (std::vector<float>{5, 50, -2}));
  EXPECT_EQ(read(m.runners[2]->executor(), 2), (std::vector<float>{5, 50, -2}));
  // The latest failed rounds of session 100 are still there for their late members.
  auto late = m.hub.join_local(
      101, 0x1000 + CollectiveHub::kMaxLocalRounds + 99, 1, {100, 101},
      Result<CollectiveHub::Contribution>(nullptr), [](std::uint64_t) { return true; },
      std::chrono::milliseconds(1000));
  ASSERT_FALSE(late);
  EXPECT_NE(late.error().what().find("member 0's input failed"), std::string::npos)
      << late.error().what();
}

TEST(CollectiveLocal, AMissingMemberTimesOut) {
  LocalMembers m(1, std::chrono::milliseconds(200));
  Task p = LocalMembers::part(9, 0, 2, ReduceOperation::Mean);
  m.runners[0]->run(p);
  EXPECT_NE(error_of(m.runners[0]->executor(), 2).find("member 0 waited 200 ms"), std::string::npos)
      << error_of(m.runners[0]->executor(), 2);
}

}  // namespace
}  // namespace tb::bridge
