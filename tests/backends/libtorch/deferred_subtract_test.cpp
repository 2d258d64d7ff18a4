// The deferred subtraction (exec/deferred_subtract.hpp): Burn's LU step `t = t.slice_assign(r,
// t.slice(r) - w)` written into `t` in place, and every other op stream around a deferred
// subtraction, must leave what running each op through its lowering leaves: the same tensors bit
// for bit (zeros' signs, infinities, NaN), the same live tensors. Each stream runs on an executor
// that defers (the default) and on one that does not (BackendOptions::fuse_elementwise off); each
// test also checks that the subtraction was deferred, and whether it was taken in place.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "backends/libtorch/op_test_util.hpp"
#include "exec/executor.hpp"

namespace tb::test {
namespace {

using backend::libtorch::LibTorchExecutor;

struct Outcome {
  std::vector<std::optional<TensorData>> reads;
  std::uint64_t live_tensors = 0;
  bool deferred_after_sub = false;
  std::uint64_t in_place = 0;
  std::uint64_t fused_outer = 0;  // subtractions that took an outer product's operands
};

class DeferredSubtract : public OpTest {
 protected:
  void SetUp() override {
    if (test_device() != "cpu") GTEST_SKIP() << "subtractions are deferred on the CPU only";
  }

  // Values with every special an update meets: zeros of both signs, infinities, NaN, tiny ones.
  static std::vector<double> values(std::size_t n, std::uint32_t seed) {
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> specials = {0.0, -0.0, inf, -inf, std::nan(""), 1e-40, -3.5};
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> dist(-2.0, 2.0);
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = i % 5 == 0 ? specials[i / 5 % specials.size()] : dist(gen);
    return v;
  }

  // Runs `ops` after registering `inputs`; `sub` is the index of the subtraction in `ops`.
  Outcome run_on(backend::Executor& e, std::size_t sub, const std::vector<OperationIr>& ops,
                 const std::vector<TensorIr>& reads) {
    Outcome o;
    for (const auto& [t, v] : inputs_) {
      EXPECT_TRUE(e.register_tensor(t.id, make_data(t.shape.dims, t.dtype, v)));
    }
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Status s = e.execute(ops[i]);
      EXPECT_TRUE(s) << fmt::format("{}", ops[i]) << ": " << (s ? "" : s.error().what());
      if (i == sub) o.deferred_after_sub = e.has_deferred();
    }
    EXPECT_TRUE(e.sync());
    o.live_tensors = e.stats().live_tensors;
    for (auto t : reads) {
      t.status = TensorStatus::ReadOnly;
      auto r = e.read_tensor(t);
      o.reads.push_back(r ? std::optional<TensorData>(r.value()) : std::nullopt);
    }
    o.in_place = dynamic_cast<LibTorchExecutor&>(e).subtractions_in_place();
    o.fused_outer = dynamic_cast<LibTorchExecutor&>(e).outer_products_fused();
    return o;
  }

  // The stream on both executors; returns the deferring one's outcome after comparing.
  Outcome expect_same(std::size_t sub, const std::vector<OperationIr>& ops,
                      const std::vector<TensorIr>& reads) {
    backend::libtorch::BackendOptions eager_options;
    eager_options.fuse_elementwise = false;
    auto eager_backend = std::move(backend::libtorch::make_backend(eager_options)).value();
    auto deferring = backend_->new_executor();
    auto eager = eager_backend->new_executor();
    const Outcome a = run_on(*deferring, sub, ops, reads);
    const Outcome b = run_on(*eager, sub, ops, reads);
    EXPECT_FALSE(b.deferred_after_sub);
    EXPECT_EQ(a.live_tensors, b.live_tensors);
    for (std::size_t i = 0; i < reads.size(); ++i) {
      EXPECT_TRUE(a.reads[i] && b.reads[i]) << "read of #" << reads[i].id.value;
      if (!a.reads[i] || !b.reads[i]) continue;
      EXPECT_EQ(a.reads[i]->shape, b.reads[i]->shape);
      // Bit for bit: one subtraction per element either way, by the same ATen kernel.
      EXPECT_TRUE(a.reads[i]->bytes == b.reads[i]->bytes) << "tensor #" << reads[i].id.value;
    }
    return a;
  }

  TensorIr input(std::uint64_t id, Dims dims, std::uint32_t seed, DType dtype = DTypeKind::F32) {
    auto t = tir(id, dims, dtype);
    std::size_t n = 1;
    for (auto d : dims) n *= d;
    inputs_.emplace_back(t, values(n, seed));
    return t;
  }

  void expect_computed_for(TensorStatus status, std::vector<Slice> ranges, std::uint32_t seed);

  std::vector<std::pair<TensorIr, std::vector<double>>> inputs_;
};

using SliceOp = PayloadOfT<OpKind::BaseFloat_Slice>;
using AssignOp = PayloadOfT<OpKind::BaseFloat_SliceAssign>;
using SubOp = PayloadOfT<OpKind::NumericFloat_Sub>;

// t [6, 7]; a = t[1:, 2:] (a view); u = a - w; t2 = t.slice_assign([1:, 2:], u): in place.
std::vector<OperationIr> lu_step(const TensorIr& t, const TensorIr& w, DType d = DTypeKind::F32) {
  return {
      make_op<OpKind::BaseFloat_Slice>(SliceOp{ro(t), {sl(1, 6), sl(2, 7)}, out(10, {5, 5}, d)}),
      make_op<OpKind::NumericFloat_Sub>(SubOp{rw(tir(10, {5, 5}, d)), rw(w), out(11, {5, 5}, d)}),
      make_op<OpKind::BaseFloat_SliceAssign>(
          AssignOp{rw(t), {sl(1, 6), sl(2, 7)}, rw(tir(11, {5, 5}, d)), out(12, {6, 7}, d)}),
  };
}

TEST_F(DeferredSubtract, TheLuStepIsWrittenInPlace) {
  for (const DType d : {DType(DTypeKind::F32), DType(DTypeKind::F64)}) {
    inputs_.clear();
    const auto t = input(1, {6, 7}, 1, d);
    const auto w = input(2, {5, 5}, 2, d);
    const Outcome o = expect_same(1, lu_step(t, w, d), {tir(12, {6, 7}, d)});
    EXPECT_TRUE(o.deferred_after_sub);
    EXPECT_EQ(o.in_place, 1u) << d.name();
  }
}

TEST_F(DeferredSubtract, ADifferenceReadByAnotherOpIsComputedFirst) {
  const auto t = input(1, {6, 7}, 3);
  const auto w = input(2, {5, 5}, 4);
  auto ops = lu_step(t, w);
  ops.pop_back();
  ops.push_back(make_op<OpKind::NumericFloat_Neg>(UnaryOpIr{rw(tir(11, {5, 5})), out(13, {5, 5})}));
  const Outcome o = expect_same(1, ops, {tir(13, {5, 5}), t});
  EXPECT_TRUE(o.deferred_after_sub);
  EXPECT_EQ(o.in_place, 0u);
}

TEST_F(DeferredSubtract, ADifferenceReadByTheClientIsComputedFirst) {
  const auto t = input(1, {6, 7}, 5);
  const auto w = input(2, {5, 5}, 6);
  auto ops = lu_step(t, w);
  ops.pop_back();
  const Outcome o = expect_same(1, ops, {tir(11, {5, 5}), t});
  EXPECT_TRUE(o.deferred_after_sub);
}

// The LU step with an assignment the difference cannot be written into in place (t's status and
// the ranges): it is computed, and the assignment takes it as usual.
void DeferredSubtract::expect_computed_for(TensorStatus status, std::vector<Slice> ranges,
                                           std::uint32_t seed) {
  const auto t = input(1, {6, 7}, seed);
  const auto w = input(2, {5, 5}, seed + 1);
  auto ops = lu_step(t, w);
  TensorIr assigned = t;
  assigned.status = status;
  ops.back() = make_op<OpKind::BaseFloat_SliceAssign>(
      AssignOp{assigned, std::move(ranges), rw(tir(11, {5, 5})), out(12, {6, 7})});
  std::vector<TensorIr> reads = {tir(12, {6, 7})};
  if (status == TensorStatus::ReadOnly) reads.push_back(t);
  const Outcome o = expect_same(1, ops, reads);
  EXPECT_TRUE(o.deferred_after_sub);
  EXPECT_EQ(o.in_place, 0u);
}

TEST_F(DeferredSubtract, AnotherRegionTakesTheComputedDifference) {
  expect_computed_for(TensorStatus::ReadWrite, {sl(0, 5), sl(0, 5)}, 7);
}

TEST_F(DeferredSubtract, AReversedRegionTakesTheComputedDifference) {
  expect_computed_for(TensorStatus::ReadWrite, {sl(1, 6, -1), sl(2, 7)}, 9);
}

// t stays readable after the assignment (ReadOnly): it is copied, and keeps its values.
TEST_F(DeferredSubtract, AnAssignmentThatKeepsItsTensorLeavesItUnchanged) {
  expect_computed_for(TensorStatus::ReadOnly, {sl(1, 6), sl(2, 7)}, 13);
}

TEST_F(DeferredSubtract, ATensorStillViewedElsewhereKeepsItsValues) {
  const auto t = input(1, {6, 7}, 11);
  const auto w = input(2, {5, 5}, 12);
  auto ops = lu_step(t, w);
  // A view of t's second row, read at the end: t may not be written in place.
  ops.insert(ops.begin(),
             make_op<OpKind::BaseFloat_Slice>(SliceOp{ro(t), {sl(1, 2)}, out(20, {1, 7})}));
  const Outcome o = expect_same(2, ops, {tir(12, {6, 7}), tir(20, {1, 7})});
  EXPECT_TRUE(o.deferred_after_sub);
  EXPECT_EQ(o.in_place, 0u);
}

TEST_F(DeferredSubtract, ASubtrahendInTheSameMemoryIsNotDeferred) {
  const auto t = input(1, {6, 7}, 15);
  // w is t[0:5, 0:5]: writing t's block in place would change w under the subtraction.
  std::vector<OperationIr> ops = {
      make_op<OpKind::BaseFloat_Slice>(SliceOp{ro(t), {sl(0, 5), sl(0, 5)}, out(2, {5, 5})})};
  for (auto& op : lu_step(t, tir(2, {5, 5}))) ops.push_back(std::move(op));
  const Outcome o = expect_same(2, ops, {tir(12, {6, 7})});
  EXPECT_FALSE(o.deferred_after_sub);
}

// ---- The outer product held back (Burn's unblocked LU step, exactly as its client sends it) -----

using MatmulOp = PayloadOfT<OpKind::Float_Matmul>;

Slice sl_to(std::uint64_t from, std::uint64_t to) {
  return sl(static_cast<std::int64_t>(from), static_cast<std::int64_t>(to));
}

// t [r, c]: a = t[1:, 0:1] (#30), b = t[0:1, 1:] (#31), w = a @ b (#32), as Burn's LU and QR take
// the operands of their outer products.
std::vector<OperationIr> outer_product_ops(const TensorIr& t, DType d) {
  const std::uint64_t r = t.shape.dims[0], c = t.shape.dims[1];
  return {
      make_op<OpKind::BaseFloat_Slice>(
          SliceOp{ro(t), {sl_to(1, r), sl_to(0, 1)}, out(30, {r - 1, 1}, d)}),
      make_op<OpKind::BaseFloat_Slice>(
          SliceOp{ro(t), {sl_to(0, 1), sl_to(1, c)}, out(31, {1, c - 1}, d)}),
      make_op<OpKind::Float_Matmul>(MatmulOp{rw(tir(30, {r - 1, 1}, d)), rw(tir(31, {1, c - 1}, d)),
                                             out(32, {r - 1, c - 1}, d)},
                                    d),
  };
}

// t [r, c], pivot 0: w = t[1:, 0:1] @ t[0:1, 1:], v = t[1:, 1:], u = v - w,
// t2 = t.slice_assign([1:, 1:], u). The subtraction is ops[4].
std::vector<OperationIr> lu_outer_step(const TensorIr& t, DType d = DTypeKind::F32) {
  const std::uint64_t r = t.shape.dims[0], c = t.shape.dims[1];
  auto ops = outer_product_ops(t, d);
  ops.push_back(make_op<OpKind::BaseFloat_Slice>(
      SliceOp{ro(t), {sl_to(1, r), sl_to(1, c)}, out(33, {r - 1, c - 1}, d)}));
  ops.push_back(make_op<OpKind::NumericFloat_Sub>(SubOp{
      rw(tir(33, {r - 1, c - 1}, d)), rw(tir(32, {r - 1, c - 1}, d)), out(34, {r - 1, c - 1}, d)}));
  ops.push_back(make_op<OpKind::BaseFloat_SliceAssign>(AssignOp{
      rw(t), {sl_to(1, r), sl_to(1, c)}, rw(tir(34, {r - 1, c - 1}, d)), out(35, {r, c}, d)}));
  return ops;
}

// Bit for bit, the specials included: each product rounded, then the difference, in the vector
// lanes (rows of 36) and the scalar ones (rows of 6) alike.
TEST_F(DeferredSubtract, TheLuStepsOuterProductIsNeverWritten) {
  for (const DType d : {DType(DTypeKind::F32), DType(DTypeKind::F64)}) {
    for (const Dims& dims : {Dims{6, 7}, Dims{20, 37}}) {
      inputs_.clear();
      const auto t = input(1, dims, 21, d);
      const Outcome o = expect_same(4, lu_outer_step(t, d), {tir(35, dims, d)});
      EXPECT_TRUE(o.deferred_after_sub);
      EXPECT_EQ(o.in_place, 1u) << d.name();
      EXPECT_EQ(o.fused_outer, 1u) << d.name();
    }
  }
}

// A drop of another tensor between the product and the subtraction (Burn's QR drops there) lets
// the product wait.
TEST_F(DeferredSubtract, ADropBetweenTheProductAndItsSubtractionLetsItWait) {
  const auto t = input(1, {6, 7}, 31);
  const auto other = input(2, {3}, 33);
  auto ops = lu_outer_step(t);
  ops.insert(ops.begin() + 3, make_op<OpKind::Drop_Op>(rw(other)));
  const Outcome o = expect_same(5, ops, {tir(35, {6, 7})});
  EXPECT_TRUE(o.deferred_after_sub);
  EXPECT_EQ(o.fused_outer, 1u);
  EXPECT_EQ(o.in_place, 1u);
}

// Ops other than a slice between the product and the subtraction compute the product first.
TEST_F(DeferredSubtract, AnOuterProductReadByAnotherOpIsComputedFirst) {
  const auto t = input(1, {6, 7}, 23);
  auto ops = lu_outer_step(t);
  ops.resize(3);
  ops.push_back(make_op<OpKind::NumericFloat_Neg>(UnaryOpIr{ro(tir(32, {5, 6})), out(36, {5, 6})}));
  const Outcome o = expect_same(3, ops, {tir(32, {5, 6}), tir(36, {5, 6})});
  EXPECT_EQ(o.fused_outer, 0u);
}

// A slice of the product itself is no slice that lets it wait.
TEST_F(DeferredSubtract, ASliceOfTheOuterProductComputesItFirst) {
  const auto t = input(1, {6, 7}, 25);
  auto ops = lu_outer_step(t);
  ops.resize(3);
  ops.push_back(
      make_op<OpKind::BaseFloat_Slice>(SliceOp{ro(tir(32, {5, 6})), {sl(1, 3)}, out(37, {2, 6})}));
  const Outcome o = expect_same(3, ops, {tir(37, {2, 6}), tir(32, {5, 6})});
  EXPECT_EQ(o.fused_outer, 0u);
}

// The difference read by the client (no assignment): computed from the operands.
TEST_F(DeferredSubtract, AFusedDifferenceReadByTheClientIsComputed) {
  const auto t = input(1, {6, 7}, 27);
  auto ops = lu_outer_step(t);
  ops.pop_back();
  const Outcome o = expect_same(4, ops, {tir(34, {5, 6}), t});
  EXPECT_TRUE(o.deferred_after_sub);
  EXPECT_EQ(o.fused_outer, 1u);
  EXPECT_EQ(o.in_place, 0u);
}

// The minuend is no view of a larger tensor: the subtraction runs as usual, on the computed
// product.
TEST_F(DeferredSubtract, AnOuterProductSubtractedFromAFreshTensorIsComputed) {
  const auto t = input(1, {6, 7}, 29);
  const auto m = input(2, {5, 6}, 30);
  auto ops = lu_outer_step(t);
  ops.resize(3);
  ops.push_back(
      make_op<OpKind::NumericFloat_Sub>(SubOp{rw(m), rw(tir(32, {5, 6})), out(34, {5, 6})}));
  const Outcome o = expect_same(3, ops, {tir(34, {5, 6})});
  EXPECT_EQ(o.fused_outer, 0u);
}

// ---- The transpose of an outer product (Burn's QR, its update of Q) -----------------------------

// t [r, c], q [c, r]: a = t[1:, 0:1], b = t[0:1, 1:], w = (a @ b)^T, v = q[1:, 1:], u = v - w,
// q2 = q.slice_assign([1:, 1:], u). The subtraction is ops[5]; `consumed`: the transpose consumes
// the product, as Burn's client sends it.
std::vector<OperationIr> qr_transposed_step(const TensorIr& t, const TensorIr& q, DType d,
                                            std::uint64_t dim1, bool consumed = true) {
  const std::uint64_t r = t.shape.dims[0], c = t.shape.dims[1];
  const TensorIr product = tir(32, {r - 1, c - 1}, d);
  auto ops = outer_product_ops(t, d);
  ops.push_back(make_op<OpKind::BaseFloat_SwapDims>(SwapDimsOpIr{
      consumed ? rw(product) : ro(product), out(38, {c - 1, r - 1}, d), dim1, 1 - dim1}));
  ops.push_back(make_op<OpKind::BaseFloat_Slice>(
      SliceOp{ro(q), {sl_to(1, c), sl_to(1, r)}, out(33, {c - 1, r - 1}, d)}));
  ops.push_back(make_op<OpKind::NumericFloat_Sub>(SubOp{
      rw(tir(33, {c - 1, r - 1}, d)), rw(tir(38, {c - 1, r - 1}, d)), out(34, {c - 1, r - 1}, d)}));
  ops.push_back(make_op<OpKind::BaseFloat_SliceAssign>(AssignOp{
      rw(q), {sl_to(1, c), sl_to(1, r)}, rw(tir(34, {c - 1, r - 1}, d)), out(35, {c, r}, d)}));
  return ops;
}

// Bit for bit, the specials included, either order of the swapped dims: neither the product nor
// its transpose is written, and the difference goes into q in place.
TEST_F(DeferredSubtract, QrsTransposedOuterProductIsNeverWritten) {
  for (const DType d : {DType(DTypeKind::F32), DType(DTypeKind::F64)}) {
    for (const Dims& dims : {Dims{6, 7}, Dims{20, 37}}) {
      for (const std::uint64_t dim1 : {0u, 1u}) {
        inputs_.clear();
        const auto t = input(1, dims, 41, d);
        const auto q = input(2, {dims[1], dims[0]}, 43, d);
        const Outcome o =
            expect_same(5, qr_transposed_step(t, q, d, dim1), {tir(35, {dims[1], dims[0]}, d)});
        EXPECT_TRUE(o.deferred_after_sub);
        EXPECT_EQ(o.in_place, 1u) << d.name();
        EXPECT_EQ(o.fused_outer, 1u) << d.name();
      }
    }
  }
}

// A transpose that leaves the product to later ops: the product is computed, and so is all the
// rest, as op by op.
TEST_F(DeferredSubtract, ATransposeThatKeepsTheProductComputesItFirst) {
  const Dims dims{6, 7};
  const auto t = input(1, dims, 45);
  const auto q = input(2, {7, 6}, 47);
  const Outcome o = expect_same(5, qr_transposed_step(t, q, DTypeKind::F32, 0, false),
                                {tir(35, {7, 6}), tir(32, {5, 6})});
  EXPECT_EQ(o.fused_outer, 0u);
}

// The transpose read by the client: computed from the held operands.
TEST_F(DeferredSubtract, AHeldTransposeReadByTheClientIsComputed) {
  const auto t = input(1, {6, 7}, 49);
  const auto q = input(2, {7, 6}, 51);
  auto ops = qr_transposed_step(t, q, DTypeKind::F32, 1);
  ops.resize(4);
  const Outcome o = expect_same(3, ops, {tir(38, {6, 5})});
  EXPECT_EQ(o.fused_outer, 0u);
}

}  // namespace
}  // namespace tb::test
