// Quick answers (SessionWorker::try_run_inline): a small read or a sync of an idle CPU session is
// answered on the network thread, without waking the session's worker; anything queued or running
// before it keeps it on the worker, in order.
#include <functional>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/bridge_test_util.hpp"

namespace tb::test {
namespace {

std::uint64_t inline_tasks(TestHost& host) {
  return host.host().metrics().tasks_inline;
}

TEST(QuickAnswers, AnIdleSessionAnswersSmallReadsAndSyncsOnTheNetworkThread) {
  TestHost host{1};
  Session session{host.port(), 0};
  session.send({register_tensor(1, make_data({4}, DTypeKind::F32, {1, 2, 3, 4}))});
  ASSERT_TRUE(std::holds_alternative<std::monostate>(session.sync()));
  // Idle means the worker has also finished its bookkeeping after answering, and the network has
  // finished writing that answer: the client hears the answer a little before both (under
  // AddressSanitizer, milliseconds before), and a request arriving in that window rightly waits
  // for the worker. So each request is repeated until the session is idle for it, and must then
  // be answered on the network thread.
  const auto answered_inline = [&](const std::function<void()>& request) {
    return eventually([&] {
      const auto before = inline_tasks(host);
      request();
      return inline_tasks(host) > before;
    });
  };
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(answered_inline([&] {
      auto r = session.read(tir(1, {4}));
      ASSERT_TRUE(std::holds_alternative<TensorData>(r)) << std::get<ExecutionError>(r).reason;
      EXPECT_EQ(values_of(std::get<TensorData>(r)), (std::vector<double>{1, 2, 3, 4}));
    })) << "read "
        << i;
  }
  EXPECT_TRUE(answered_inline(
      [&] { EXPECT_TRUE(std::holds_alternative<std::monostate>(session.sync())); }));
  // An error recorded by an op is still reported once, by the next sync, even answered inline.
  session.send({register_op(make_op<OpKind::NumericFloat_Add>(
      BinaryOpIr{tir(1, {4}), tir(99, {4}), out(2, {4})}, DTypeKind::F32))});
  const auto failed = session.sync();
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(failed));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(session.sync()));
}

TEST(QuickAnswers, LargeReadsStayOnTheWorker) {
  TestHost host{1};
  Session session{host.port(), 0};
  const std::uint64_t n = 32 * 1024;  // 128 KiB of f32: over the inline bound
  session.send({ones(1, n)});
  ASSERT_TRUE(std::holds_alternative<std::monostate>(session.sync()));
  const auto before = inline_tasks(host);
  auto r = session.read(tir(1, {n}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(r));
  EXPECT_EQ(values_of(std::get<TensorData>(r)), std::vector<double>(n, 1.0));
  EXPECT_EQ(inline_tasks(host), before);
}

// The read arrives while the worker is still running the ops that make its tensor: answered
// inline it would find no tensor, or an old one.
TEST(QuickAnswers, AReadWaitsForTheWorkQueuedBeforeIt) {
  TestHost host{1};
  Session session{host.port(), 0};
  // 20 products of 1024 x 1024 (a few hundred ms of work): the read, sent right after them, finds
  // the worker busy even where the host is slow to take it in (a sanitizer build under load took
  // long enough to find 20 products of 512 x 512 done).
  const Dims square = {1024, 1024};
  std::vector<Task> work = {
      register_tensor(1, make_data(square, DTypeKind::F32, std::vector<double>(1024 * 1024, 1)))};
  for (std::uint64_t i = 0; i < 20; ++i) {
    work.push_back(register_op(make_op<OpKind::Float_Matmul>(
        MatmulOpIr{tir(1, square), tir(1, square), out(2 + i, square)}, DTypeKind::F32)));
  }
  // Each element of the last product is 1024; their sum is 2^30, exact in f32.
  work.push_back(register_op(make_op<OpKind::NumericFloat_Sum>(
      ReduceOpIr{tir(21, square), out(100, {1})}, DTypeKind::F32)));
  const auto before = inline_tasks(host);
  session.send(std::move(work));
  auto r = session.read(tir(100, {1}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(r)) << std::get<ExecutionError>(r).reason;
  EXPECT_EQ(values_of(std::get<TensorData>(r)), std::vector<double>{1073741824.0});
  EXPECT_EQ(inline_tasks(host), before) << "the worker was busy: the read had to wait for it";
}

}  // namespace
}  // namespace tb::test
