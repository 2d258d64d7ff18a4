// Reductions, arg*, top-k, cumulative ops and sorts (lower_reduce.cpp), with Burn's semantics
// (burn-flex 0.22.1): expected values are hand-computed from Burn's rules, not from ATen.
#include <cmath>
#include <limits>
#include <tuple>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;
using V = std::vector<double>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double k2p63 = 9223372036854775808.0;             // 2^63: the U64 sign bit
constexpr double kU64Top = 18446744073709549568.0;          // 2^64 - 2048
constexpr double kU64TopHalf = 9223372036854774784.0;       // (2^64 - 2048) / 2
constexpr double kU64TopTwiceHalf = 9223372036854773760.0;  // ((2 * (2^64 - 2048)) mod 2^64) / 2

class ReduceTest : public OpTest {
 protected:
  // Registers the 2-D `t` holding `values` (row-major) as a non-contiguous (transposed) view.
  void put_transposed(const TensorIr& t, const V& values) {
    const auto r = t.shape.dims.at(0), c = t.shape.dims.at(1);
    V src(values.size());
    for (std::uint64_t i = 0; i < r; ++i)
      for (std::uint64_t j = 0; j < c; ++j) src[j * r + i] = values[i * c + j];
    const auto s = tir(t.id.value + 1000, {c, r}, t.dtype);
    put(s, src);
    transposed(rw(s), t.id.value);
  }

  // Int argmax/argmin indices: read as declared, answered as I64 (as Burn's backends do).
  V get_indices(const TensorIr& t) {
    auto data = exec->read_tensor(t);
    EXPECT_TRUE(data) << (data ? "" : data.error().what());
    if (!data) return {};
    EXPECT_EQ(data.value().dtype, DType(DTypeKind::I64));
    return values_of(data.value());
  }

  template <OpKind K>
  void reduce(const TensorIr& in, const TensorIr& o) {
    run(make_op<K>(ReduceOpIr{in, o}, in.dtype));
  }
  template <OpKind K>
  void reduce_dim(const TensorIr& in, const TensorIr& o, std::uint64_t axis,
                  std::uint64_t acc = 1) {
    run(make_op<K>(ReduceDimOpIr{in, o, axis, acc}, in.dtype));
  }
  template <OpKind K>
  void with_indices(const TensorIr& in, std::uint64_t dim, const TensorIr& o, const TensorIr& idx) {
    run(make_op<K>(ReduceDimWithIndicesOpIr{in, dim, o, idx}, in.dtype));
  }
  template <OpKind K>
  void cumulative(const TensorIr& in, const TensorIr& o, std::uint64_t axis) {
    run(make_op<K>(DimOpIr{in, o, axis}, in.dtype));
  }
  template <OpKind K>
  void sort(const TensorIr& in, std::uint64_t dim, bool descending, const TensorIr& o) {
    run(make_op<K>(SortOpIr{in, dim, descending, o}, in.dtype));
  }
  void sort_with_indices(OpCategory cat, const TensorIr& in, std::uint64_t dim, bool descending,
                         const TensorIr& o, const TensorIr& idx) {
    SortWithIndicesOpIr p{in, dim, descending, o, idx};
    run(cat == OpCategory::NumericFloat ? make_op<OpKind::NumericFloat_SortWithIndices>(p, in.dtype)
                                        : make_op<OpKind::NumericInt_SortWithIndices>(p, in.dtype));
  }
};

std::vector<bool> signbits(const V& v) {
  std::vector<bool> out;
  for (double x : v) out.push_back(std::signbit(x));
  return out;
}

// ---- Sum ---------------------------------------------------------------------------------------

class NumericFloat_Sum : public ReduceTest {};
TEST_F(NumericFloat_Sum, AllElementsToShapeOne) {
  const auto x = tir(1, {2, 3});
  put(x, {1, 2, 3, 4, 5, 6.5});
  reduce<OpKind::NumericFloat_Sum>(rw(x), out(2, {1}));
  EXPECT_EQ(get(tir(2, {1})), V{21.5});
  EXPECT_EQ(exec->stats().live_tensors, 1u) << "the ReadWrite input is freed";
}
TEST_F(NumericFloat_Sum, EmptyIsZeroAndRankZeroWorks) {
  put(tir(1, {0, 3}), {});
  reduce<OpKind::NumericFloat_Sum>(tir(1, {0, 3}), out(2, {1}));
  EXPECT_EQ(get(tir(2, {1})), V{0});
  put(tir(3, {}, DTypeKind::F64), {2.5});
  reduce<OpKind::NumericFloat_Sum>(tir(3, {}, DTypeKind::F64), out(4, {1}, DTypeKind::F64));
  EXPECT_EQ(get(tir(4, {1}, DTypeKind::F64)), V{2.5});
}
TEST_F(NumericFloat_Sum, HalfAccumulatesInF32) {
  // In f16, 2048 + 1 rounds back to 2048; Burn accumulates in f32: 2050 (exact in f16).
  const auto x = tir(1, {3}, DTypeKind::F16);
  put(x, {2048, 1, 1});
  reduce<OpKind::NumericFloat_Sum>(x, out(2, {1}, DTypeKind::F16));
  EXPECT_EQ(get(tir(2, {1}, DTypeKind::F16)), V{2050});
  const auto b = tir(3, {2}, DTypeKind::BF16);
  put(b, {1.5, 2});
  reduce<OpKind::NumericFloat_Sum>(b, out(4, {1}, DTypeKind::BF16));
  EXPECT_EQ(get(tir(4, {1}, DTypeKind::BF16)), V{3.5});
}

class NumericInt_Sum : public ReduceTest {};
TEST_F(NumericInt_Sum, WrapsInTheTensorDType) {
  const std::vector<std::tuple<DType, V, double>> cases = {
      {DTypeKind::I64, {1, -2, 40}, 39},
      {DTypeKind::I32, {2147483647, 1}, -2147483648.0},
      {DTypeKind::I16, {32767, 2}, -32767},
      {DTypeKind::I8, {100, 100, 100}, 44},
      {DTypeKind::U8, {200, 100}, 44},
      {DTypeKind::U16, {65535, 2}, 1},
      {DTypeKind::U32, {4294967295.0, 2}, 1},
      {DTypeKind::U64, {kU64Top, 4096}, 2048},
      {DTypeKind::U64, {k2p63, 2048}, k2p63 + 2048},
  };
  std::uint64_t id = 1;
  for (const auto& [dtype, values, expected] : cases) {
    const auto x = tir(id++, {values.size()}, dtype);
    put(x, values);
    const auto o = out(id++, {1}, dtype);
    reduce<OpKind::NumericInt_Sum>(x, o);
    EXPECT_EQ(get(o), V{expected}) << dtype.name();
  }
}
TEST_F(NumericInt_Sum, EmptyIsZero) {
  put(tir(1, {2, 0}, DTypeKind::I32), {});
  reduce<OpKind::NumericInt_Sum>(tir(1, {2, 0}, DTypeKind::I32), out(2, {1}, DTypeKind::I32));
  EXPECT_EQ(get(tir(2, {1}, DTypeKind::I32)), V{0});
}

// ---- SumDim / SumDims --------------------------------------------------------------------------

class NumericFloat_SumDim : public ReduceTest {};
TEST_F(NumericFloat_SumDim, KeepsTheDim) {
  const auto x = tir(1, {2, 3});
  put(x, {1, 2, 3, 4, 5, 6});
  reduce_dim<OpKind::NumericFloat_SumDim>(x, out(2, {2, 1}), 1);
  EXPECT_EQ(get(tir(2, {2, 1})), (V{6, 15}));
  reduce_dim<OpKind::NumericFloat_SumDim>(x, out(3, {1, 3}), 0);
  EXPECT_EQ(get(tir(3, {1, 3})), (V{5, 7, 9}));
}
TEST_F(NumericFloat_SumDim, NonContiguousInputAndEmptyDim) {
  const auto x = tir(1, {2, 3});
  put_transposed(x, {1, 2, 3, 4, 5, 6});
  reduce_dim<OpKind::NumericFloat_SumDim>(x, out(2, {2, 1}), 1);
  EXPECT_EQ(get(tir(2, {2, 1})), (V{6, 15}));
  put(tir(3, {2, 0}), {});
  reduce_dim<OpKind::NumericFloat_SumDim>(tir(3, {2, 0}), out(4, {2, 1}), 1);
  EXPECT_EQ(get(tir(4, {2, 1})), (V{0, 0}));
}
TEST_F(NumericFloat_SumDim, AxisOutOfRangeIsAnError) {
  put(tir(1, {2}), {1, 2});
  EXPECT_THAT(run_error(make_op<OpKind::NumericFloat_SumDim>(
                  ReduceDimOpIr{tir(1, {2}), out(2, {2}), 1, 1}, DTypeKind::F32)),
              HasSubstr("axis 1 is out of range"));
}

class NumericInt_SumDim : public ReduceTest {};
TEST_F(NumericInt_SumDim, WrapsPerOutput) {
  const auto x = tir(1, {2, 2}, DTypeKind::I16);
  put(x, {30000, 30000, -5, 2});
  reduce_dim<OpKind::NumericInt_SumDim>(x, out(2, {2, 1}, DTypeKind::I16), 1);
  EXPECT_EQ(get(tir(2, {2, 1}, DTypeKind::I16)), (V{-5536, -3}));
  const auto u = tir(3, {2, 1}, DTypeKind::U64);
  put(u, {kU64Top, 4096});
  reduce_dim<OpKind::NumericInt_SumDim>(u, out(4, {1, 1}, DTypeKind::U64), 0);
  EXPECT_EQ(get(tir(4, {1, 1}, DTypeKind::U64)), V{2048});
}

class NumericFloat_SumDims : public ReduceTest {};
TEST_F(NumericFloat_SumDims, SeveralAxesKeptAsOne) {
  const auto x = tir(1, {2, 2, 2});
  put(x, {1, 2, 3, 4, 5, 6, 7, 8});
  run(make_op<OpKind::NumericFloat_SumDims>(ReduceDimsOpIr{x, out(2, {1, 2, 1}), {0, 2}}));
  EXPECT_EQ(get(tir(2, {1, 2, 1})), (V{1 + 2 + 5 + 6, 3 + 4 + 7 + 8}));
  // Repeated axes reduce once (Burn folds sum_dim, the second is a no-op).
  run(make_op<OpKind::NumericFloat_SumDims>(ReduceDimsOpIr{x, out(3, {2, 1, 2}), {1, 1}}));
  EXPECT_EQ(get(tir(3, {2, 1, 2})), (V{4, 6, 12, 14}));
}
TEST_F(NumericFloat_SumDims, NoAxesIsTheIdentity) {
  // ATen would sum everything over an empty list; Burn's fold over no axis returns the input.
  const auto x = tir(1, {2, 2});
  put(x, {1, 2, 3, 4});
  run(make_op<OpKind::NumericFloat_SumDims>(ReduceDimsOpIr{x, out(2, {2, 2}), {}}));
  EXPECT_EQ(get(tir(2, {2, 2})), (V{1, 2, 3, 4}));
}

class NumericInt_SumDims : public ReduceTest {};
TEST_F(NumericInt_SumDims, WrapsLikeFoldedSumDims) {
  const auto x = tir(1, {2, 2}, DTypeKind::I8);
  put(x, {100, 100, 100, -1});
  run(make_op<OpKind::NumericInt_SumDims>(ReduceDimsOpIr{x, out(2, {1, 1}, DTypeKind::I8), {0, 1}},
                                          DTypeKind::I8));
  EXPECT_EQ(get(tir(2, {1, 1}, DTypeKind::I8)), V{43});  // 299 mod 256
  const auto u = tir(3, {2, 2}, DTypeKind::U16);
  put(u, {65535, 1, 2, 3});
  run(make_op<OpKind::NumericInt_SumDims>(ReduceDimsOpIr{u, out(4, {1, 2}, DTypeKind::U16), {0}},
                                          DTypeKind::U16));
  EXPECT_EQ(get(tir(4, {1, 2}, DTypeKind::U16)), (V{1, 4}));
}

// ---- Prod / ProdDim ----------------------------------------------------------------------------

class NumericFloat_Prod : public ReduceTest {};
TEST_F(NumericFloat_Prod, AllElementsEmptyIsOne) {
  const auto x = tir(1, {2, 2});
  put(x, {1, 2, 3, -4});
  reduce<OpKind::NumericFloat_Prod>(x, out(2, {1}));
  EXPECT_EQ(get(tir(2, {1})), V{-24});
  put(tir(3, {0}), {});
  reduce<OpKind::NumericFloat_Prod>(tir(3, {0}), out(4, {1}));
  EXPECT_EQ(get(tir(4, {1})), V{1});
}
TEST_F(NumericFloat_Prod, HalfAccumulatesInF32) {
  // 256 * 256 overflows f16 (max 65504); in f32 the product comes back to 256.
  const auto x = tir(1, {3}, DTypeKind::F16);
  put(x, {256, 256, 1.0 / 256});
  reduce<OpKind::NumericFloat_Prod>(x, out(2, {1}, DTypeKind::F16));
  EXPECT_EQ(get(tir(2, {1}, DTypeKind::F16)), V{256});
}

class NumericInt_Prod : public ReduceTest {};
TEST_F(NumericInt_Prod, WrapsInTheTensorDType) {
  const std::vector<std::tuple<DType, V, double>> cases = {
      {DTypeKind::I8, {16, 16}, 0},
      {DTypeKind::I8, {-2, 100}, 56},
      {DTypeKind::I32, {65536, 65537}, 65536},
      {DTypeKind::U8, {16, 17}, 16},
      {DTypeKind::U16, {256, 257}, 256},
      {DTypeKind::U64, {k2p63, 2}, 0},
      {DTypeKind::U64, {k2p63, 3}, k2p63},
      {DTypeKind::I64, {-3, 5}, -15},
  };
  std::uint64_t id = 1;
  for (const auto& [dtype, values, expected] : cases) {
    const auto x = tir(id++, {values.size()}, dtype);
    put(x, values);
    const auto o = out(id++, {1}, dtype);
    reduce<OpKind::NumericInt_Prod>(x, o);
    EXPECT_EQ(get(o), V{expected}) << dtype.name();
  }
}

class NumericFloat_ProdDim : public ReduceTest {};
TEST_F(NumericFloat_ProdDim, AlongAnAxis) {
  const auto x = tir(1, {2, 3}, DTypeKind::F64);
  put_transposed(x, {1, 2, 3, 4, 5, 6});
  reduce_dim<OpKind::NumericFloat_ProdDim>(x, out(2, {1, 3}, DTypeKind::F64), 0);
  EXPECT_EQ(get(tir(2, {1, 3}, DTypeKind::F64)), (V{4, 10, 18}));
  reduce_dim<OpKind::NumericFloat_ProdDim>(x, out(3, {2, 1}, DTypeKind::F64), 1);
  EXPECT_EQ(get(tir(3, {2, 1}, DTypeKind::F64)), (V{6, 120}));
}

class NumericInt_ProdDim : public ReduceTest {};
TEST_F(NumericInt_ProdDim, WrapsPerOutput) {
  const auto x = tir(1, {2, 2}, DTypeKind::I32);
  put(x, {65536, 65536, -3, 7});
  reduce_dim<OpKind::NumericInt_ProdDim>(x, out(2, {2, 1}, DTypeKind::I32), 1);
  EXPECT_EQ(get(tir(2, {2, 1}, DTypeKind::I32)), (V{0, -21}));
}

// ---- Mean / MeanDim ----------------------------------------------------------------------------

class NumericFloat_Mean : public ReduceTest {};
TEST_F(NumericFloat_Mean, AllElementsEmptyIsNaN) {
  const auto x = tir(1, {2, 2});
  put(x, {1, 2, 3, 4});
  reduce<OpKind::NumericFloat_Mean>(x, out(2, {1}));
  EXPECT_EQ(get(tir(2, {1})), V{2.5});
  put(tir(3, {0}), {});
  reduce<OpKind::NumericFloat_Mean>(tir(3, {0}), out(4, {1}));
  const auto m = get(tir(4, {1}));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(std::isnan(m[0]));
}
TEST_F(NumericFloat_Mean, HalfDoesNotOverflow) {
  // The f16 sum (120000) overflows; Burn sums and divides in f32.
  for (DType d : {DType(DTypeKind::F16), DType(DTypeKind::BF16)}) {
    put(tir(1, {2}, d), {60000, 60000});
    reduce<OpKind::NumericFloat_Mean>(rw(tir(1, {2}, d)), out(2, {1}, d));
    const auto m = get(rw(tir(2, {1}, d)));
    ASSERT_EQ(m.size(), 1u);
    EXPECT_NEAR(m[0], 60000, 300) << d.name();
  }
}

class NumericInt_Mean : public ReduceTest {};
TEST_F(NumericInt_Mean, TruncatesTheWrappedSum) {
  const std::vector<std::tuple<DType, V, double>> cases = {
      {DTypeKind::I32, {1, 2, 4}, 2},
      {DTypeKind::I64, {-7, 0}, -3},          // toward zero, not -4
      {DTypeKind::I8, {100, 100, 100}, 14},   // 300 wraps to 44, then 44 / 3
      {DTypeKind::I16, {-32768, -1}, 16383},  // -32769 wraps to 32767
      {DTypeKind::U8, {255, 2}, 0},           // 257 wraps to 1
      {DTypeKind::U32, {4294967295.0, 4294967295.0}, 2147483647},
      {DTypeKind::U64, {kU64Top, 0}, kU64TopHalf},  // unsigned division of a sum >= 2^63
      {DTypeKind::U64, {kU64Top, kU64Top}, kU64TopTwiceHalf},
      {DTypeKind::U64, {k2p63, k2p63, 3}, 1},
  };
  std::uint64_t id = 1;
  for (const auto& [dtype, values, expected] : cases) {
    const auto x = tir(id++, {values.size()}, dtype);
    put(x, values);
    const auto o = out(id++, {1}, dtype);
    reduce<OpKind::NumericInt_Mean>(x, o);
    EXPECT_EQ(get(o), V{expected}) << dtype.name();
  }
}
TEST_F(NumericInt_Mean, EmptyIsAnError) {
  put(tir(1, {0}, DTypeKind::I32), {});
  EXPECT_THAT(
      run_error(make_op<OpKind::NumericInt_Mean>(
          ReduceOpIr{tir(1, {0}, DTypeKind::I32), out(2, {1}, DTypeKind::I32)}, DTypeKind::I32)),
      HasSubstr("empty"));
}

class NumericFloat_MeanDim : public ReduceTest {};
TEST_F(NumericFloat_MeanDim, AlongAnAxisEmptyDimIsNaN) {
  const auto x = tir(1, {2, 3});
  put_transposed(x, {1, 2, 3, 4, 5, 6});
  reduce_dim<OpKind::NumericFloat_MeanDim>(x, out(2, {2, 1}), 1);
  EXPECT_EQ(get(tir(2, {2, 1})), (V{2, 5}));
  reduce_dim<OpKind::NumericFloat_MeanDim>(x, out(3, {1, 3}), 0);
  EXPECT_EQ(get(tir(3, {1, 3})), (V{2.5, 3.5, 4.5}));
  put(tir(4, {2, 0}), {});
  reduce_dim<OpKind::NumericFloat_MeanDim>(tir(4, {2, 0}), out(5, {2, 1}), 1);
  expect_near(get(tir(5, {2, 1})), {kNaN, kNaN});
}
TEST_F(NumericFloat_MeanDim, HalfDoesNotOverflow) {
  const auto x = tir(1, {1, 2}, DTypeKind::F16);
  put(x, {60000, 60000});
  reduce_dim<OpKind::NumericFloat_MeanDim>(x, out(2, {1, 1}, DTypeKind::F16), 1);
  EXPECT_EQ(get(tir(2, {1, 1}, DTypeKind::F16)), V{60000});
}

class NumericInt_MeanDim : public ReduceTest {};
TEST_F(NumericInt_MeanDim, TruncatesTheWrappedSum) {
  const auto x = tir(1, {2, 2}, DTypeKind::I64);
  put(x, {1, 2, -3, -4});
  reduce_dim<OpKind::NumericInt_MeanDim>(x, out(2, {2, 1}, DTypeKind::I64), 1);
  EXPECT_EQ(get(tir(2, {2, 1}, DTypeKind::I64)), (V{1, -3}));
  const auto u = tir(3, {2, 2}, DTypeKind::U32);
  put(u, {4294967295.0, 7, 3, 1});
  reduce_dim<OpKind::NumericInt_MeanDim>(u, out(4, {1, 2}, DTypeKind::U32), 0);
  EXPECT_EQ(get(tir(4, {1, 2}, DTypeKind::U32)), (V{1, 4}));  // 2^32 + 2 wraps to 2
  const auto big = tir(5, {2, 1}, DTypeKind::U64);
  put(big, {kU64Top, 0});
  reduce_dim<OpKind::NumericInt_MeanDim>(big, out(6, {1, 1}, DTypeKind::U64), 0);
  EXPECT_EQ(get(tir(6, {1, 1}, DTypeKind::U64)), V{kU64TopHalf});
}
TEST_F(NumericInt_MeanDim, EmptyDimIsAnError) {
  put(tir(1, {2, 0}, DTypeKind::I32), {});
  EXPECT_THAT(
      run_error(make_op<OpKind::NumericInt_MeanDim>(
          ReduceDimOpIr{tir(1, {2, 0}, DTypeKind::I32), out(2, {2, 1}, DTypeKind::I32), 1, 1},
          DTypeKind::I32)),
      HasSubstr("empty dimension"));
}

// ---- ArgMax / ArgMin ---------------------------------------------------------------------------

class NumericFloat_ArgMax : public ReduceTest {};
TEST_F(NumericFloat_ArgMax, FirstOfTiesFirstNaNDeclaredDType) {
  const auto x = tir(1, {3, 4});
  put(x, {1, 5, 5, 2,  //
          kNaN, 1, kNaN, 9, -0.0, 0.0, -1, -2});
  reduce_dim<OpKind::NumericFloat_ArgMax>(x, out(2, {3, 1}, DTypeKind::I32), 1);
  EXPECT_EQ(get(tir(2, {3, 1}, DTypeKind::I32)), (V{1, 0, 0}));
  reduce_dim<OpKind::NumericFloat_ArgMax>(x, out(3, {1, 4}, DTypeKind::U8), 0);
  EXPECT_EQ(get(tir(3, {1, 4}, DTypeKind::U8)), (V{1, 0, 1, 1}));
}
TEST_F(NumericFloat_ArgMax, NonContiguousHalfAndEmptyDim) {
  const auto x = tir(1, {2, 3}, DTypeKind::BF16);
  put_transposed(x, {1, 7, 3, 9, 4, 9});
  reduce_dim<OpKind::NumericFloat_ArgMax>(x, out(2, {2, 1}, DTypeKind::I64), 1);
  EXPECT_EQ(get(tir(2, {2, 1}, DTypeKind::I64)), (V{1, 0}));
  put(tir(3, {2, 0}), {});
  EXPECT_THAT(run_error(make_op<OpKind::NumericFloat_ArgMax>(
                  ReduceDimOpIr{tir(3, {2, 0}), out(4, {2, 1}, DTypeKind::I32), 1, 1})),
              HasSubstr("empty dimension"));
}

class NumericInt_ArgMax : public ReduceTest {};
TEST_F(NumericInt_ArgMax, FirstOfTiesAndU64AboveTwoPow63) {
  const auto x = tir(1, {2, 3}, DTypeKind::I8);
  put(x, {-128, 127, 127, -5, -5, -6});
  reduce_dim<OpKind::NumericInt_ArgMax>(x, out(2, {2, 1}, DTypeKind::I8), 1);
  EXPECT_EQ(get_indices(tir(2, {2, 1}, DTypeKind::I8)), (V{1, 0}));
  const auto u = tir(3, {4}, DTypeKind::U64);
  put(u, {1, k2p63, 5, kU64Top});
  reduce_dim<OpKind::NumericInt_ArgMax>(u, out(4, {1}, DTypeKind::U64), 0);
  EXPECT_EQ(get_indices(tir(4, {1}, DTypeKind::U64)), V{3});
  const auto w = tir(5, {3}, DTypeKind::U32);
  put(w, {4294967295.0, 0, 4294967295.0});
  reduce_dim<OpKind::NumericInt_ArgMax>(w, out(6, {1}, DTypeKind::U32), 0);
  EXPECT_EQ(get_indices(tir(6, {1}, DTypeKind::U32)), V{0});
}

// Burn declares an Int argmax/argmin's output in the input's dtype (burn-router 0.22.1
// int_argmax: ReduceDimOpIr::create, whose out dtype is input.dtype), so I32 on a default device,
// but every Burn backend answers I64 (burn-flex reduce::argmax, burn-tch's Long) and Burn's own
// test suite expects it: the read answers I64 whatever the declaration (issue 16, finding 15).
// Before the fix the read answered I32.
TEST_F(NumericInt_ArgMax, AnIntInputAnswersI64LikeBurnsBackends) {
  const auto x = tir(1, {2, 3}, DTypeKind::I32);
  put(x, {4, 9, 9, -1, -7, 2});
  reduce_dim<OpKind::NumericInt_ArgMax>(x, out(2, {2, 1}, DTypeKind::I32), 1);
  reduce_dim<OpKind::NumericInt_ArgMin>(x, out(3, {1, 3}, DTypeKind::I32), 0);
  for (const auto& [id, shape, want] :
       {std::tuple{2, Dims{2, 1}, V{1, 2}}, std::tuple{3, Dims{1, 3}, V{1, 1, 1}}}) {
    EXPECT_EQ(get_indices(tir(id, shape, DTypeKind::I32)), want);
  }
  // The I64 indices still feed ops that declare them I32 (Burn's client keeps its declaration).
  reduce_dim<OpKind::NumericInt_ArgMax>(x, out(4, {2, 1}, DTypeKind::I32), 1);
  reduce<OpKind::NumericInt_Sum>(tir(4, {2, 1}, DTypeKind::I32, TensorStatus::ReadWrite),
                                 out(5, {1}, DTypeKind::I32));
  EXPECT_EQ(get(tir(5, {1}, DTypeKind::I32)), (V{3}));
}

class NumericFloat_ArgMin : public ReduceTest {};
TEST_F(NumericFloat_ArgMin, FirstOfTiesAndNaNWins) {
  const auto x = tir(1, {2, 4}, DTypeKind::F64);
  put(x, {3, -1, 2, -1, 0, kNaN, -kInf, kNaN});
  reduce_dim<OpKind::NumericFloat_ArgMin>(x, out(2, {2, 1}, DTypeKind::I32), 1);
  EXPECT_EQ(get(tir(2, {2, 1}, DTypeKind::I32)), (V{1, 1}));
}
TEST_F(NumericFloat_ArgMin, NonContiguousHalf) {
  const auto x = tir(1, {2, 3}, DTypeKind::F16);
  put_transposed(x, {4, 1, 1, 2, 3, 0.5});
  reduce_dim<OpKind::NumericFloat_ArgMin>(x, out(2, {2, 1}, DTypeKind::I32), 1);
  EXPECT_EQ(get(tir(2, {2, 1}, DTypeKind::I32)), (V{1, 2}));
  reduce_dim<OpKind::NumericFloat_ArgMin>(x, out(3, {1, 3}, DTypeKind::I32), 0);
  EXPECT_EQ(get(tir(3, {1, 3}, DTypeKind::I32)), (V{1, 0, 1}));
}

class NumericInt_ArgMin : public ReduceTest {};
TEST_F(NumericInt_ArgMin, U64AboveTwoPow63IsLarge) {
  const auto u = tir(1, {3}, DTypeKind::U64);
  put(u, {k2p63, 7, kU64Top});
  reduce_dim<OpKind::NumericInt_ArgMin>(u, out(2, {1}, DTypeKind::U64), 0);
  EXPECT_EQ(get_indices(tir(2, {1}, DTypeKind::U64)), V{1});
  const auto x = tir(3, {4}, DTypeKind::U16);
  put(x, {65535, 3, 3, 9});
  reduce_dim<OpKind::NumericInt_ArgMin>(x, out(4, {1}, DTypeKind::U16), 0);
  EXPECT_EQ(get_indices(tir(4, {1}, DTypeKind::U16)), V{1});
}

// ---- Max / Min ---------------------------------------------------------------------------------

class NumericFloat_Max : public ReduceTest {};
TEST_F(NumericFloat_Max, AllElementsNaNPropagates) {
  const auto x = tir(1, {2, 2});
  put(x, {-3, -1, -7, -2});
  reduce<OpKind::NumericFloat_Max>(x, out(2, {1}));
  EXPECT_EQ(get(tir(2, {1})), V{-1});
  put(tir(3, {3}), {1, kNaN, 5});
  reduce<OpKind::NumericFloat_Max>(tir(3, {3}), out(4, {1}));
  expect_near(get(tir(4, {1})), {kNaN});
  put(tir(5, {}, DTypeKind::F16), {2.5});
  reduce<OpKind::NumericFloat_Max>(tir(5, {}, DTypeKind::F16), out(6, {1}, DTypeKind::F16));
  EXPECT_EQ(get(tir(6, {1}, DTypeKind::F16)), V{2.5});
}
TEST_F(NumericFloat_Max, EmptyIsAnError) {
  put(tir(1, {0}), {});
  EXPECT_THAT(run_error(make_op<OpKind::NumericFloat_Max>(ReduceOpIr{tir(1, {0}), out(2, {1})})),
              HasSubstr("empty tensor"));
}

class NumericInt_Max : public ReduceTest {};
TEST_F(NumericInt_Max, UnsignedAndSigned) {
  const auto u = tir(1, {3}, DTypeKind::U64);
  put(u, {1, kU64Top, k2p63});
  reduce<OpKind::NumericInt_Max>(u, out(2, {1}, DTypeKind::U64));
  EXPECT_EQ(get(tir(2, {1}, DTypeKind::U64)), V{kU64Top});
  const auto x = tir(3, {2, 2}, DTypeKind::I8);
  put_transposed(x, {-128, -3, -4, -100});
  reduce<OpKind::NumericInt_Max>(x, out(4, {1}, DTypeKind::I8));
  EXPECT_EQ(get(tir(4, {1}, DTypeKind::I8)), V{-3});
}

class NumericFloat_Min : public ReduceTest {};
TEST_F(NumericFloat_Min, AllElementsNaNPropagates) {
  const auto x = tir(1, {3}, DTypeKind::F64);
  put(x, {3, -kInf, 2});
  reduce<OpKind::NumericFloat_Min>(x, out(2, {1}, DTypeKind::F64));
  EXPECT_EQ(get(tir(2, {1}, DTypeKind::F64)), V{-kInf});
  put(tir(3, {3}), {kNaN, -1, 5});
  reduce<OpKind::NumericFloat_Min>(tir(3, {3}), out(4, {1}));
  expect_near(get(tir(4, {1})), {kNaN});
}

class NumericInt_Min : public ReduceTest {};
TEST_F(NumericInt_Min, UnsignedAndEmpty) {
  const auto u = tir(1, {3}, DTypeKind::U64);
  put(u, {k2p63, 4, kU64Top});
  reduce<OpKind::NumericInt_Min>(u, out(2, {1}, DTypeKind::U64));
  EXPECT_EQ(get(tir(2, {1}, DTypeKind::U64)), V{4});
  const auto w = tir(3, {2}, DTypeKind::U32);
  put(w, {4294967295.0, 4294967294.0});
  reduce<OpKind::NumericInt_Min>(w, out(4, {1}, DTypeKind::U32));
  EXPECT_EQ(get(tir(4, {1}, DTypeKind::U32)), V{4294967294.0});
  put(tir(5, {0}, DTypeKind::I32), {});
  EXPECT_THAT(run_error(make_op<OpKind::NumericInt_Min>(
                  ReduceOpIr{tir(5, {0}, DTypeKind::I32), out(6, {1}, DTypeKind::I32)})),
              HasSubstr("empty tensor"));
}

// ---- MaxDim / MinDim / *WithIndices ------------------------------------------------------------

class NumericFloat_MaxDim : public ReduceTest {};
TEST_F(NumericFloat_MaxDim, AlongAnAxisNaNPropagates) {
  const auto x = tir(1, {2, 3});
  put_transposed(x, {1, 9, 3, 4, kNaN, 6});
  reduce_dim<OpKind::NumericFloat_MaxDim>(x, out(2, {2, 1}), 1);
  expect_near(get(tir(2, {2, 1})), {9, kNaN});
  reduce_dim<OpKind::NumericFloat_MaxDim>(x, out(3, {1, 3}), 0);
  expect_near(get(tir(3, {1, 3})), {4, kNaN, 6});
}

class NumericInt_MaxDim : public ReduceTest {};
TEST_F(NumericInt_MaxDim, U64AndEmptyDim) {
  const auto u = tir(1, {2, 2}, DTypeKind::U64);
  put(u, {k2p63, 3, 1, kU64Top});
  reduce_dim<OpKind::NumericInt_MaxDim>(u, out(2, {2, 1}, DTypeKind::U64), 1);
  EXPECT_EQ(get(tir(2, {2, 1}, DTypeKind::U64)), (V{k2p63, kU64Top}));
  put(tir(3, {0, 2}, DTypeKind::I32), {});
  reduce_dim<OpKind::NumericInt_MaxDim>(tir(3, {0, 2}, DTypeKind::I32),
                                        out(4, {0, 1}, DTypeKind::I32), 1);
  EXPECT_TRUE(get(tir(4, {0, 1}, DTypeKind::I32)).empty());
  EXPECT_THAT(run_error(make_op<OpKind::NumericInt_MaxDim>(ReduceDimOpIr{
                  tir(3, {0, 2}, DTypeKind::I32), out(5, {1, 2}, DTypeKind::I32), 0, 1})),
              HasSubstr("empty dimension"));
}

class NumericFloat_MinDim : public ReduceTest {};
TEST_F(NumericFloat_MinDim, AlongAnAxis) {
  const auto x = tir(1, {2, 3}, DTypeKind::F16);
  put(x, {1, -9, 3, 4, kNaN, 6});
  reduce_dim<OpKind::NumericFloat_MinDim>(x, out(2, {2, 1}, DTypeKind::F16), 1);
  expect_near(get(tir(2, {2, 1}, DTypeKind::F16)), {-9, kNaN});
}

class NumericInt_MinDim : public ReduceTest {};
TEST_F(NumericInt_MinDim, AlongAnAxis) {
  const auto x = tir(1, {2, 3}, DTypeKind::I16);
  put_transposed(x, {5, -2, 7, -32768, 0, 1});
  reduce_dim<OpKind::NumericInt_MinDim>(x, out(2, {1, 3}, DTypeKind::I16), 0);
  EXPECT_EQ(get(tir(2, {1, 3}, DTypeKind::I16)), (V{-32768, -2, 1}));
  const auto u = tir(3, {1, 3}, DTypeKind::U64);
  put(u, {kU64Top, k2p63, 2});
  reduce_dim<OpKind::NumericInt_MinDim>(u, out(4, {1, 1}, DTypeKind::U64), 1);
  EXPECT_EQ(get(tir(4, {1, 1}, DTypeKind::U64)), V{2});
}

class NumericFloat_MaxDimWithIndices : public ReduceTest {};
TEST_F(NumericFloat_MaxDimWithIndices, ValuesAndFirstIndices) {
  const auto x = tir(1, {2, 4});
  put(x, {2, 7, 7, 1, 0, kNaN, 3, kNaN});
  with_indices<OpKind::NumericFloat_MaxDimWithIndices>(x, 1, out(2, {2, 1}),
                                                       out(3, {2, 1}, DTypeKind::I32));
  expect_near(get(tir(2, {2, 1})), {7, kNaN});
  EXPECT_EQ(get(tir(3, {2, 1}, DTypeKind::I32)), (V{1, 1}));
}
TEST_F(NumericFloat_MaxDimWithIndices, NonContiguousAlongDimZero) {
  const auto x = tir(1, {3, 2}, DTypeKind::F64);
  put_transposed(x, {1, 6, 5, 6, 5, 2});
  with_indices<OpKind::NumericFloat_MaxDimWithIndices>(x, 0, out(2, {1, 2}, DTypeKind::F64),
                                                       out(3, {1, 2}, DTypeKind::I64));
  EXPECT_EQ(get(tir(2, {1, 2}, DTypeKind::F64)), (V{5, 6}));
  EXPECT_EQ(get(tir(3, {1, 2}, DTypeKind::I64)), (V{1, 0}));
}

class NumericInt_MaxDimWithIndices : public ReduceTest {};
TEST_F(NumericInt_MaxDimWithIndices, IndicesInTheTensorDType) {
  const auto u = tir(1, {1, 4}, DTypeKind::U64);
  put(u, {3, kU64Top, 9, kU64Top});
  with_indices<OpKind::NumericInt_MaxDimWithIndices>(u, 1, out(2, {1, 1}, DTypeKind::U64),
                                                     out(3, {1, 1}, DTypeKind::U64));
  EXPECT_EQ(get(tir(2, {1, 1}, DTypeKind::U64)), V{kU64Top});
  EXPECT_EQ(get(tir(3, {1, 1}, DTypeKind::U64)), V{1});
}

class NumericFloat_MinDimWithIndices : public ReduceTest {};
TEST_F(NumericFloat_MinDimWithIndices, ValuesAndFirstIndices) {
  const auto x = tir(1, {2, 3}, DTypeKind::BF16);
  put(x, {2, -1, -1, kNaN, -5, kNaN});
  with_indices<OpKind::NumericFloat_MinDimWithIndices>(x, 1, out(2, {2, 1}, DTypeKind::BF16),
                                                       out(3, {2, 1}, DTypeKind::I32));
  expect_near(get(tir(2, {2, 1}, DTypeKind::BF16)), {-1, kNaN});
  EXPECT_EQ(get(tir(3, {2, 1}, DTypeKind::I32)), (V{1, 0}));
}

class NumericInt_MinDimWithIndices : public ReduceTest {};
TEST_F(NumericInt_MinDimWithIndices, ValuesAndFirstIndices) {
  const auto x = tir(1, {2, 3}, DTypeKind::I32);
  put_transposed(x, {4, 2, 2, -1, 8, -1});
  with_indices<OpKind::NumericInt_MinDimWithIndices>(x, 1, out(2, {2, 1}, DTypeKind::I32),
                                                     out(3, {2, 1}, DTypeKind::I32));
  EXPECT_EQ(get(tir(2, {2, 1}, DTypeKind::I32)), (V{2, -1}));
  EXPECT_EQ(get(tir(3, {2, 1}, DTypeKind::I32)), (V{1, 0}));
  const auto u = tir(4, {3, 1}, DTypeKind::U64);
  put(u, {k2p63, kU64Top, 10});
  with_indices<OpKind::NumericInt_MinDimWithIndices>(u, 0, out(5, {1, 1}, DTypeKind::U64),
                                                     out(6, {1, 1}, DTypeKind::U64));
  EXPECT_EQ(get(tir(5, {1, 1}, DTypeKind::U64)), V{10});
  EXPECT_EQ(get(tir(6, {1, 1}, DTypeKind::U64)), V{2});
}

// ---- MaxAbs / MaxAbsDim ------------------------------------------------------------------------

class NumericFloat_MaxAbs : public ReduceTest {};
TEST_F(NumericFloat_MaxAbs, AbsoluteValueAndNaN) {
  const auto x = tir(1, {3});
  put(x, {-5, 3, 4});
  reduce<OpKind::NumericFloat_MaxAbs>(x, out(2, {1}));
  EXPECT_EQ(get(tir(2, {1})), V{5});
  put(tir(3, {2}, DTypeKind::F16), {kNaN, -2});
  reduce<OpKind::NumericFloat_MaxAbs>(tir(3, {2}, DTypeKind::F16), out(4, {1}, DTypeKind::F16));
  expect_near(get(tir(4, {1}, DTypeKind::F16)), {kNaN});
}

class NumericInt_MaxAbs : public ReduceTest {};
TEST_F(NumericInt_MaxAbs, WrappingAbsAndUnsignedIdentity) {
  const std::vector<std::tuple<DType, V, double>> cases = {
      {DTypeKind::I32, {-7, 3}, 7},
      {DTypeKind::I8, {-128, 5}, 5},  // wrapping_abs(-128) = -128 < 5
      {DTypeKind::I8, {-128, -128}, -128},
      {DTypeKind::I64, {-9007199254740992.0, 1}, 9007199254740992.0},
      {DTypeKind::U64, {k2p63, 1}, k2p63},  // no abs of the bit pattern
      {DTypeKind::U8, {200, 7}, 200},
  };
  std::uint64_t id = 1;
  for (const auto& [dtype, values, expected] : cases) {
    const auto x = tir(id++, {values.size()}, dtype);
    put(x, values);
    const auto o = out(id++, {1}, dtype);
    reduce<OpKind::NumericInt_MaxAbs>(x, o);
    EXPECT_EQ(get(o), V{expected}) << dtype.name();
  }
}

class NumericFloat_MaxAbsDim : public ReduceTest {};
TEST_F(NumericFloat_MaxAbsDim, AlongAnAxis) {
  const auto x = tir(1, {2, 3});
  put_transposed(x, {-5, 3, 4, 1, -2, -0.5});
  reduce_dim<OpKind::NumericFloat_MaxAbsDim>(x, out(2, {2, 1}), 1);
  EXPECT_EQ(get(tir(2, {2, 1})), (V{5, 2}));
  reduce_dim<OpKind::NumericFloat_MaxAbsDim>(x, out(3, {1, 3}), 0);
  EXPECT_EQ(get(tir(3, {1, 3})), (V{5, 3, 4}));
}

class NumericInt_MaxAbsDim : public ReduceTest {};
TEST_F(NumericInt_MaxAbsDim, WrappingAbs) {
  const auto x = tir(1, {2, 2}, DTypeKind::I16);
  put(x, {-32768, 7, -9, 2});
  reduce_dim<OpKind::NumericInt_MaxAbsDim>(x, out(2, {2, 1}, DTypeKind::I16), 1);
  EXPECT_EQ(get(tir(2, {2, 1}, DTypeKind::I16)), (V{7, 9}));
  const auto u = tir(3, {1, 2}, DTypeKind::U64);
  put(u, {5, kU64Top});
  reduce_dim<OpKind::NumericInt_MaxAbsDim>(u, out(4, {1, 1}, DTypeKind::U64), 1);
  EXPECT_EQ(get(tir(4, {1, 1}, DTypeKind::U64)), V{kU64Top});
}

// ---- TopK / ArgTopK / TopKWithIndices ----------------------------------------------------------

class NumericFloat_TopK : public ReduceTest {};
TEST_F(NumericFloat_TopK, LargestFirstNaNOnTopKInAccumulatorLen) {
  const auto x = tir(1, {2, 5});
  put(x, {1, 5, 3, 5, kNaN,  //
          -0.0, 0.0, -1, 2, -kInf});
  reduce_dim<OpKind::NumericFloat_TopK>(x, out(2, {2, 3}), 1, 3);
  const auto v = get(tir(2, {2, 3}));
  expect_near(v, {kNaN, 5, 5, 2, 0, -0.0});
  EXPECT_EQ(signbits(V(v.begin() + 3, v.end())), (std::vector<bool>{false, false, true}))
      << "total order: +0 above -0";
}
TEST_F(NumericFloat_TopK, AlongDimZeroNonContiguousAndKTooLarge) {
  const auto x = tir(1, {3, 2}, DTypeKind::F16);
  put_transposed(x, {1, 6, 5, 2, 3, 4});
  reduce_dim<OpKind::NumericFloat_TopK>(x, out(2, {2, 2}, DTypeKind::F16), 0, 2);
  EXPECT_EQ(get(tir(2, {2, 2}, DTypeKind::F16)), (V{5, 6, 3, 4}));
  reduce_dim<OpKind::NumericFloat_TopK>(x, out(3, {0, 2}, DTypeKind::F16), 0, 0);
  EXPECT_TRUE(get(tir(3, {0, 2}, DTypeKind::F16)).empty());
  EXPECT_THAT(run_error(make_op<OpKind::NumericFloat_TopK>(
                  ReduceDimOpIr{x, out(4, {4, 2}, DTypeKind::F16), 0, 4}, DTypeKind::F16)),
              HasSubstr("k = 4 exceeds"));
}

class NumericInt_TopK : public ReduceTest {};
TEST_F(NumericInt_TopK, U64AndSigned) {
  const auto u = tir(1, {4}, DTypeKind::U64);
  put(u, {3, kU64Top, k2p63, 9});
  reduce_dim<OpKind::NumericInt_TopK>(u, out(2, {3}, DTypeKind::U64), 0, 3);
  EXPECT_EQ(get(tir(2, {3}, DTypeKind::U64)), (V{kU64Top, k2p63, 9}));
  const auto x = tir(3, {4}, DTypeKind::I8);
  put(x, {-128, 127, -1, 0});
  reduce_dim<OpKind::NumericInt_TopK>(x, out(4, {2}, DTypeKind::I8), 0, 2);
  EXPECT_EQ(get(tir(4, {2}, DTypeKind::I8)), (V{127, 0}));
}

class NumericFloat_ArgTopK : public ReduceTest {};
TEST_F(NumericFloat_ArgTopK, TiesLowestIndexFirst) {
  const auto x = tir(1, {2, 4});
  put(x, {3, 1, 3, 2, 7, 7, 7, 7});
  reduce_dim<OpKind::NumericFloat_ArgTopK>(x, out(2, {2, 3}, DTypeKind::I32), 1, 3);
  EXPECT_EQ(get(tir(2, {2, 3}, DTypeKind::I32)), (V{0, 2, 3, 0, 1, 2}));
}
TEST_F(NumericFloat_ArgTopK, AlongDimZero) {
  const auto x = tir(1, {3, 2}, DTypeKind::F64);
  put_transposed(x, {1, kNaN, 4, 0, 4, 2});
  reduce_dim<OpKind::NumericFloat_ArgTopK>(x, out(2, {2, 2}, DTypeKind::I64), 0, 2);
  EXPECT_EQ(get(tir(2, {2, 2}, DTypeKind::I64)), (V{1, 0, 2, 2}));
}

class NumericInt_ArgTopK : public ReduceTest {};
TEST_F(NumericInt_ArgTopK, TiesAndU64) {
  const auto x = tir(1, {5}, DTypeKind::I32);
  put(x, {4, 9, 4, 9, 1});
  reduce_dim<OpKind::NumericInt_ArgTopK>(x, out(2, {4}, DTypeKind::I32), 0, 4);
  EXPECT_EQ(get(tir(2, {4}, DTypeKind::I32)), (V{1, 3, 0, 2}));
  const auto u = tir(3, {3}, DTypeKind::U64);
  put(u, {5, k2p63, 6});
  reduce_dim<OpKind::NumericInt_ArgTopK>(u, out(4, {1}, DTypeKind::U64), 0, 1);
  EXPECT_EQ(get(tir(4, {1}, DTypeKind::U64)), V{1});
}

class NumericFloat_TopKWithIndices : public ReduceTest {};
TEST_F(NumericFloat_TopKWithIndices, ValuesAndIndices) {
  const auto x = tir(1, {2, 3});
  put_transposed(x, {2, 8, 2, kNaN, 1, 1});
  run(make_op<OpKind::NumericFloat_TopKWithIndices>(
      TopKWithIndicesOpIr{x, 1, 2, out(2, {2, 2}), out(3, {2, 2}, DTypeKind::I32)}));
  expect_near(get(tir(2, {2, 2})), {8, 2, kNaN, 1});
  EXPECT_EQ(get(tir(3, {2, 2}, DTypeKind::I32)), (V{1, 0, 0, 1}));
}

class NumericInt_TopKWithIndices : public ReduceTest {};
TEST_F(NumericInt_TopKWithIndices, ValuesAndIndices) {
  const auto x = tir(1, {2, 2}, DTypeKind::U16);
  put(x, {65535, 3, 3, 3});
  run(make_op<OpKind::NumericInt_TopKWithIndices>(
      TopKWithIndicesOpIr{x, 0, 1, out(2, {1, 2}, DTypeKind::U16), out(3, {1, 2}, DTypeKind::U16)},
      DTypeKind::U16));
  EXPECT_EQ(get(tir(2, {1, 2}, DTypeKind::U16)), (V{65535, 3}));
  EXPECT_EQ(get(tir(3, {1, 2}, DTypeKind::U16)), (V{0, 0}));
}

TEST_F(NumericInt_TopKWithIndices, ReadWriteInputIsFreed) {
  const auto x = tir(1, {3}, DTypeKind::I64);
  put(x, {-1, 8, 3});
  run(make_op<OpKind::NumericInt_TopKWithIndices>(
      TopKWithIndicesOpIr{rw(x), 0, 2, out(2, {2}, DTypeKind::I64), out(3, {2}, DTypeKind::I64)},
      DTypeKind::I64));
  EXPECT_EQ(get(tir(2, {2}, DTypeKind::I64)), (V{8, 3}));
  EXPECT_EQ(get(tir(3, {2}, DTypeKind::I64)), (V{1, 2}));
  EXPECT_EQ(exec->stats().live_tensors, 2u);
}

// ---- CumSum / CumProd / CumMin / CumMax --------------------------------------------------------

class NumericFloat_CumSum : public ReduceTest {};
TEST_F(NumericFloat_CumSum, AlongEachAxisNonContiguous) {
  const auto x = tir(1, {2, 3});
  put_transposed(x, {1, 2, 3, 4, 5, 6});
  cumulative<OpKind::NumericFloat_CumSum>(x, out(2, {2, 3}), 1);
  EXPECT_EQ(get(tir(2, {2, 3})), (V{1, 3, 6, 4, 9, 15}));
  cumulative<OpKind::NumericFloat_CumSum>(x, out(3, {2, 3}), 0);
  EXPECT_EQ(get(tir(3, {2, 3})), (V{1, 2, 3, 5, 7, 9}));
}
TEST_F(NumericFloat_CumSum, HalfAccumulatesInF32AndEmpty) {
  // f16: 2048 + 1 = 2048, then + 1 = 2048 again; Burn keeps an f32 accumulator: 2049 -> 2048
  // (ties to even) and 2050.
  const auto x = tir(1, {3}, DTypeKind::F16);
  put(x, {2048, 1, 1});
  cumulative<OpKind::NumericFloat_CumSum>(x, out(2, {3}, DTypeKind::F16), 0);
  EXPECT_EQ(get(tir(2, {3}, DTypeKind::F16)), (V{2048, 2048, 2050}));
  put(tir(3, {0, 2}), {});
  cumulative<OpKind::NumericFloat_CumSum>(tir(3, {0, 2}), out(4, {0, 2}), 1);
  EXPECT_TRUE(get(tir(4, {0, 2})).empty());
}

class NumericInt_CumSum : public ReduceTest {};
TEST_F(NumericInt_CumSum, WrapsInTheTensorDType) {
  const auto x = tir(1, {3}, DTypeKind::I8);
  put(x, {100, 100, -50});
  cumulative<OpKind::NumericInt_CumSum>(x, out(2, {3}, DTypeKind::I8), 0);
  EXPECT_EQ(get(tir(2, {3}, DTypeKind::I8)), (V{100, -56, -106}));
  const auto u = tir(3, {2}, DTypeKind::U64);
  put(u, {kU64Top, 4096});
  cumulative<OpKind::NumericInt_CumSum>(u, out(4, {2}, DTypeKind::U64), 0);
  EXPECT_EQ(get(tir(4, {2}, DTypeKind::U64)), (V{kU64Top, 2048}));
  const auto w = tir(5, {2, 2}, DTypeKind::U16);
  put(w, {65535, 1, 2, 3});
  cumulative<OpKind::NumericInt_CumSum>(w, out(6, {2, 2}, DTypeKind::U16), 0);
  EXPECT_EQ(get(tir(6, {2, 2}, DTypeKind::U16)), (V{65535, 1, 1, 4}));
}

class NumericFloat_CumProd : public ReduceTest {};
TEST_F(NumericFloat_CumProd, AlongAnAxis) {
  const auto x = tir(1, {2, 3}, DTypeKind::F64);
  put(x, {1, 2, 3, -1, 0.5, 4});
  cumulative<OpKind::NumericFloat_CumProd>(x, out(2, {2, 3}, DTypeKind::F64), 1);
  EXPECT_EQ(get(tir(2, {2, 3}, DTypeKind::F64)), (V{1, 2, 6, -1, -0.5, -2}));
  const auto h = tir(3, {3}, DTypeKind::F16);
  put(h, {256, 256, 1.0 / 512});
  cumulative<OpKind::NumericFloat_CumProd>(h, out(4, {3}, DTypeKind::F16), 0);
  EXPECT_EQ(get(tir(4, {3}, DTypeKind::F16)), (V{256, kInf, 128}))
      << "the f32 accumulator survives an f16 overflow";
}

class NumericInt_CumProd : public ReduceTest {};
TEST_F(NumericInt_CumProd, WrapsInTheTensorDType) {
  const auto x = tir(1, {3}, DTypeKind::I16);
  put(x, {256, 256, 3});
  cumulative<OpKind::NumericInt_CumProd>(x, out(2, {3}, DTypeKind::I16), 0);
  EXPECT_EQ(get(tir(2, {3}, DTypeKind::I16)), (V{256, 0, 0}));
  const auto u = tir(3, {3}, DTypeKind::U8);
  put(u, {16, 17, 2});
  cumulative<OpKind::NumericInt_CumProd>(u, out(4, {3}, DTypeKind::U8), 0);
  EXPECT_EQ(get(tir(4, {3}, DTypeKind::U8)), (V{16, 16, 32}));
}

class NumericFloat_CumMin : public ReduceTest {};
TEST_F(NumericFloat_CumMin, NaNSticksFirstZeroKept) {
  const auto x = tir(1, {2, 4});
  put(x, {3, 1, 2, 0.5,  //
          2, kNaN, -1, 5});
  cumulative<OpKind::NumericFloat_CumMin>(x, out(2, {2, 4}), 1);
  expect_near(get(tir(2, {2, 4})), {3, 1, 1, 0.5, 2, kNaN, kNaN, kNaN});
  const auto z = tir(3, {4});
  put(z, {1, 0.0, -0.0, 2});
  cumulative<OpKind::NumericFloat_CumMin>(z, out(4, {4}), 0);
  const auto v = get(tir(4, {4}));
  EXPECT_EQ(v, (V{1, 0, 0, 0}));
  EXPECT_EQ(signbits(v), (std::vector<bool>{false, false, false, false}))
      << "Burn keeps the first of equal values (+0), ATen the last";
}
TEST_F(NumericFloat_CumMin, NonContiguousHalf) {
  const auto x = tir(1, {2, 3}, DTypeKind::BF16);
  put_transposed(x, {3, 1, 2, -1, 5, -2});
  cumulative<OpKind::NumericFloat_CumMin>(x, out(2, {2, 3}, DTypeKind::BF16), 0);
  EXPECT_EQ(get(tir(2, {2, 3}, DTypeKind::BF16)), (V{3, 1, 2, -1, 1, -2}));
}

class NumericInt_CumMin : public ReduceTest {};
TEST_F(NumericInt_CumMin, SignedAndU64) {
  const auto x = tir(1, {4}, DTypeKind::I32);
  put(x, {5, 7, -2, 0});
  cumulative<OpKind::NumericInt_CumMin>(x, out(2, {4}, DTypeKind::I32), 0);
  EXPECT_EQ(get(tir(2, {4}, DTypeKind::I32)), (V{5, 5, -2, -2}));
  const auto u = tir(3, {4}, DTypeKind::U64);
  put(u, {kU64Top, k2p63, 1, kU64Top});
  cumulative<OpKind::NumericInt_CumMin>(u, out(4, {4}, DTypeKind::U64), 0);
  EXPECT_EQ(get(tir(4, {4}, DTypeKind::U64)), (V{kU64Top, k2p63, 1, 1}));
}

class NumericFloat_CumMax : public ReduceTest {};
TEST_F(NumericFloat_CumMax, NaNSticksFirstZeroKept) {
  const auto x = tir(1, {2, 3});
  put_transposed(x, {1, kNaN, 0, 3, 2, 5});
  cumulative<OpKind::NumericFloat_CumMax>(x, out(2, {2, 3}), 1);
  expect_near(get(tir(2, {2, 3})), {1, kNaN, kNaN, 3, 3, 5});
  const auto z = tir(3, {5}, DTypeKind::F64);
  put(z, {-1, -0.0, 0.0, 0.0, -3});
  cumulative<OpKind::NumericFloat_CumMax>(z, out(4, {5}, DTypeKind::F64), 0);
  const auto v = get(tir(4, {5}, DTypeKind::F64));
  EXPECT_EQ(v, (V{-1, 0, 0, 0, 0}));
  EXPECT_EQ(signbits(v), (std::vector<bool>{true, true, true, true, true}))
      << "Burn keeps the first of equal values (-0), ATen the last";
}

class NumericInt_CumMax : public ReduceTest {};
TEST_F(NumericInt_CumMax, AlongAnAxisAndU64) {
  const auto x = tir(1, {2, 2}, DTypeKind::I8);
  put(x, {-128, 5, 127, -1});
  cumulative<OpKind::NumericInt_CumMax>(x, out(2, {2, 2}, DTypeKind::I8), 0);
  EXPECT_EQ(get(tir(2, {2, 2}, DTypeKind::I8)), (V{-128, 5, 127, 5}));
  const auto u = tir(3, {4}, DTypeKind::U64);
  put(u, {1, k2p63, 5, kU64Top});
  cumulative<OpKind::NumericInt_CumMax>(u, out(4, {4}, DTypeKind::U64), 0);
  EXPECT_EQ(get(tir(4, {4}, DTypeKind::U64)), (V{1, k2p63, k2p63, kU64Top}));
}

// ---- Sort / SortWithIndices / ArgSort ----------------------------------------------------------

class NumericFloat_Sort : public ReduceTest {};
TEST_F(NumericFloat_Sort, TotalOrderAscendingAndDescending) {
  const auto x = tir(1, {7});
  put(x, {3, kNaN, 0.0, -0.0, -kInf, 1, -kNaN});
  sort<OpKind::NumericFloat_Sort>(x, 0, false, out(2, {7}));
  const auto asc = get(tir(2, {7}));
  expect_near(asc, {kNaN, -kInf, 0, 0, 1, 3, kNaN});
  EXPECT_EQ(signbits(asc), (std::vector<bool>{true, true, true, false, false, false, false}))
      << "-NaN < -inf < -0 < +0 < ... < +NaN";
  sort<OpKind::NumericFloat_Sort>(x, 0, true, out(3, {7}));
  const auto desc = get(tir(3, {7}));
  expect_near(desc, {kNaN, 3, 1, 0, 0, -kInf, kNaN});
  EXPECT_EQ(signbits(desc), (std::vector<bool>{false, false, false, false, true, true, true}));
}
TEST_F(NumericFloat_Sort, AlongDimZeroNonContiguousHalfAndEmpty) {
  const auto x = tir(1, {3, 2}, DTypeKind::F16);
  put_transposed(x, {3, -1, 1, 5, 2, kNaN});
  sort<OpKind::NumericFloat_Sort>(x, 0, false, out(2, {3, 2}, DTypeKind::F16));
  expect_near(get(tir(2, {3, 2}, DTypeKind::F16)), {1, -1, 2, 5, 3, kNaN});
  put(tir(3, {0, 4}), {});
  sort<OpKind::NumericFloat_Sort>(tir(3, {0, 4}), 1, false, out(4, {0, 4}));
  EXPECT_TRUE(get(tir(4, {0, 4})).empty());
  put(tir(5, {}), {1});
  EXPECT_THAT(
      run_error(make_op<OpKind::NumericFloat_Sort>(SortOpIr{tir(5, {}), 0, false, out(6, {})})),
      HasSubstr("out of range"));
}

class NumericInt_Sort : public ReduceTest {};
TEST_F(NumericInt_Sort, SignedUnsignedAndU64) {
  const auto x = tir(1, {2, 3}, DTypeKind::I8);
  put(x, {5, -128, 127, 0, -1, 0});
  sort<OpKind::NumericInt_Sort>(x, 1, false, out(2, {2, 3}, DTypeKind::I8));
  EXPECT_EQ(get(tir(2, {2, 3}, DTypeKind::I8)), (V{-128, 5, 127, -1, 0, 0}));
  const auto u = tir(3, {4}, DTypeKind::U64);
  put(u, {k2p63, 2, kU64Top, 0});
  sort<OpKind::NumericInt_Sort>(u, 0, true, out(4, {4}, DTypeKind::U64));
  EXPECT_EQ(get(tir(4, {4}, DTypeKind::U64)), (V{kU64Top, k2p63, 2, 0}));
  const auto w = tir(5, {3}, DTypeKind::U32);
  put(w, {4294967295.0, 1, 2147483648.0});
  sort<OpKind::NumericInt_Sort>(w, 0, false, out(6, {3}, DTypeKind::U32));
  EXPECT_EQ(get(tir(6, {3}, DTypeKind::U32)), (V{1, 2147483648.0, 4294967295.0}));
}

class NumericFloat_SortWithIndices : public ReduceTest {};
TEST_F(NumericFloat_SortWithIndices, StableBothWays) {
  const auto x = tir(1, {6});
  put(x, {1, 3, 3, 2, 3, 1});
  sort_with_indices(OpCategory::NumericFloat, x, 0, false, out(2, {6}),
                    out(3, {6}, DTypeKind::I32));
  EXPECT_EQ(get(tir(2, {6})), (V{1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(get(tir(3, {6}, DTypeKind::I32)), (V{0, 5, 3, 1, 2, 4}));
  sort_with_indices(OpCategory::NumericFloat, x, 0, true, out(4, {6}), out(5, {6}, DTypeKind::I64));
  EXPECT_EQ(get(tir(4, {6})), (V{3, 3, 3, 2, 1, 1}));
  EXPECT_EQ(get(tir(5, {6}, DTypeKind::I64)), (V{1, 2, 4, 3, 0, 5}));
}
TEST_F(NumericFloat_SortWithIndices, NonContiguousAlongDimZero) {
  const auto x = tir(1, {3, 2}, DTypeKind::F64);
  put_transposed(x, {2, kNaN, 1, 0, 2, -0.0});
  sort_with_indices(OpCategory::NumericFloat, x, 0, false, out(2, {3, 2}, DTypeKind::F64),
                    out(3, {3, 2}, DTypeKind::I32));
  expect_near(get(tir(2, {3, 2}, DTypeKind::F64)), {1, -0.0, 2, 0, 2, kNaN});
  EXPECT_EQ(get(tir(3, {3, 2}, DTypeKind::I32)), (V{1, 2, 0, 1, 2, 0}));
}

class NumericInt_SortWithIndices : public ReduceTest {};
TEST_F(NumericInt_SortWithIndices, StableAndU64) {
  const auto x = tir(1, {5}, DTypeKind::I16);
  put(x, {4, -2, 4, -2, 0});
  sort_with_indices(OpCategory::NumericInt, x, 0, true, out(2, {5}, DTypeKind::I16),
                    out(3, {5}, DTypeKind::I16));
  EXPECT_EQ(get(tir(2, {5}, DTypeKind::I16)), (V{4, 4, 0, -2, -2}));
  EXPECT_EQ(get(tir(3, {5}, DTypeKind::I16)), (V{0, 2, 4, 1, 3}));
  const auto u = tir(4, {3}, DTypeKind::U64);
  put(u, {kU64Top, 3, k2p63});
  sort_with_indices(OpCategory::NumericInt, u, 0, false, out(5, {3}, DTypeKind::U64),
                    out(6, {3}, DTypeKind::U64));
  EXPECT_EQ(get(tir(5, {3}, DTypeKind::U64)), (V{3, k2p63, kU64Top}));
  EXPECT_EQ(get(tir(6, {3}, DTypeKind::U64)), (V{1, 2, 0}));
}

class NumericFloat_ArgSort : public ReduceTest {};
TEST_F(NumericFloat_ArgSort, StableIndicesInDeclaredDType) {
  const auto x = tir(1, {2, 4});
  put(x, {2, 1, 2, 1, kNaN, -kInf, 0.0, -0.0});
  sort<OpKind::NumericFloat_ArgSort>(x, 1, false, out(2, {2, 4}, DTypeKind::I32));
  EXPECT_EQ(get(tir(2, {2, 4}, DTypeKind::I32)), (V{1, 3, 0, 2, 1, 3, 2, 0}));
  sort<OpKind::NumericFloat_ArgSort>(x, 1, true, out(3, {2, 4}, DTypeKind::U32));
  EXPECT_EQ(get(tir(3, {2, 4}, DTypeKind::U32)), (V{0, 2, 1, 3, 0, 2, 3, 1}));
}

class NumericInt_ArgSort : public ReduceTest {};
TEST_F(NumericInt_ArgSort, NonContiguousAndU64) {
  const auto x = tir(1, {2, 3}, DTypeKind::I64);
  put_transposed(x, {3, 3, 1, 0, -5, 0});
  sort<OpKind::NumericInt_ArgSort>(x, 1, false, out(2, {2, 3}, DTypeKind::I64));
  EXPECT_EQ(get(tir(2, {2, 3}, DTypeKind::I64)), (V{2, 0, 1, 1, 0, 2}));
  const auto u = tir(3, {4}, DTypeKind::U64);
  put(u, {k2p63, 1, kU64Top, 1});
  sort<OpKind::NumericInt_ArgSort>(u, 0, true, out(4, {4}, DTypeKind::U64));
  EXPECT_EQ(get(tir(4, {4}, DTypeKind::U64)), (V{2, 0, 1, 3}));
}

}  // namespace
}  // namespace tb::test
