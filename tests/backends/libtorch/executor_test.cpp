#include "exec/executor.hpp"

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "torchbridge/ir/exclusive_block.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

class Executor : public OpTest {};

TEST_F(Executor, EveryDTypeRoundTripsExactlyThroughRegisterAndRead) {
  const std::vector<std::pair<DType, std::vector<double>>> cases = {
      {DTypeKind::F64, {1.5, -2.25, 1e300}},
      {DTypeKind::F32, {1.5, -2.25, 3e38}},
      {DTypeKind::Flex32, {0.5, -1, 7}},
      {DTypeKind::F16, {0.5, -1, 65504}},
      {DTypeKind::BF16, {0.5, -1, 3.0e38}},
      {DTypeKind::I64, {-9007199254740992.0, 0, 9007199254740992.0}},
      {DTypeKind::I32, {-2147483648.0, 0, 2147483647}},
      {DTypeKind::I16, {-32768, 0, 32767}},
      {DTypeKind::I8, {-128, 0, 127}},
      {DTypeKind::U64, {0, 1, 18446744073709549568.0}},
      {DTypeKind::U32, {0, 1, 4294967295.0}},
      {DTypeKind::U16, {0, 1, 65535}},
      {DTypeKind::U8, {0, 1, 255}},
      {DType::boolean(BoolStore::Native), {1, 0, 1}},
      {DType::boolean(BoolStore::U8), {0, 1, 1}},
      {DType::boolean(BoolStore::U32), {1, 1, 0}},
  };
  std::uint64_t id = 1;
  for (const auto& [dtype, values] : cases) {
    const auto t = tir(id++, {3}, dtype);
    const auto data = make_data({3}, dtype, values);
    ASSERT_TRUE(exec->register_tensor(t.id, data)) << dtype.name();
    auto back = exec->read_tensor(t);
    ASSERT_TRUE(back) << dtype.name() << ": " << back.error().what();
    EXPECT_EQ(back.value(), data) << dtype.name();
  }
}

TEST_F(Executor, EmptyAndRankZeroTensors) {
  const auto empty = tir(1, {0, 3});
  put(empty, {});
  EXPECT_TRUE(get(empty).empty());
  const auto scalar = tir(2, {}, DTypeKind::I64);
  put(scalar, {42});
  EXPECT_EQ(get(scalar), std::vector<double>{42});
}

TEST_F(Executor, ReadWriteReadConsumesTheHandle) {
  const auto t = tir(1, {2});
  put(t, {1, 2});
  EXPECT_EQ(get(rw(t)), (std::vector<double>{1, 2}));
  auto again = exec->read_tensor(t);
  ASSERT_FALSE(again);
  EXPECT_THAT(again.error().what(), HasSubstr("tensor #1 is unknown"));
  EXPECT_EQ(exec->stats().live_tensors, 0u);
}

TEST_F(Executor, ReadingInAnotherShapeIsAnError) {
  const auto t = tir(1, {2, 2});
  put(t, {1, 2, 3, 4});
  auto r = exec->read_tensor(tir(1, {4}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("has shape [2, 2], read as [4]"));
}

TEST_F(Executor, RegisteringDataOfTheWrongLengthPoisonsTheId) {
  TensorData bad{Bytes::copy_of("abc", 3), {2}, DTypeKind::F32};
  EXPECT_FALSE(exec->register_tensor(TensorId{7}, bad));
  auto s = exec->sync();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(), HasSubstr("RegisterTensor #7"));
  EXPECT_TRUE(exec->sync()) << "sync reports each error once";
  // The id stays poisoned: a read still fails, and names the cause.
  auto r = exec->read_tensor(tir(7, {2}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("needs 8 bytes, got 3"));
  EXPECT_TRUE(exec->sync());
}

// Burn's host reports each failure once (burn-router's TensorInterpreter::sync takes its recorded
// error): a failure a read has answered with is not reported again by the next sync.
TEST_F(Executor, AFailureReportedByAReadIsNotReportedAgainBySync) {
  const auto a = tir(1, {2});
  put(a, {1, 2});
  run_error(make_op<OpKind::Custom_Op>(CustomOpIr{"nope", {a}, {out(2, {2})}, {}}));
  auto r = exec->read_tensor(tir(2, {2}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("no custom op \"nope\""));
  EXPECT_TRUE(exec->sync()) << "the read has reported the failure already";
  // Reading it again still fails (the tensor has no value), and still reports nothing new.
  ASSERT_FALSE(exec->read_tensor(tir(2, {2})));
  EXPECT_TRUE(exec->sync());
}

TEST_F(Executor, SyncReportsOnlyTheFailuresNoReadReported) {
  for (std::uint64_t i = 0; i < 3; ++i) {
    run_error(make_op<OpKind::Custom_Op>(
        CustomOpIr{"op" + std::to_string(i), {}, {out(10 + i, {1})}, {}}));
  }
  ASSERT_FALSE(exec->read_tensor(tir(10, {1})));
  auto s = exec->sync();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(),
              HasSubstr("2 operations failed since the last sync; the first: Custom: no custom op "
                        "\"op1\""));
  // A failure from before the sync, read now, was reported by that sync.
  ASSERT_FALSE(exec->read_tensor(tir(12, {1})));
  EXPECT_TRUE(exec->sync());
}

TEST_F(Executor, OpsOnAPoisonedTensorPassTheFailureOnWithoutReportingItAgain) {
  const auto a = tir(1, {2});
  put(a, {1, 2});
  run_error(make_op<OpKind::Custom_Op>(CustomOpIr{"nope", {a}, {out(2, {2})}, {}}));
  auto s = exec->sync();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(), HasSubstr("no custom op \"nope\""));
  // A training loop keeps using the poisoned tensor: every later sync is clean, and reading a
  // derived tensor still names the original cause.
  std::uint64_t last = 2;
  for (std::uint64_t step = 0; step < 3; ++step) {
    const std::uint64_t next = 3 + step;
    run_error(make_op<OpKind::NumericFloat_Add>(BinaryOpIr{tir(last, {2}), a, out(next, {2})},
                                                DTypeKind::F32));
    EXPECT_TRUE(exec->sync()) << "step " << step;
    last = next;
  }
  auto r = exec->read_tensor(tir(last, {2}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("tensor #5 holds no value because an earlier operation "
                                          "failed: Custom: no custom op \"nope\""));
  EXPECT_TRUE(exec->sync());
  // A failure on a derived tensor before any sync is still reported once.
  run_error(make_op<OpKind::Custom_Op>(CustomOpIr{"nope", {a}, {out(10, {2})}, {}}));
  run_error(
      make_op<OpKind::NumericFloat_Add>(BinaryOpIr{tir(10, {2}), a, out(11, {2})}, DTypeKind::F32));
  s = exec->sync();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().what().find("operations failed"), std::string::npos) << s.error().what();
  EXPECT_TRUE(exec->sync());
}

TEST_F(Executor, AliasSharesTheTensor) {
  const auto t = tir(1, {2});
  put(t, {3, 4});
  ASSERT_TRUE(exec->register_alias(TensorId{2}, TensorId{1}));
  EXPECT_EQ(get(rw(t)), (std::vector<double>{3, 4}));
  EXPECT_EQ(get(tir(2, {2})), (std::vector<double>{3, 4}));
  EXPECT_FALSE(exec->register_alias(TensorId{3}, TensorId{99}));
}

TEST_F(Executor, AnUnloweredLeafIsAClearErrorNamingTheOp) {
  // An op whose input is unknown fails, poisons its output, and leaves the session usable.
  const auto a = tir(1, {2});
  auto op = make_op<OpKind::Custom_Op>(CustomOpIr{"nope", {tir(99, {2})}, {out(2, {2})}, {}});
  EXPECT_THAT(run_error(op), HasSubstr("Custom: tensor #99 is unknown"));
  auto r = exec->read_tensor(tir(2, {2}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("tensor #2 holds no value because an earlier operation "
                                          "failed: Custom: tensor #99 is unknown"));
  put(a, {1, 2});
  EXPECT_EQ(get(a), (std::vector<double>{1, 2}));
  EXPECT_TRUE(exec->sync()) << "the read reported the failure";
}

TEST_F(Executor, SyncSummarisesManyFailures) {
  for (std::uint64_t i = 0; i < 20; ++i) {
    run_error(make_op<OpKind::Custom_Op>(CustomOpIr{"nope", {}, {out(100 + i, {1})}, {}}));
  }
  auto s = exec->sync();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(), HasSubstr("20 operations failed since the last sync; the first: "
                                          "Custom: no custom op \"nope\" is registered"));
}

TEST_F(Executor, DTypeUsageCoversEveryPlainDType) {
  for (std::size_t k = 0; k < EnumNames<DTypeKind>::kNames.size(); ++k) {
    DType d(static_cast<DTypeKind>(k));
    if (d.is_quantized()) continue;
    EXPECT_EQ(exec->dtype_usage(d).bits & (kUsageStorage | kUsageArithmetic),
              kUsageStorage | kUsageArithmetic)
        << d.name();
  }
}

TEST_F(Executor, ProfilingWindowsMeasureWallTime) {
  auto token = exec->profile_start();
  ASSERT_TRUE(token && token.value());
  auto d = exec->profile_end(*token.value(), ProfileOptions{true});
  ASSERT_TRUE(d && d.value());
  EXPECT_LT(d.value()->secs, 5u);
  EXPECT_FALSE(exec->profile_end(*token.value(), ProfileOptions{}));
}

TEST_F(Executor, SameHostTransferMovesTheTensor) {
  const auto t = tir(1, {2}, DTypeKind::U32);
  put(t, {7, 4294967295.0});
  auto moved = exec->take_for_transfer(rw(t));
  ASSERT_TRUE(moved);
  EXPECT_EQ(exec->stats().live_tensors, 0u);
  auto other = backend_->new_executor();
  ASSERT_TRUE(other->register_transferred(TensorId{5}, *moved.value()));
  auto data = other->read_tensor(tir(5, {2}, DTypeKind::U32));
  ASSERT_TRUE(data);
  EXPECT_EQ(values_of(data.value()), (std::vector<double>{7, 4294967295.0}));
}

// ---- The misc leaves: Init, Drop, Custom -------------------------------------------------------

TEST_F(Executor, SeedMakesRandomReproducible) {
  std::uint64_t next_id = 1;
  const auto draw = [&] {
    const auto o = out(next_id++, {64});
    run(make_op<OpKind::Float_Random>(RandomOpIr{o, {DistributionKind::Default, 0, 0}},
                                      DTypeKind::F32));
    return get(o);
  };
  exec->seed(7);
  const auto first = draw();
  const auto second = draw();
  EXPECT_NE(first, second);  // the generator moves on between draws
  exec->seed(7);
  EXPECT_EQ(draw(), first);
  EXPECT_EQ(draw(), second);
  exec->seed(8);
  EXPECT_NE(draw(), first);
}

class Init_Op : public OpTest {};
TEST_F(Init_Op, IsANoOpAfterRegister) {
  const auto t = tir(1, {2});
  put(t, {1, 2});
  run(make_op<OpKind::Init_Op>(InitOperationIr{t}));
  EXPECT_EQ(get(t), (std::vector<double>{1, 2}));
}

class Drop_Op : public OpTest {};
TEST_F(Drop_Op, FreesTheHandleAndToleratesUnknownIds) {
  const auto t = tir(1, {2});
  put(t, {1, 2});
  run(make_op<OpKind::Drop_Op>(rw(t)));
  EXPECT_EQ(exec->stats().live_tensors, 0u);
  run(make_op<OpKind::Drop_Op>(rw(t)));
}

class Custom_Op : public OpTest {
 protected:
  Custom_Op() {
    registry->add(
        "scale",
        [](const backend::libtorch::CustomOpCall& call) -> Result<std::vector<at::Tensor>> {
          const double factor = call.op.scalars.at(0).as_double();
          return std::vector<at::Tensor>{call.inputs.at(0) * factor, call.inputs.at(1) + 1};
        });
  }
};

TEST_F(Custom_Op, DispatchesToTheRegistry) {
  const auto a = tir(1, {2});
  const auto b = tir(2, {1}, DTypeKind::I64);
  put(a, {1, 2});
  put(b, {5});
  run(make_op<OpKind::Custom_Op>(CustomOpIr{
      "scale", {a, rw(b)}, {out(3, {2}), out(4, {1}, DTypeKind::I64)}, {ScalarIr::f(2.5)}}));
  EXPECT_EQ(get(tir(3, {2})), (std::vector<double>{2.5, 5}));
  EXPECT_EQ(get(tir(4, {1}, DTypeKind::I64)), (std::vector<double>{6}));
  EXPECT_EQ(exec->stats().live_tensors, 3u) << "the ReadWrite input was freed";
}

TEST_F(Custom_Op, MismatchesAreClearErrors) {
  const auto a = tir(1, {2});
  const auto b = tir(2, {1}, DTypeKind::I64);
  put(a, {1, 2});
  put(b, {5});
  EXPECT_THAT(run_error(make_op<OpKind::Custom_Op>(CustomOpIr{
                  "scale", {a, b}, {out(3, {3}), out(4, {1}, DTypeKind::I64)}, {ScalarIr::f(1)}})),
              HasSubstr("custom op \"scale\" output 0 has shape [2], the op declares [3]"));
  EXPECT_THAT(run_error(make_op<OpKind::Custom_Op>(CustomOpIr{
                  "scale", {a, b}, {out(3, {2}), out(4, {1}, DTypeKind::I32)}, {ScalarIr::f(1)}})),
              HasSubstr("output 1 has dtype Long, the op declares i32"));
  EXPECT_THAT(run_error(make_op<OpKind::Custom_Op>(
                  CustomOpIr{"scale", {a, b}, {out(3, {2})}, {ScalarIr::f(1)}})),
              HasSubstr("returned 2 output(s), the op declares 1"));
  EXPECT_THAT(run_error(make_op<OpKind::Custom_Op>(CustomOpIr{"missing", {a}, {out(3, {2})}, {}})),
              HasSubstr("no custom op \"missing\" is registered on this host"));
  // An exception inside the handler (here: scalars.at(0) on an empty list) is caught too, and the
  // error names the op.
  EXPECT_THAT(run_error(make_op<OpKind::Custom_Op>(
                  CustomOpIr{"scale", {a, b}, {out(3, {2}), out(4, {1}, DTypeKind::I64)}, {}})),
              HasSubstr("custom op \"scale\": vector::_M_range_check"));
}

TEST_F(Custom_Op, HandlerFailuresPoisonTheOutputsAndSurfaceOnSync) {
  registry->add(
      "throws_int",
      [](const backend::libtorch::CustomOpCall&) -> Result<std::vector<at::Tensor>> { throw 42; });
  registry->add("fails",
                [](const backend::libtorch::CustomOpCall&) -> Result<std::vector<at::Tensor>> {
                  return make_error(ErrorCode::kInvalidArgument, "wants {} inputs", 3);
                });
  const auto a = tir(1, {2});
  put(a, {1, 2});
  EXPECT_THAT(
      run_error(make_op<OpKind::Custom_Op>(CustomOpIr{"throws_int", {a}, {out(2, {2})}, {}})),
      HasSubstr("custom op \"throws_int\": an unknown exception"));
  auto r = exec->read_tensor(tir(2, {2}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("custom op \"throws_int\""));
  EXPECT_THAT(run_error(make_op<OpKind::Custom_Op>(CustomOpIr{"fails", {a}, {out(3, {2})}, {}})),
              HasSubstr("custom op \"fails\": wants 3 inputs"));
  // The read has reported the first failure; the sync reports the second alone.
  auto s = exec->sync();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(), HasSubstr("custom op \"fails\": wants 3 inputs"));
  EXPECT_EQ(s.error().what().find("operations failed"), std::string::npos) << s.error().what();
  // The session keeps working.
  EXPECT_EQ(get(a), (std::vector<double>{1, 2}));
  EXPECT_TRUE(exec->sync());
}

TEST_F(Custom_Op, HandlersReceiveEveryScalarKind) {
  std::vector<ScalarIr> seen;
  registry->add(
      "record",
      [&seen](const backend::libtorch::CustomOpCall& call) -> Result<std::vector<at::Tensor>> {
        seen = call.op.scalars;
        return std::vector<at::Tensor>{call.inputs.at(0)};
      });
  const auto a = tir(1, {2});
  put(a, {1, 2});
  const std::vector<ScalarIr> scalars = {ScalarIr::f(0.5), ScalarIr::i(-3),
                                         ScalarIr::u(18446744073709551615ull), ScalarIr::b(true)};
  run(make_op<OpKind::Custom_Op>(CustomOpIr{"record", {a}, {out(2, {2})}, scalars}));
  EXPECT_EQ(seen, scalars);
  EXPECT_EQ(get(tir(2, {2})), (std::vector<double>{1, 2}));
}

}  // namespace
}  // namespace tb::test

namespace tb::test {
namespace {

// The collectives run in the host (bridge/src/cluster/collective.cpp,
// tests/bridge/collective_test.cpp); a lone executor refuses AllReduce clearly and treats
// SyncCollective as done.
class Distributed_AllReduce : public OpTest {};
TEST_F(Distributed_AllReduce, ALoneExecutorRefusesWithAClearError) {
  const auto a = tir(1, {2});
  put(a, {1, 2});
  const auto msg = run_error(make_op<OpKind::Distributed_AllReduce>(
      AllReduceOpIr{a, out(2, {2}), ReduceOperation::Sum, {DeviceIdIr{0, 0}, DeviceIdIr{0, 1}}}));
  EXPECT_NE(msg.find("Distributed.AllReduce: all_reduce is coordinated by the host"),
            std::string::npos)
      << msg;
}

class Distributed_SyncCollective : public OpTest {};
TEST_F(Distributed_SyncCollective, IsANoOp) {
  run(make_op<OpKind::Distributed_SyncCollective>(UnitPayload{}));
  EXPECT_TRUE(exec->sync());
}

}  // namespace
}  // namespace tb::test

namespace tb::test {
namespace {

// The host checks a session's bytes after every op: they are a running count, which must follow
// every way a handle comes and goes.
TEST_F(Executor, LiveBytesFollowRegistersAliasesOpsConsumedInputsAndDrops) {
  const auto bytes = [&] { return exec->stats().live_bytes; };
  ASSERT_TRUE(exec->register_tensor(TensorId{1}, make_data({4}, DTypeKind::F32, {1, 2, 3, 4})));
  EXPECT_EQ(bytes(), 16u);
  ASSERT_TRUE(exec->register_alias(TensorId{2}, TensorId{1}));
  EXPECT_EQ(bytes(), 32u);
  ASSERT_TRUE(exec->execute(make_op<OpKind::NumericFloat_AddScalar>(
      ScalarOpIr{tir(2, {4}, DTypeKind::F32, TensorStatus::ReadWrite), ScalarIr::f(1),
                 out(3, {4}, DTypeKind::F64)},
      DTypeKind::F64)));
  EXPECT_EQ(bytes(), 16u + 32u) << "the consumed alias went, the f64 output came";
  ASSERT_TRUE(exec->register_tensor(TensorId{1}, make_data({2}, DTypeKind::F32, {1, 2})));
  EXPECT_EQ(bytes(), 8u + 32u) << "a replaced handle gives its bytes back";
  ASSERT_TRUE(exec->execute(make_op<OpKind::Drop_Op>(tir(3, {4}, DTypeKind::F64))));
  ASSERT_TRUE(exec->read_tensor(tir(1, {2}, DTypeKind::F32, TensorStatus::ReadWrite)));
  EXPECT_EQ(bytes(), 0u);
  EXPECT_EQ(exec->stats().live_tensors, 0u);
}

}  // namespace
}  // namespace tb::test

namespace tb::test {
namespace {

// A received message's buffer (MessageBuffer::release): an exclusive owner that says its size.
struct Message {
  ir::Bytes block;
  explicit Message(std::size_t n)
      // aligned_alloc wants a size that is a multiple of the alignment.
      : block(ir::exclusive_block(
            static_cast<std::uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64)), n)) {}
  long owners() const { return block.owner().use_count(); }
  // `count` f32 values i * 0.5 from `offset`, as the message's payload.
  TensorData payload(std::size_t offset, std::size_t count) const {
    auto* f = const_cast<std::uint8_t*>(block.data()) + offset;
    for (std::size_t i = 0; i < count; ++i) {
      const float v = static_cast<float>(i) * 0.5f;
      std::memcpy(f + i * 4, &v, 4);
    }
    return TensorData{block.slice(offset, count * 4), Dims{count}, DTypeKind::F32};
  }
};

// Uploads that fill their message become the tensor's storage: one copy of every upload less.
TEST_F(Executor, AnUploadFillingItsMessageIsKeptInsteadOfCopied) {
  const std::size_t n = 64 * 1024;
  Message m(16 + n * 4);
  const auto t = tir(1, {n});
  ASSERT_TRUE(exec->register_tensor(t.id, m.payload(16, n)));
  EXPECT_GT(m.owners(), 1) << "the tensor keeps the message";
  // In-place work on the tensor (a ReadWrite input) writes into the message's memory, which is
  // the tensor's alone; reading the result is right.
  EXPECT_TRUE(exec->execute(make_op<OpKind::NumericFloat_AddScalar>(
      ScalarOpIr{rw(t), ScalarIr::f(1.0), out(2, {n})}, DTypeKind::F32)));
  const auto back = get(rw(tir(2, {n})));
  ASSERT_EQ(back.size(), n);
  EXPECT_EQ(back[0], 1.0);
  EXPECT_EQ(back[n - 1], static_cast<double>(n - 1) * 0.5 + 1.0);
  EXPECT_EQ(exec->stats().live_tensors, 0u);
  EXPECT_EQ(m.owners(), 1) << "the message is freed with the tensor";
}

TEST_F(Executor, UploadsAreCopiedWhenKeepingTheirMessageWouldPinMoreOrMisalign) {
  const std::size_t n = 64 * 1024;
  {
    Message m(16 + n * 4);
    ASSERT_TRUE(exec->register_tensor(tir(1, {n}).id, m.payload(17, n - 1)));  // misaligned
    EXPECT_EQ(m.owners(), 1);
  }
  {
    Message m(n * 4 + 1024 * 1024);  // 1 MiB of the message is something else
    ASSERT_TRUE(exec->register_tensor(tir(2, {n}).id, m.payload(0, n)));
    EXPECT_EQ(m.owners(), 1);
  }
  {
    Message m(16 + n * 4);
    auto shared = m.payload(16, n);
    // The same memory behind an owner that does not say it is exclusive.
    shared.bytes =
        ir::Bytes(std::shared_ptr<const void>(nullptr, [keep = m.block.owner()](const void*) {}),
                  shared.bytes.data(), shared.bytes.size());
    const long before = m.owners();
    ASSERT_TRUE(exec->register_tensor(tir(3, {n}).id, shared));
    EXPECT_EQ(m.owners(), before) << "copied: the tensor does not keep the memory";
  }
  EXPECT_EQ(get(tir(1, {n - 1}))[1], 0.5);
  EXPECT_EQ(get(tir(2, {n}))[n - 1], static_cast<double>(n - 1) * 0.5);
  EXPECT_EQ(get(tir(3, {n}))[2], 1.0);
}

}  // namespace
}  // namespace tb::test

namespace tb::test {
namespace {

// TB_OP_PROFILE: a session's executor prints its ops by kind, and its element-wise runs, when it
// ends.
TEST(OpProfile, AnExecutorPrintsItsOpsByKindWhenItEnds) {
  ::setenv("TB_OP_PROFILE", "1", 1);
  backend::libtorch::BackendOptions options;
  auto backend = std::move(backend::libtorch::make_backend(options)).value();
  auto exec = backend->new_executor();
  ::unsetenv("TB_OP_PROFILE");
  ASSERT_TRUE(exec->register_tensor(TensorId{1}, make_data({4}, DTypeKind::F32, {1, 2, 3, 4})));
  for (std::uint64_t id = 2; id <= 3; ++id) {  // one run of two deferred ops
    ASSERT_TRUE(exec->execute(make_op<OpKind::NumericFloat_AddScalar>(
        ScalarOpIr{tir(id - 1, {4}), ScalarIr::f(1.0), out(id, {4})}, DTypeKind::F32)));
  }
  ASSERT_TRUE(exec->execute(
      make_op<OpKind::Float_Erf>(UnaryOpIr{tir(3, {4}), out(4, {4})}, DTypeKind::F32)));
  ::testing::internal::CaptureStderr();
  exec.reset();
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(printed, HasSubstr("op profile:"));
  EXPECT_THAT(printed, ::testing::ContainsRegex("NumericFloat.AddScalar +2 +2 "));
  EXPECT_THAT(printed, ::testing::ContainsRegex("Float.Erf +1 +0 "));
  EXPECT_THAT(printed, ::testing::ContainsRegex("\\(element-wise runs\\) +1 +2 "));
}

TEST(OpProfile, OffUnlessAsked) {
  ::unsetenv("TB_OP_PROFILE");
  backend::libtorch::BackendOptions options;
  auto backend = std::move(backend::libtorch::make_backend(options)).value();
  auto exec = backend->new_executor();
  ASSERT_TRUE(exec->register_tensor(TensorId{1}, make_data({1}, DTypeKind::F32, {1})));
  ::testing::internal::CaptureStderr();
  exec.reset();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace tb::test
