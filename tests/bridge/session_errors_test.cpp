// What a Burn client hears of failures over the wire, and the custom ops a plain host serves.
#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/bridge_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

Task failing_op(std::uint64_t in, std::uint64_t out_id) {
  return register_op(
      make_op<OpKind::Custom_Op>(CustomOpIr{"no.such.op", {tir(in, {2})}, {out(out_id, {2})}, {}}));
}

Task add(std::uint64_t lhs, std::uint64_t rhs, std::uint64_t out_id) {
  return register_op(make_op<OpKind::NumericFloat_Add>(
      BinaryOpIr{tir(lhs, {2}), tir(rhs, {2}), out(out_id, {2})}, DTypeKind::F32));
}

// Burn's host reports each failure once (burn-router's TensorInterpreter::sync takes the error it
// recorded); so do we: by the read that answers with it, or else by the next sync.
TEST(HostErrors, EachFailureIsReportedOnce) {
  TestHost host{1};
  Session session{host.port(), 0};
  session.send({register_tensor(1, make_data({2}, DTypeKind::F32, {1, 2})), failing_op(1, 2)});
  auto r = session.read(tir(2, {2}));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
  EXPECT_THAT(std::get<ExecutionError>(r).reason, HasSubstr("no.such.op"));
  // The program goes on using the poisoned tensor, syncing as it goes.
  session.send({add(2, 1, 3)});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(session.sync()));
  session.send({add(3, 1, 4)});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(session.sync()));
  // A failure no read has reported comes with the next sync, once.
  session.send({failing_op(1, 5)});
  auto s = session.sync();
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(s));
  EXPECT_THAT(std::get<ExecutionError>(s).reason, HasSubstr("no.such.op"));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(session.sync()));
}

// burn-signal's FFTs are served without any --model or registry.
TEST(HostSignalOps, APlainHostServesRfftAndIrfft) {
  TestHost host{1};
  Session session{host.port(), 0};
  const auto scalars = std::vector<ScalarIr>{ScalarIr::u(0), ScalarIr::b(false), ScalarIr::u(0)};
  session.send({register_tensor(1, make_data({4}, DTypeKind::F32, {1, 2, 3, 4})),
                register_op(make_op<OpKind::Custom_Op>(CustomOpIr{
                    "signal::rfft", {tir(1, {4})}, {out(2, {3}), out(3, {3})}, scalars})),
                register_op(make_op<OpKind::Custom_Op>(CustomOpIr{
                    "signal::irfft", {tir(2, {3}), tir(3, {3})}, {out(4, {4})}, scalars}))});
  auto re = session.read(tir(2, {3}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(re)) << std::get<ExecutionError>(re).reason;
  expect_near(values_of(std::get<TensorData>(re)), {10, -2, -2});
  auto im = session.read(tir(3, {3}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(im));
  expect_near(values_of(std::get<TensorData>(im)), {0, 2, 0});
  auto back = session.read(tir(4, {4}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(back));
  expect_near(values_of(std::get<TensorData>(back)), {1, 2, 3, 4});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(session.sync()));
}

}  // namespace
}  // namespace tb::test
