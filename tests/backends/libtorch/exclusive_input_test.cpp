// Updates in place (OpContext::exclusive, lowering.cpp): an op that consumes its only reference to
// a dense tensor may write into it instead of a copy (slice assignment, scatter). Each case that
// must not be updated in place (a view, an alias, a pending download, an expanded tensor, a second
// read by the same op) checks that what else can see the memory keeps its values, and
// ExecutorStats::in_place_updates tells which path ran.
#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using V = std::vector<double>;

class ExclusiveInput : public OpTest {
 protected:
  TensorIr input(std::uint64_t id, Dims dims, const V& values, DType dtype = DTypeKind::F32) {
    auto t = tir(id, std::move(dims), dtype);
    put(t, values);
    return t;
  }
  std::uint64_t in_place() const { return exec->stats().in_place_updates; }
  // Writes row 1 of a [2, 3] tensor with {7, 8, 9}, consuming `a`.
  void assign_row(const TensorIr& a, std::uint64_t value_id, std::uint64_t out_id) {
    const auto v = input(value_id, {1, 3}, {7, 8, 9});
    op<OpKind::BaseFloat_SliceAssign>({rw(a), {sl(1, 2)}, rw(v), out(out_id, {2, 3})});
  }
};

TEST_F(ExclusiveInput, AConsumedSoleTensorIsUpdatedInPlace) {
  const auto a = input(1, {2, 3}, {1, 2, 3, 4, 5, 6});
  assign_row(a, 2, 3);
  EXPECT_EQ(get(tir(3, {2, 3})), (V{1, 2, 3, 7, 8, 9}));
  EXPECT_EQ(in_place(), 1u);
  // The consumed input is gone, as with a copy.
  EXPECT_FALSE(exec->read_tensor(tir(1, {2, 3})));
  EXPECT_EQ(exec->stats().live_tensors, 1u);
  EXPECT_EQ(exec->stats().live_bytes, 6u * 4u);
}

TEST_F(ExclusiveInput, AnInputStillReadLaterIsCopied) {
  const auto a = input(1, {2, 3}, {1, 2, 3, 4, 5, 6});
  const auto v = input(2, {1, 3}, {7, 8, 9});
  op<OpKind::BaseFloat_SliceAssign>({ro(a), {sl(1, 2)}, ro(v), out(3, {2, 3})});
  EXPECT_EQ(get(tir(3, {2, 3})), (V{1, 2, 3, 7, 8, 9}));
  EXPECT_EQ(get(a), (V{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(in_place(), 0u);
}

TEST_F(ExclusiveInput, ALiveViewKeepsItsValues) {
  const auto a = input(1, {2, 3}, {1, 2, 3, 4, 5, 6});
  op<OpKind::BaseFloat_Slice>({ro(a), {sl(1, 2)}, out(2, {1, 3})});  // a view of row 1
  assign_row(a, 3, 4);
  EXPECT_EQ(get(tir(4, {2, 3})), (V{1, 2, 3, 7, 8, 9}));
  EXPECT_EQ(get(tir(2, {1, 3})), (V{4, 5, 6}));
  EXPECT_EQ(in_place(), 0u);
}

TEST_F(ExclusiveInput, AnAliasKeepsItsValues) {
  const auto a = input(1, {2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(exec->register_alias(TensorId{2}, TensorId{1}));
  assign_row(a, 3, 4);
  EXPECT_EQ(get(tir(2, {2, 3})), (V{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(in_place(), 0u);
}

TEST_F(ExclusiveInput, ADownloadHandedOutKeepsItsBytes) {
  // A read answers with the tensor's own memory where it can (no copy): until that answer is
  // sent, the tensor must not change under it.
  const auto a = input(1, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto data = exec->read_tensor(ro(a));
  ASSERT_TRUE(data);
  assign_row(a, 2, 3);
  EXPECT_EQ(values_of(data.value()), (V{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(get(tir(3, {2, 3})), (V{1, 2, 3, 7, 8, 9}));
  EXPECT_EQ(in_place(), 0u);
}

TEST_F(ExclusiveInput, AnExpandedTensorIsCopied) {
  // Both rows of an expanded tensor are one row of memory: writing row 1 in place would write
  // row 0 too.
  const auto a = input(1, {1, 3}, {1, 2, 3});
  op<OpKind::BaseFloat_Expand>({rw(a), out(2, {2, 3})});
  assign_row(tir(2, {2, 3}), 3, 4);
  EXPECT_EQ(get(tir(4, {2, 3})), (V{1, 2, 3, 7, 8, 9}));
  EXPECT_EQ(in_place(), 0u);
}

TEST_F(ExclusiveInput, AValueViewingTheTensorIsCopiedFirst) {
  // The value is row 0 of the tensor itself: the copy keeps the assignment reading old values.
  const auto a = input(1, {2, 3}, {1, 2, 3, 4, 5, 6});
  op<OpKind::BaseFloat_Slice>({ro(a), {sl(0, 1)}, out(2, {1, 3})});
  op<OpKind::BaseFloat_SliceAssign>({rw(a), {sl(1, 2)}, rw(tir(2, {1, 3})), out(3, {2, 3})});
  EXPECT_EQ(get(tir(3, {2, 3})), (V{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(in_place(), 0u);
}

// A large tensor whose only other holders are small views the session keeps: the views get
// copies of their own and the tensor is updated in place (Burn's LU holds the pivot row while it
// assigns a row of the block column).
class ExclusiveLargeInput : public ExclusiveInput {
 protected:
  static constexpr std::uint64_t kRows = 64, kCols = 128;  // 32 KiB of f32
  static V iota(std::size_t n, double from = 0) {
    V v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<double>(i);
    return v;
  }
  TensorIr large(std::uint64_t id) { return input(id, {kRows, kCols}, iota(kRows * kCols)); }
  // Assigns 1000, 1001, ... to row 1, consuming `a`.
  void assign_row_1(const TensorIr& a, std::uint64_t value_id, std::uint64_t out_id) {
    const auto v = input(value_id, {1, kCols}, iota(kCols, 1000));
    op<OpKind::BaseFloat_SliceAssign>({rw(a), {sl(1, 2)}, rw(v), out(out_id, {kRows, kCols})});
  }
  V row(const TensorIr& t, std::size_t r) {
    const V all = get(t);
    return V(all.begin() + static_cast<long>(r * kCols),
             all.begin() + static_cast<long>((r + 1) * kCols));
  }
};

TEST_F(ExclusiveLargeInput, ItsSmallLiveViewsAreCopiedInsteadOfIt) {
  const auto a = large(1);
  op<OpKind::BaseFloat_Slice>({ro(a), {sl(1, 2)}, out(2, {1, kCols})});  // row 1, overwritten
  op<OpKind::BaseFloat_Slice>({ro(a), {sl(5, 6)}, out(3, {1, kCols})});  // row 5, kept
  assign_row_1(a, 4, 5);
  EXPECT_EQ(in_place(), 1u);
  EXPECT_EQ(get(tir(2, {1, kCols})), iota(kCols, kCols));
  EXPECT_EQ(get(tir(3, {1, kCols})), iota(kCols, 5 * kCols));
  const auto result = tir(5, {kRows, kCols});
  EXPECT_EQ(row(result, 0), iota(kCols, 0));
  EXPECT_EQ(row(result, 1), iota(kCols, 1000));
  EXPECT_EQ(row(result, 2), iota(kCols, 2 * kCols));
  // The copies are counted as the views were.
  EXPECT_EQ(exec->stats().live_bytes, (kRows + 2) * kCols * 4);
}

TEST_F(ExclusiveLargeInput, AViewAsTheValueIsReadBeforeTheUpdate) {
  const auto a = large(1);
  op<OpKind::BaseFloat_Slice>({ro(a), {sl(0, 1)}, out(2, {1, kCols})});
  op<OpKind::BaseFloat_SliceAssign>(
      {rw(a), {sl(1, 2)}, rw(tir(2, {1, kCols})), out(3, {kRows, kCols})});
  EXPECT_EQ(in_place(), 1u);
  EXPECT_EQ(row(tir(3, {kRows, kCols}), 1), iota(kCols, 0));
}

TEST_F(ExclusiveLargeInput, AViewHeldOutsideTheTableOrALargeOneKeepsTheCopy) {
  // A download of the view in flight holds it: the view must keep its memory, so the tensor is
  // copied.
  const auto a = large(1);
  op<OpKind::BaseFloat_Slice>({ro(a), {sl(1, 2)}, out(2, {1, kCols})});
  auto data = exec->read_tensor(ro(tir(2, {1, kCols})));
  ASSERT_TRUE(data);
  assign_row_1(a, 3, 4);
  EXPECT_EQ(in_place(), 0u);
  EXPECT_EQ(values_of(data.value()), iota(kCols, kCols));
  EXPECT_EQ(row(tir(4, {kRows, kCols}), 1), iota(kCols, 1000));

  // A view of half the tensor costs as much as the tensor: the tensor is copied.
  const auto b = large(10);
  op<OpKind::BaseFloat_Slice>({ro(b), {sl(0, kRows / 2)}, out(11, {kRows / 2, kCols})});
  assign_row_1(b, 12, 13);
  EXPECT_EQ(in_place(), 0u);
  EXPECT_EQ(row(tir(11, {kRows / 2, kCols}), 1), iota(kCols, kCols));
}

TEST_F(ExclusiveInput, AnOpReadingItTwiceCopies) {
  const auto a = input(1, {3}, {1, 2, 3});
  op<OpKind::BaseFloat_SliceAssign>({rw(a), {sl(0, 3, -1)}, rw(a), out(2, {3})});
  EXPECT_EQ(get(tir(2, {3})), (V{3, 2, 1}));
  EXPECT_EQ(in_place(), 0u);
}

TEST_F(ExclusiveInput, ATransposedTensorIsUpdatedInPlaceInItsLayout) {
  // Dense but not contiguous: the view's strides address the right elements.
  const auto s = input(1, {3, 2}, {1, 4, 2, 5, 3, 6});
  op<OpKind::BaseFloat_SwapDims>({rw(s), out(2, {2, 3}), 0, 1});
  assign_row(tir(2, {2, 3}), 3, 4);
  EXPECT_EQ(get(tir(4, {2, 3})), (V{1, 2, 3, 7, 8, 9}));
  EXPECT_EQ(in_place(), 1u);
}

TEST_F(ExclusiveInput, ScattersUpdateInPlaceAndMatchTheCopy) {
  const auto idx = input(10, {2, 2}, {0, 0, 2, 1}, DTypeKind::I32);
  const auto v = input(11, {2, 2}, {10, 20, 30, 40});
  struct Case {
    IndexingUpdateOp op;
    V expected;
    bool in_place;
  };
  const std::vector<Case> cases = {
      {IndexingUpdateOp::Assign, {20, 2, 3, 4, 40, 30}, true},
      {IndexingUpdateOp::Add, {31, 2, 3, 4, 45, 36}, true},
      {IndexingUpdateOp::Mul, {200, 2, 3, 4, 200, 180}, true},
      // NaN-aware reductions build a new tensor.
      {IndexingUpdateOp::Max, {20, 2, 3, 4, 40, 30}, false},
  };
  std::uint64_t id = 20;
  for (const auto& c : cases) {
    const auto a = input(id, {2, 3}, {1, 2, 3, 4, 5, 6});
    const std::uint64_t before = in_place();
    op<OpKind::BaseFloat_Scatter>({rw(a), 1, ro(idx), ro(v), c.op, out(id + 1, {2, 3})});
    EXPECT_EQ(get(tir(id + 1, {2, 3})), c.expected) << static_cast<int>(c.op);
    EXPECT_EQ(in_place() - before, c.in_place ? 1u : 0u) << static_cast<int>(c.op);
    id += 2;
  }
  // With a live view of the target, the view keeps its values.
  const auto a = input(40, {2, 3}, {1, 2, 3, 4, 5, 6});
  op<OpKind::BaseFloat_Slice>({ro(a), {sl(0, 1)}, out(41, {1, 3})});
  op<OpKind::BaseFloat_Scatter>({rw(a), 1, ro(idx), ro(v), IndexingUpdateOp::Add, out(42, {2, 3})});
  EXPECT_EQ(get(tir(42, {2, 3})), (V{31, 2, 3, 4, 45, 36}));
  EXPECT_EQ(get(tir(41, {1, 3})), (V{1, 2, 3}));
}

TEST_F(ExclusiveInput, IntTensorsTooAndAFailedUpdateIsAnError) {
  const auto a = input(1, {4}, {1, 2, 3, 4}, DTypeKind::I64);
  const auto v = input(2, {2}, {-1, -2}, DTypeKind::I64);
  op<OpKind::BaseInt_SliceAssign>({rw(a), {sl(1, 3)}, rw(v), out(3, {4}, DTypeKind::I64)});
  EXPECT_EQ(get(tir(3, {4}, DTypeKind::I64)), (V{1, -1, -2, 4}));
  EXPECT_EQ(in_place(), 1u);

  // A value of the wrong shape is an error; the consumed input is gone either way (Burn's client
  // counts it consumed) and the output is poisoned.
  const auto b = input(4, {4}, {1, 2, 3, 4});
  const auto w = input(5, {3}, {9, 9, 9});
  EXPECT_FALSE(exec->execute(
      make_op<OpKind::BaseFloat_SliceAssign>({rw(b), {sl(0, 2)}, ro(w), out(6, {4})})));
  EXPECT_FALSE(exec->read_tensor(tir(6, {4})));
  EXPECT_EQ(get(w), (V{9, 9, 9}));
}

}  // namespace
}  // namespace tb::test
