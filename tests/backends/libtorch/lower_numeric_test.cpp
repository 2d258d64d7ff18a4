// NumericFloat / NumericInt element-wise leaves: arithmetic, comparisons, abs/neg/sign, clamps,
// powi, full, int random and pad. Expected values follow burn-flex 0.22.1 (Burn's reference CPU
// backend), computed by hand.
#include <gmock/gmock.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>

#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kTwo63 = std::uint64_t{1} << 63;
constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
using V = std::vector<double>;
using U = std::vector<std::uint64_t>;

class NumericTest : public OpTest {
 protected:
  std::uint64_t next_id() { return id_++; }

  // A fresh input tensor holding `values`.
  TensorIr in(Dims dims, DType dtype, const V& values) {
    const auto t = tir(next_id(), std::move(dims), dtype);
    put(t, values);
    return t;
  }
  // A fresh U64 (or I64) input from exact 64-bit patterns.
  TensorIr in64(Dims dims, DType dtype, const U& bits) {
    const auto t = tir(next_id(), std::move(dims), dtype);
    std::vector<std::uint8_t> bytes(bits.size() * 8);
    std::memcpy(bytes.data(), bits.data(), bytes.size());
    auto s = exec->register_tensor(
        t.id, TensorData{Bytes::from_vector(std::move(bytes)), t.shape.dims, dtype});
    EXPECT_TRUE(s);
    return t;
  }
  // A fresh output id.
  TensorIr o(Dims dims, DType dtype) { return out(next_id(), std::move(dims), dtype); }

  // The 64-bit patterns of an I64/U64 tensor.
  U get64(const TensorIr& t) {
    TensorIr read = t;
    read.status = TensorStatus::ReadOnly;
    auto data = exec->read_tensor(read);
    EXPECT_TRUE(data);
    if (!data) return {};
    EXPECT_EQ(data.value().dtype, t.dtype);
    EXPECT_EQ(data.value().shape, t.shape.dims);
    U out(data.value().bytes.size() / 8);
    std::memcpy(out.data(), data.value().bytes.data(), out.size() * 8);
    return out;
  }

  template <OpKind K>
  V binary(const TensorIr& l, const TensorIr& r, Dims od, DType odt) {
    const auto out_t = o(std::move(od), odt);
    run(make_op<K>(BinaryOpIr{l, r, out_t}, l.dtype));
    return get(out_t);
  }
  template <OpKind K>
  U binary64(const TensorIr& l, const TensorIr& r, Dims od, DType odt) {
    const auto out_t = o(std::move(od), odt);
    run(make_op<K>(BinaryOpIr{l, r, out_t}, l.dtype));
    return get64(out_t);
  }
  template <OpKind K>
  std::string binary_error(const TensorIr& l, const TensorIr& r, Dims od) {
    return run_error(make_op<K>(BinaryOpIr{l, r, o(std::move(od), l.dtype)}, l.dtype));
  }
  template <OpKind K>
  V scalar(const TensorIr& l, ScalarIr s, DType odt) {
    const auto out_t = o(l.shape.dims, odt);
    run(make_op<K>(ScalarOpIr{l, s, out_t}, l.dtype));
    return get(out_t);
  }
  template <OpKind K>
  V scalar(const TensorIr& l, ScalarIr s) {
    return scalar<K>(l, s, l.dtype);
  }
  template <OpKind K>
  U scalar64(const TensorIr& l, ScalarIr s) {
    const auto out_t = o(l.shape.dims, l.dtype);
    run(make_op<K>(ScalarOpIr{l, s, out_t}, l.dtype));
    return get64(out_t);
  }
  template <OpKind K>
  std::string scalar_error(const TensorIr& l, ScalarIr s) {
    return run_error(make_op<K>(ScalarOpIr{l, s, o(l.shape.dims, l.dtype)}, l.dtype));
  }
  template <OpKind K>
  V unary(const TensorIr& x) {
    const auto out_t = o(x.shape.dims, x.dtype);
    run(make_op<K>(UnaryOpIr{x, out_t}, x.dtype));
    return get(out_t);
  }
  template <OpKind K>
  U unary64(const TensorIr& x) {
    const auto out_t = o(x.shape.dims, x.dtype);
    run(make_op<K>(UnaryOpIr{x, out_t}, x.dtype));
    return get64(out_t);
  }
  template <OpKind K>
  V clamp(const TensorIr& x, ScalarIr lo, ScalarIr hi) {
    const auto out_t = o(x.shape.dims, x.dtype);
    run(make_op<K>(ClampOpIr{x, lo, hi, out_t}, x.dtype));
    return get(out_t);
  }
  template <OpKind K>
  V full(Dims dims, DType dtype, ScalarIr value) {
    const auto out_t = o(std::move(dims), dtype);
    run(make_op<K>(FullOpIr{out_t, value}, dtype));
    return get(out_t);
  }
  template <OpKind K>
  TensorIr random(Dims dims, DType dtype, Distribution dist) {
    const auto out_t = o(std::move(dims), dtype);
    run(make_op<K>(RandomOpIr{out_t, dist}, dtype));
    return ro(out_t);
  }
  template <OpKind K>
  V pad(const TensorIr& x, std::vector<UsizePair> padding, PadModeIr mode, Dims od) {
    const auto out_t = o(std::move(od), x.dtype);
    run(make_op<K>(PadOpIr{x, out_t, std::move(padding), mode}, x.dtype));
    return get(out_t);
  }

  std::uint64_t id_ = 1;
};

PadModeIr constant(ScalarIr v) {
  PadModeIr m;
  m.kind = PadModeKind::Constant;
  m.value = v;
  return m;
}
PadModeIr reflect() {
  PadModeIr m;
  m.kind = PadModeKind::Reflect;
  return m;
}
PadModeIr edge() {
  PadModeIr m;
  m.kind = PadModeKind::Edge;
  return m;
}
Distribution dist(DistributionKind kind, double a = 0, double b = 0) {
  return Distribution{kind, a, b};
}

std::vector<bool> signbits(const V& v) {
  std::vector<bool> out;
  for (double x : v) out.push_back(std::signbit(x));
  return out;
}

double mean(const V& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// ---- Add / AddScalar ---------------------------------------------------------------------------

class NumericFloat_Add : public NumericTest {};
TEST_F(NumericFloat_Add, BroadcastsAcrossDTypes) {
  for (DType dt : {kF32, kF64, kF16, kBF16}) {
    const auto a = in({2, 1}, dt, {1, 2});
    const auto b = in({1, 3}, dt, {10, 20, 30});
    EXPECT_EQ((binary<OpKind::NumericFloat_Add>(a, b, {2, 3}, dt)), (V{11, 21, 31, 12, 22, 32}))
        << dt.name();
  }
}
TEST_F(NumericFloat_Add, HalfRoundsOnceFromF32) {
  // 2050 + 0.5 + 0.25 in f16 (ulp 2 here): 2050.75 rounds to 2050.
  const auto a = in({2}, kF16, {2050, 0.5});
  const auto b = in({2}, kF16, {0.75, 0.25});
  EXPECT_EQ((binary<OpKind::NumericFloat_Add>(a, b, {2}, kF16)), (V{2050, 0.75}));
}
TEST_F(NumericFloat_Add, StridedReadWriteEmptyAndRankZero) {
  const auto a = in({2, 3}, kF32, {1, 2, 3, 4, 5, 6});
  const auto at = transposed(a);  // [[1,4],[2,5],[3,6]]
  const auto b = in({3, 2}, kF32, {10, 20, 30, 40, 50, 60});
  EXPECT_EQ((binary<OpKind::NumericFloat_Add>(at, rw(b), {3, 2}, kF32)),
            (V{11, 24, 32, 45, 53, 66}));
  EXPECT_FALSE(exec->read_tensor(b)) << "the ReadWrite input was freed";
  const auto e1 = in({0, 3}, kF32, {});
  const auto e2 = in({1, 3}, kF32, {1, 2, 3});
  EXPECT_TRUE((binary<OpKind::NumericFloat_Add>(e1, e2, {0, 3}, kF32)).empty());
  const auto s1 = in({}, kF64, {1.5});
  const auto s2 = in({}, kF64, {2.25});
  EXPECT_EQ((binary<OpKind::NumericFloat_Add>(s1, s2, {}, kF64)), (V{3.75}));
}

class NumericInt_Add : public NumericTest {};
TEST_F(NumericInt_Add, WrapsLikeRust) {
  EXPECT_EQ(
      (binary<OpKind::NumericInt_Add>(in({1}, kI32, {2147483647}), in({1}, kI32, {1}), {1}, kI32)),
      (V{-2147483648.0}));
  EXPECT_EQ(
      (binary<OpKind::NumericInt_Add>(in({2}, kI8, {127, -128}), in({2}, kI8, {1, -1}), {2}, kI8)),
      (V{-128, 127}));
  EXPECT_EQ((binary<OpKind::NumericInt_Add>(in({1}, kU8, {250}), in({1}, kU8, {10}), {1}, kU8)),
            (V{4}));
  EXPECT_EQ((binary<OpKind::NumericInt_Add>(in({1}, kU16, {65535}), in({1}, kU16, {2}), {1}, kU16)),
            (V{1}));
  EXPECT_EQ((binary<OpKind::NumericInt_Add>(in({1}, kU32, {4294967295.0}), in({1}, kU32, {3}), {1},
                                            kU32)),
            (V{2}));
  EXPECT_EQ((binary64<OpKind::NumericInt_Add>(in64({2}, kU64, {kU64Max, kTwo63}),
                                              in64({2}, kU64, {2, kTwo63}), {2}, kU64)),
            (U{1, 0}));
}
TEST_F(NumericInt_Add, Broadcasts) {
  const auto a = in({2, 1}, kI64, {1, 2});
  const auto b = in({3}, kI64, {10, 20, 30});
  EXPECT_EQ((binary<OpKind::NumericInt_Add>(a, b, {2, 3}, kI64)), (V{11, 21, 31, 12, 22, 32}));
}

class NumericFloat_AddScalar : public NumericTest {};
TEST_F(NumericFloat_AddScalar, ScalarIsRoundedToTheElementTypeFirst) {
  // burn-flex rounds 0.99999 to f16 (1.0) before adding: 2050 + 1 ties to even, 2052.
  // Adding the unrounded scalar would give 2050.
  EXPECT_EQ((scalar<OpKind::NumericFloat_AddScalar>(in({1}, kF16, {2050}), ScalarIr::f(0.99999))),
            (V{2052}));
  expect_near(scalar<OpKind::NumericFloat_AddScalar>(in({2}, kF32, {1, -1}), ScalarIr::i(2)),
              {3, 1});
  EXPECT_EQ((scalar<OpKind::NumericFloat_AddScalar>(in({1}, kF64, {0.1}), ScalarIr::f(0.2))),
            (V{0.1 + 0.2}));
  EXPECT_EQ((scalar<OpKind::NumericFloat_AddScalar>(in({1}, kF32, {1}), ScalarIr::f(1e300))),
            (V{kInf}));
}

class NumericInt_AddScalar : public NumericTest {};
TEST_F(NumericInt_AddScalar, ScalarIsNarrowedWithAs) {
  // 300 as i8 == 44.
  EXPECT_EQ((scalar<OpKind::NumericInt_AddScalar>(in({2}, kI8, {0, 100}), ScalarIr::i(300))),
            (V{44, -112}));
  EXPECT_EQ((scalar<OpKind::NumericInt_AddScalar>(in({2}, kU8, {0, 7}), ScalarIr::i(-1))),
            (V{255, 6}));
  EXPECT_EQ((scalar<OpKind::NumericInt_AddScalar>(in({1}, kU16, {65535}), ScalarIr::u(1))), (V{0}));
  EXPECT_EQ((scalar<OpKind::NumericInt_AddScalar>(in({1}, kI32, {5}), ScalarIr::f(2.7))), (V{7}));
  EXPECT_EQ((scalar<OpKind::NumericInt_AddScalar>(in({1}, kI32, {5}), ScalarIr::b(true))), (V{6}));
  EXPECT_EQ((scalar64<OpKind::NumericInt_AddScalar>(in64({2}, kU64, {1, kTwo63}),
                                                    ScalarIr::u(kTwo63 + 1))),
            (U{kTwo63 + 2, 1}));
  EXPECT_THAT((scalar_error<OpKind::NumericInt_AddScalar>(in({1}, kI32, {1}), ScalarIr::f(kNaN))),
              HasSubstr("cannot be represented as i32"));
}

// ---- Sub / SubScalar ---------------------------------------------------------------------------

class NumericFloat_Sub : public NumericTest {};
TEST_F(NumericFloat_Sub, ElementWiseAndBroadcast) {
  const auto a = in({2, 2}, kF32, {5, 6, 7, 8});
  const auto b = in({1, 2}, kF32, {1, 0.5});
  EXPECT_EQ((binary<OpKind::NumericFloat_Sub>(a, b, {2, 2}, kF32)), (V{4, 5.5, 6, 7.5}));
  EXPECT_EQ(
      (binary<OpKind::NumericFloat_Sub>(in({1}, kBF16, {1}), in({1}, kBF16, {0.5}), {1}, kBF16)),
      (V{0.5}));
}

class NumericInt_Sub : public NumericTest {};
TEST_F(NumericInt_Sub, WrapsForUnsignedKinds) {
  EXPECT_EQ((binary<OpKind::NumericInt_Sub>(in({1}, kU8, {3}), in({1}, kU8, {5}), {1}, kU8)),
            (V{254}));
  EXPECT_EQ((binary<OpKind::NumericInt_Sub>(in({1}, kU16, {0}), in({1}, kU16, {1}), {1}, kU16)),
            (V{65535}));
  EXPECT_EQ((binary<OpKind::NumericInt_Sub>(in({1}, kU32, {0}), in({1}, kU32, {1}), {1}, kU32)),
            (V{4294967295.0}));
  EXPECT_EQ(
      (binary64<OpKind::NumericInt_Sub>(in64({1}, kU64, {0}), in64({1}, kU64, {1}), {1}, kU64)),
      (U{kU64Max}));
  EXPECT_EQ(
      (binary<OpKind::NumericInt_Sub>(in({1}, kI16, {-32768}), in({1}, kI16, {1}), {1}, kI16)),
      (V{32767}));
}

class NumericFloat_SubScalar : public NumericTest {};
TEST_F(NumericFloat_SubScalar, Subtracts) {
  EXPECT_EQ((scalar<OpKind::NumericFloat_SubScalar>(in({2}, kF32, {1, 2}), ScalarIr::f(0.5))),
            (V{0.5, 1.5}));
  EXPECT_EQ((scalar<OpKind::NumericFloat_SubScalar>(in({1}, kF16, {1}), ScalarIr::u(3))), (V{-2}));
}

class NumericInt_SubScalar : public NumericTest {};
TEST_F(NumericInt_SubScalar, Wraps) {
  EXPECT_EQ((scalar<OpKind::NumericInt_SubScalar>(in({2}, kU32, {0, 10}), ScalarIr::i(1))),
            (V{4294967295.0, 9}));
  EXPECT_EQ(
      (scalar64<OpKind::NumericInt_SubScalar>(in64({1}, kU64, {kTwo63}), ScalarIr::u(kTwo63 + 1))),
      (U{kU64Max}));
  EXPECT_EQ((scalar<OpKind::NumericInt_SubScalar>(in({1}, kI64, {0}), ScalarIr::i(-7))), (V{7}));
}

// ---- Mul / MulScalar ---------------------------------------------------------------------------

class NumericFloat_Mul : public NumericTest {};
TEST_F(NumericFloat_Mul, MultipliesWithIeeeSpecials) {
  const auto a = in({4}, kF32, {2, -0.0, kInf, 3});
  const auto b = in({4}, kF32, {4, 5, 0, -0.5});
  const V r = binary<OpKind::NumericFloat_Mul>(a, b, {4}, kF32);
  expect_near(r, {8, -0.0, kNaN, -1.5});
  EXPECT_TRUE(std::signbit(r[1]));
}

class NumericInt_Mul : public NumericTest {};
TEST_F(NumericInt_Mul, WrapsLikeRust) {
  EXPECT_EQ((binary<OpKind::NumericInt_Mul>(in({1}, kI16, {300}), in({1}, kI16, {300}), {1}, kI16)),
            (V{24464}));
  EXPECT_EQ(
      (binary<OpKind::NumericInt_Mul>(in({1}, kI32, {65536}), in({1}, kI32, {65536}), {1}, kI32)),
      (V{0}));
  EXPECT_EQ(
      (binary<OpKind::NumericInt_Mul>(in({1}, kU16, {65535}), in({1}, kU16, {65535}), {1}, kU16)),
      (V{1}));
  EXPECT_EQ((binary<OpKind::NumericInt_Mul>(in({1}, kU32, {4294967295.0}),
                                            in({1}, kU32, {4294967295.0}), {1}, kU32)),
            (V{1}));
  EXPECT_EQ((binary64<OpKind::NumericInt_Mul>(in64({1}, kU64, {kTwo63 + 1}), in64({1}, kU64, {3}),
                                              {1}, kU64)),
            (U{kTwo63 + 3}));
  EXPECT_EQ((binary<OpKind::NumericInt_Mul>(in({1}, kU8, {16}), in({1}, kU8, {17}), {1}, kU8)),
            (V{16}));
}

class NumericFloat_MulScalar : public NumericTest {};
TEST_F(NumericFloat_MulScalar, Multiplies) {
  EXPECT_EQ((scalar<OpKind::NumericFloat_MulScalar>(in({2}, kF64, {1.5, -2}), ScalarIr::i(-2))),
            (V{-3, 4}));
  EXPECT_EQ((scalar<OpKind::NumericFloat_MulScalar>(in({1}, kBF16, {3}), ScalarIr::f(0.5))),
            (V{1.5}));
}

class NumericInt_MulScalar : public NumericTest {};
TEST_F(NumericInt_MulScalar, Wraps) {
  EXPECT_EQ((scalar<OpKind::NumericInt_MulScalar>(in({2}, kI8, {64, 3}), ScalarIr::i(2))),
            (V{-128, 6}));
  EXPECT_EQ((scalar64<OpKind::NumericInt_MulScalar>(in64({1}, kU64, {kTwo63 + 1}), ScalarIr::u(2))),
            (U{2}));
}

// ---- Div / DivScalar ---------------------------------------------------------------------------

class NumericFloat_Div : public NumericTest {};
TEST_F(NumericFloat_Div, TrueDivisionWithIeeeSpecials) {
  const auto a = in({4}, kF32, {1, -1, 0, 7});
  const auto b = in({4}, kF32, {0, 0, 0, 2});
  expect_near(binary<OpKind::NumericFloat_Div>(a, b, {4}, kF32), {kInf, -kInf, kNaN, 3.5});
  EXPECT_EQ((binary<OpKind::NumericFloat_Div>(in({1}, kF16, {1}), in({1}, kF16, {3}), {1}, kF16)),
            (V{static_cast<float>(c10::Half(1.0f / 3.0f))}));
}

class NumericInt_Div : public NumericTest {};
TEST_F(NumericInt_Div, TruncatesTowardZero) {
  const auto a = in({4}, kI32, {-7, 7, -7, 7});
  const auto b = in({4}, kI32, {2, -2, -2, 2});
  EXPECT_EQ((binary<OpKind::NumericInt_Div>(a, b, {4}, kI32)), (V{-3, -3, 3, 3}));
  EXPECT_EQ((binary<OpKind::NumericInt_Div>(in({1}, kU8, {200}), in({1}, kU8, {7}), {1}, kU8)),
            (V{28}));
  EXPECT_EQ((binary<OpKind::NumericInt_Div>(in({1}, kU32, {4294967295.0}), in({1}, kU32, {2}), {1},
                                            kU32)),
            (V{2147483647}));
}
TEST_F(NumericInt_Div, MinimumByMinusOneWrapsInsteadOfTrapping) {
  EXPECT_EQ((binary64<OpKind::NumericInt_Div>(in64({2}, kI64, {kTwo63, 6}),
                                              in64({2}, kI64, {kU64Max, kU64Max}), {2}, kI64)),
            (U{kTwo63, static_cast<std::uint64_t>(-6)}));
  EXPECT_EQ((binary<OpKind::NumericInt_Div>(in({1}, kI32, {-2147483648.0}), in({1}, kI32, {-1}),
                                            {1}, kI32)),
            (V{-2147483648.0}));
  EXPECT_EQ((binary<OpKind::NumericInt_Div>(in({1}, kI8, {-128}), in({1}, kI8, {-1}), {1}, kI8)),
            (V{-128}));
}
TEST_F(NumericInt_Div, U64IsUnsigned) {
  EXPECT_EQ((binary64<OpKind::NumericInt_Div>(
                in64({5}, kU64, {kU64Max, kU64Max - 1, kTwo63, 5, kTwo63 + 6}),
                in64({5}, kU64, {3, kTwo63 + 1, 2, kTwo63, kTwo63 + 6}), {5}, kU64)),
            (U{6148914691236517205ull, 1, kTwo63 / 2, 0, 1}));
}
TEST_F(NumericInt_Div, ByZeroIsAnError) {
  EXPECT_THAT(
      (binary_error<OpKind::NumericInt_Div>(in({2}, kI32, {1, 2}), in({2}, kI32, {1, 0}), {2})),
      HasSubstr("NumericInt.Div: integer division by zero"));
  EXPECT_THAT(
      (binary_error<OpKind::NumericInt_Div>(in64({1}, kU64, {1}), in64({1}, kU64, {0}), {1})),
      HasSubstr("division by zero"));
}

class NumericFloat_DivScalar : public NumericTest {};
TEST_F(NumericFloat_DivScalar, Divides) {
  expect_near(scalar<OpKind::NumericFloat_DivScalar>(in({3}, kF32, {1, -1, 0}), ScalarIr::f(0)),
              {kInf, -kInf, kNaN});
  EXPECT_EQ((scalar<OpKind::NumericFloat_DivScalar>(in({1}, kF64, {1}), ScalarIr::i(4))),
            (V{0.25}));
}

class NumericInt_DivScalar : public NumericTest {};
TEST_F(NumericInt_DivScalar, NarrowsTheScalarThenTruncates) {
  EXPECT_EQ((scalar<OpKind::NumericInt_DivScalar>(in({2}, kI16, {-7, 7}), ScalarIr::i(2))),
            (V{-3, 3}));
  // 258 as i8 == 2.
  EXPECT_EQ((scalar<OpKind::NumericInt_DivScalar>(in({1}, kI8, {9}), ScalarIr::i(258))), (V{4}));
  // 256 as i8 == 0: division by zero.
  EXPECT_THAT((scalar_error<OpKind::NumericInt_DivScalar>(in({1}, kI8, {9}), ScalarIr::i(256))),
              HasSubstr("division by zero"));
  EXPECT_EQ(
      (scalar64<OpKind::NumericInt_DivScalar>(in64({2}, kU64, {kU64Max, 7}), ScalarIr::u(kTwo63))),
      (U{1, 0}));
  EXPECT_THAT((scalar_error<OpKind::NumericInt_DivScalar>(in64({1}, kU64, {7}), ScalarIr::i(-1))),
              HasSubstr("cannot be represented as u64"));
}

// ---- Rem / RemScalar ---------------------------------------------------------------------------

class NumericFloat_Rem : public NumericTest {};
TEST_F(NumericFloat_Rem, TakesTheSignOfTheDivisor) {
  for (DType dt : {kF32, kF64, kF16}) {
    const auto a = in({8}, dt, {5, -5, 5, -5, 5.5, 3, -3, 1});
    const auto b = in({8}, dt, {3, 3, -3, -3, 2, kInf, kInf, 0});
    expect_near(binary<OpKind::NumericFloat_Rem>(a, b, {8}, dt),
                {2, 1, -1, -2, 1.5, 3, kInf, kNaN});
  }
}

class NumericInt_Rem : public NumericTest {};
TEST_F(NumericInt_Rem, FloorModLikePython) {
  const auto a = in({5}, kI32, {-7, 7, -7, 7, -2147483648.0});
  const auto b = in({5}, kI32, {3, -3, -3, 3, -1});
  EXPECT_EQ((binary<OpKind::NumericInt_Rem>(a, b, {5}, kI32)), (V{2, -2, -1, 1, 0}));
  EXPECT_EQ((binary<OpKind::NumericInt_Rem>(in({1}, kI8, {-128}), in({1}, kI8, {3}), {1}, kI8)),
            (V{1}));
  EXPECT_EQ((binary<OpKind::NumericInt_Rem>(in({1}, kU16, {65535}), in({1}, kU16, {7}), {1}, kU16)),
            (V{65535 % 7}));
  EXPECT_EQ(
      (binary64<OpKind::NumericInt_Rem>(in64({2}, kI64, {kTwo63, static_cast<std::uint64_t>(-9)}),
                                        in64({2}, kI64, {kU64Max, 4}), {2}, kI64)),
      (U{0, 3}));
}
TEST_F(NumericInt_Rem, U64IsUnsignedAndZeroIsAnError) {
  EXPECT_EQ((binary64<OpKind::NumericInt_Rem>(in64({2}, kU64, {kU64Max, kU64Max - 1}),
                                              in64({2}, kU64, {10, kTwo63 + 1}), {2}, kU64)),
            (U{5, kTwo63 - 3}));
  EXPECT_THAT((binary_error<OpKind::NumericInt_Rem>(in({1}, kI64, {3}), in({1}, kI64, {0}), {1})),
              HasSubstr("integer remainder by zero"));
}

class NumericFloat_RemScalar : public NumericTest {};
TEST_F(NumericFloat_RemScalar, TakesTheSignOfTheDivisor) {
  expect_near(scalar<OpKind::NumericFloat_RemScalar>(in({3}, kF32, {5, -5, 0.5}), ScalarIr::f(-3)),
              {-1, -2, -2.5});
}

class NumericInt_RemScalar : public NumericTest {};
TEST_F(NumericInt_RemScalar, FloorMod) {
  EXPECT_EQ((scalar<OpKind::NumericInt_RemScalar>(in({3}, kI64, {-7, 7, 0}), ScalarIr::i(3))),
            (V{2, 1, 0}));
  EXPECT_EQ(
      (scalar64<OpKind::NumericInt_RemScalar>(in64({1}, kU64, {kU64Max}), ScalarIr::u(kTwo63))),
      (U{kTwo63 - 1}));
  EXPECT_THAT((scalar_error<OpKind::NumericInt_RemScalar>(in({1}, kU8, {1}), ScalarIr::i(0))),
              HasSubstr("remainder by zero"));
}

// ---- Abs / Neg / Sign --------------------------------------------------------------------------

class NumericFloat_Abs : public NumericTest {};
TEST_F(NumericFloat_Abs, ClearsTheSign) {
  const V r = unary<OpKind::NumericFloat_Abs>(in({4}, kF32, {-1.5, -0.0, kNaN, -kInf}));
  expect_near(r, {1.5, 0, kNaN, kInf});
  EXPECT_FALSE(std::signbit(r[1]));
  EXPECT_EQ((unary<OpKind::NumericFloat_Abs>(in({2}, kBF16, {-2, 3}))), (V{2, 3}));
}

class NumericInt_Abs : public NumericTest {};
TEST_F(NumericInt_Abs, WrappingAbsAndIdentityForUnsigned) {
  EXPECT_EQ((unary<OpKind::NumericInt_Abs>(in({3}, kI8, {-128, -5, 5}))), (V{-128, 5, 5}));
  EXPECT_EQ((unary64<OpKind::NumericInt_Abs>(in64({2}, kU64, {kU64Max, kTwo63}))),
            (U{kU64Max, kTwo63}));
  EXPECT_EQ((unary<OpKind::NumericInt_Abs>(in({2}, kU8, {255, 0}))), (V{255, 0}));
  EXPECT_EQ((unary<OpKind::NumericInt_Abs>(in({1}, kU32, {4294967295.0}))), (V{4294967295.0}));
}

class NumericFloat_Neg : public NumericTest {};
TEST_F(NumericFloat_Neg, FlipsTheSignOfZeroToo) {
  const V r = unary<OpKind::NumericFloat_Neg>(in({5}, kF64, {0.0, -0.0, 1.5, kNaN, kInf}));
  expect_near(r, {0, 0, -1.5, kNaN, -kInf});
  EXPECT_EQ(signbits({r[0], r[1]}), (std::vector<bool>{true, false}));
}

class NumericInt_Neg : public NumericTest {};
TEST_F(NumericInt_Neg, WrappingNeg) {
  EXPECT_EQ((unary<OpKind::NumericInt_Neg>(in({2}, kU8, {1, 0}))), (V{255, 0}));
  EXPECT_EQ((unary<OpKind::NumericInt_Neg>(in({1}, kU16, {1}))), (V{65535}));
  EXPECT_EQ((unary<OpKind::NumericInt_Neg>(in({1}, kU32, {1}))), (V{4294967295.0}));
  EXPECT_EQ((unary64<OpKind::NumericInt_Neg>(in64({2}, kU64, {1, kTwo63}))), (U{kU64Max, kTwo63}));
  EXPECT_EQ((unary<OpKind::NumericInt_Neg>(in({2}, kI8, {-128, 5}))), (V{-128, -5}));
}

class NumericFloat_Sign : public NumericTest {};
TEST_F(NumericFloat_Sign, NanAndZerosGivePositiveZero) {
  for (DType dt : {kF32, kF16}) {
    const V r = unary<OpKind::NumericFloat_Sign>(in({6}, dt, {kNaN, -0.0, 0.0, -3, 2, -kInf}));
    EXPECT_EQ(r, (V{0, 0, 0, -1, 1, -1})) << dt.name();
    EXPECT_EQ(signbits({r[0], r[1], r[2]}), (std::vector<bool>{false, false, false}));
  }
}

class NumericInt_Sign : public NumericTest {};
TEST_F(NumericInt_Sign, SignedAndUnsigned) {
  EXPECT_EQ((unary<OpKind::NumericInt_Sign>(in({3}, kI32, {-5, 0, 7}))), (V{-1, 0, 1}));
  EXPECT_EQ((unary64<OpKind::NumericInt_Sign>(in64({3}, kU64, {kTwo63, 0, kU64Max}))),
            (U{1, 0, 1}));
  EXPECT_EQ((unary<OpKind::NumericInt_Sign>(in({2}, kU8, {200, 0}))), (V{1, 0}));
}

// ---- Full --------------------------------------------------------------------------------------

class NumericFloat_Full : public NumericTest {};
TEST_F(NumericFloat_Full, FillsTheDeclaredShapeAndDType) {
  EXPECT_EQ((full<OpKind::NumericFloat_Full>({2, 2}, kF32, ScalarIr::i(3))), (V{3, 3, 3, 3}));
  EXPECT_EQ((full<OpKind::NumericFloat_Full>({1}, kF16, ScalarIr::f(0.1))), (V{0.0999755859375}));
  EXPECT_EQ((full<OpKind::NumericFloat_Full>({1}, kBF16, ScalarIr::f(0.1))), (V{0.10009765625}));
  EXPECT_EQ((full<OpKind::NumericFloat_Full>({1}, kF64, ScalarIr::f(0.1))), (V{0.1}));
  EXPECT_EQ((full<OpKind::NumericFloat_Full>({}, kF32, ScalarIr::b(true))), (V{1}));
  EXPECT_TRUE((full<OpKind::NumericFloat_Full>({3, 0}, kF32, ScalarIr::f(1))).empty());
}

class NumericInt_Full : public NumericTest {};
TEST_F(NumericInt_Full, ConvertsLikeIntFull) {
  EXPECT_EQ((full<OpKind::NumericInt_Full>({2}, kI8, ScalarIr::i(300))), (V{44, 44}));
  EXPECT_EQ((full<OpKind::NumericInt_Full>({1}, kU32, ScalarIr::i(-1))), (V{4294967295.0}));
  EXPECT_EQ((full<OpKind::NumericInt_Full>({1}, kI32, ScalarIr::f(-2.7))), (V{-2}));
  EXPECT_EQ((full<OpKind::NumericInt_Full>({1}, kU16, ScalarIr::u(65537))), (V{1}));
  const auto t = o({2}, kU64);
  run(make_op<OpKind::NumericInt_Full>(FullOpIr{t, ScalarIr::u(kU64Max - 1)}, kU64));
  EXPECT_EQ(get64(t), (U{kU64Max - 1, kU64Max - 1}));
  EXPECT_THAT(
      run_error(make_op<OpKind::NumericInt_Full>(FullOpIr{o({1}, kI32), ScalarIr::f(kNaN)}, kI32)),
      HasSubstr("cannot be represented"));
}

// ---- Comparisons -------------------------------------------------------------------------------

// [1, NaN, 3, -0.0] against [2, 1, 3, 0.0].
class FloatCompare : public NumericTest {
 protected:
  template <OpKind K>
  V cmp(DType out_dtype = kBool) {
    const auto a = in({4}, kF32, {1, kNaN, 3, -0.0});
    const auto b = in({4}, kF32, {2, 1, 3, 0.0});
    return binary<K>(a, b, {4}, out_dtype);
  }
};
// U64 [2^63, 1, max] against [1, 2^63, max].
class U64Compare : public NumericTest {
 protected:
  template <OpKind K>
  V cmp() {
    const auto a = in64({3}, kU64, {kTwo63, 1, kU64Max});
    const auto b = in64({3}, kU64, {1, kTwo63, kU64Max});
    return binary<K>(a, b, {3}, kBool);
  }
};

class NumericFloat_Greater : public FloatCompare {};
TEST_F(NumericFloat_Greater, IeeeOrderIntoEveryBoolStore) {
  EXPECT_EQ(cmp<OpKind::NumericFloat_Greater>(), (V{0, 0, 0, 0}));
  const auto a = in({2, 1}, kF16, {1, 3});
  const auto b = in({1, 2}, kF16, {2, 0});
  EXPECT_EQ((binary<OpKind::NumericFloat_Greater>(a, b, {2, 2}, DType::boolean(BoolStore::U32))),
            (V{0, 1, 1, 1}));
  EXPECT_EQ((binary<OpKind::NumericFloat_Greater>(a, b, {2, 2}, DType::boolean(BoolStore::U8))),
            (V{0, 1, 1, 1}));
}
class NumericFloat_GreaterEqual : public FloatCompare {};
TEST_F(NumericFloat_GreaterEqual, IeeeOrder) {
  EXPECT_EQ(cmp<OpKind::NumericFloat_GreaterEqual>(), (V{0, 0, 1, 1}));
}
class NumericFloat_Lower : public FloatCompare {};
TEST_F(NumericFloat_Lower, IeeeOrder) {
  EXPECT_EQ(cmp<OpKind::NumericFloat_Lower>(), (V{1, 0, 0, 0}));
}
TEST_F(NumericFloat_Lower, StridedInput) {
  const auto a = transposed(in({2, 2}, kF32, {1, 2, 3, 4}));  // [[1,3],[2,4]]
  const auto b = in({2, 2}, kF32, {2, 2, 2, 2});
  EXPECT_EQ((binary<OpKind::NumericFloat_Lower>(a, b, {2, 2}, kBool)), (V{1, 0, 0, 0}));
}
class NumericFloat_LowerEqual : public FloatCompare {};
TEST_F(NumericFloat_LowerEqual, IeeeOrder) {
  EXPECT_EQ(cmp<OpKind::NumericFloat_LowerEqual>(DType::boolean(BoolStore::U32)), (V{1, 0, 1, 1}));
}

class NumericInt_Greater : public U64Compare {};
TEST_F(NumericInt_Greater, UnsignedOrderForU64) {
  EXPECT_EQ(cmp<OpKind::NumericInt_Greater>(), (V{1, 0, 0}));
  EXPECT_EQ(
      (binary<OpKind::NumericInt_Greater>(in({2}, kI8, {-1, 5}), in({2}, kI8, {1, 5}), {2}, kBool)),
      (V{0, 0}));
  EXPECT_EQ((binary<OpKind::NumericInt_Greater>(in({2}, kU32, {4294967295.0, 1}),
                                                in({2}, kU32, {1, 4294967295.0}), {2}, kBool)),
            (V{1, 0}));
}
class NumericInt_GreaterEqual : public U64Compare {};
TEST_F(NumericInt_GreaterEqual, UnsignedOrderForU64) {
  EXPECT_EQ(cmp<OpKind::NumericInt_GreaterEqual>(), (V{1, 0, 1}));
}
class NumericInt_Lower : public U64Compare {};
TEST_F(NumericInt_Lower, UnsignedOrderForU64) {
  EXPECT_EQ(cmp<OpKind::NumericInt_Lower>(), (V{0, 1, 0}));
  EXPECT_EQ((binary<OpKind::NumericInt_Lower>(in({2, 1}, kI64, {1, 5}), in({3}, kI64, {0, 3, 9}),
                                              {2, 3}, DType::boolean(BoolStore::U8))),
            (V{0, 1, 1, 0, 0, 1}));
}
class NumericInt_LowerEqual : public U64Compare {};
TEST_F(NumericInt_LowerEqual, UnsignedOrderForU64) {
  EXPECT_EQ(cmp<OpKind::NumericInt_LowerEqual>(), (V{0, 1, 1}));
}

class NumericFloat_GreaterElem : public NumericTest {};
TEST_F(NumericFloat_GreaterElem, ScalarIsRoundedToTheElementType) {
  // f16(0.1) == 0.0999755859375: against the rounded scalar it is equal, not lower.
  const auto h = in({1}, kF16, {0.1});
  EXPECT_EQ((scalar<OpKind::NumericFloat_GreaterElem>(h, ScalarIr::f(0.1), kBool)), (V{0}));
  EXPECT_EQ((scalar<OpKind::NumericFloat_GreaterElem>(in({3}, kF32, {1, kNaN, 3}), ScalarIr::i(2),
                                                      kBool)),
            (V{0, 0, 1}));
}
class NumericFloat_GreaterEqualElem : public NumericTest {};
TEST_F(NumericFloat_GreaterEqualElem, ScalarIsRoundedToTheElementType) {
  EXPECT_EQ((scalar<OpKind::NumericFloat_GreaterEqualElem>(in({1}, kF16, {0.1}), ScalarIr::f(0.1),
                                                           kBool)),
            (V{1}));
  EXPECT_EQ((scalar<OpKind::NumericFloat_GreaterEqualElem>(in({2}, kF32, {0.1, -0.0}),
                                                           ScalarIr::f(0.1), kBool)),
            (V{1, 0}));
}
class NumericFloat_LowerElem : public NumericTest {};
TEST_F(NumericFloat_LowerElem, Compares) {
  EXPECT_EQ((scalar<OpKind::NumericFloat_LowerElem>(in({3}, kF64, {-0.0, kNaN, -1}), ScalarIr::f(0),
                                                    DType::boolean(BoolStore::U32))),
            (V{0, 0, 1}));
}
class NumericFloat_LowerEqualElem : public NumericTest {};
TEST_F(NumericFloat_LowerEqualElem, Compares) {
  EXPECT_EQ((scalar<OpKind::NumericFloat_LowerEqualElem>(in({3}, kBF16, {-0.0, kNaN, 1}),
                                                         ScalarIr::f(0), kBool)),
            (V{1, 0, 0}));
}

class NumericInt_GreaterElem : public NumericTest {};
TEST_F(NumericInt_GreaterElem, ScalarIsNarrowedWithAs) {
  // 300 as i8 == 44.
  EXPECT_EQ((scalar<OpKind::NumericInt_GreaterElem>(in({3}, kI8, {44, 45, 100}), ScalarIr::i(300),
                                                    kBool)),
            (V{0, 1, 1}));
  EXPECT_EQ((scalar<OpKind::NumericInt_GreaterElem>(in64({2}, kU64, {kTwo63, 5}),
                                                    ScalarIr::u(kTwo63 - 1), kBool)),
            (V{1, 0}));
  EXPECT_THAT((scalar_error<OpKind::NumericInt_GreaterElem>(in64({1}, kU64, {1}), ScalarIr::i(-1))),
              HasSubstr("cannot be represented as u64"));
}
class NumericInt_GreaterEqualElem : public NumericTest {};
TEST_F(NumericInt_GreaterEqualElem, Compares) {
  EXPECT_EQ((scalar<OpKind::NumericInt_GreaterEqualElem>(in({3}, kI32, {-3, 2, 3}),
                                                         ScalarIr::f(2.9), kBool)),
            (V{0, 1, 1}));
}
class NumericInt_LowerElem : public NumericTest {};
TEST_F(NumericInt_LowerElem, U64AgainstAScalarAbove2Pow63) {
  EXPECT_EQ((scalar<OpKind::NumericInt_LowerElem>(in64({3}, kU64, {kTwo63, kU64Max, 0}),
                                                  ScalarIr::u(kU64Max), kBool)),
            (V{1, 0, 1}));
}
class NumericInt_LowerEqualElem : public NumericTest {};
TEST_F(NumericInt_LowerEqualElem, Compares) {
  EXPECT_EQ((scalar<OpKind::NumericInt_LowerEqualElem>(in({3}, kU16, {0, 7, 65535}), ScalarIr::i(7),
                                                       DType::boolean(BoolStore::U8))),
            (V{1, 1, 0}));
}

// ---- Clamp / ClampMin / ClampMax ----------------------------------------------------------------

class NumericFloat_Clamp : public NumericTest {};
TEST_F(NumericFloat_Clamp, RustClampSemantics) {
  const V r = clamp<OpKind::NumericFloat_Clamp>(in({5}, kF32, {-2, 0.5, 3, kNaN, -0.0}),
                                                ScalarIr::f(0), ScalarIr::f(1));
  expect_near(r, {0, 0.5, 1, kNaN, 0});
  EXPECT_TRUE(std::signbit(r[4])) << "-0.0 is not lower than 0.0: kept";
  expect_near(
      clamp<OpKind::NumericFloat_Clamp>(in({2}, kF32, {-2, 2}), ScalarIr::f(kNaN), ScalarIr::f(1)),
      {kNaN, kNaN});
  EXPECT_EQ(
      (clamp<OpKind::NumericFloat_Clamp>(in({2}, kF16, {0, 1}), ScalarIr::f(0.1), ScalarIr::i(2))),
      (V{0.0999755859375, 1}));
}
TEST_F(NumericFloat_Clamp, MinAboveMaxIsAnError) {
  const auto x = in({1}, kF32, {1});
  EXPECT_THAT(run_error(make_op<OpKind::NumericFloat_Clamp>(
                  ClampOpIr{x, ScalarIr::f(2), ScalarIr::f(1), o({1}, kF32)}, kF32)),
              HasSubstr("min (2) > max (1)"));
}

class NumericInt_Clamp : public NumericTest {};
TEST_F(NumericInt_Clamp, BoundsAreNotNarrowed) {
  EXPECT_EQ((clamp<OpKind::NumericInt_Clamp>(in({3}, kI8, {-100, 0, 100}), ScalarIr::i(-1000),
                                             ScalarIr::i(1000))),
            (V{-100, 0, 100}));
  // Clamped in i64 to 200, then `200 as i8` == -56.
  EXPECT_EQ((clamp<OpKind::NumericInt_Clamp>(in({2}, kI8, {-100, 100}), ScalarIr::i(200),
                                             ScalarIr::i(300))),
            (V{-56, -56}));
  EXPECT_EQ((clamp<OpKind::NumericInt_Clamp>(in({3}, kU8, {0, 7, 255}), ScalarIr::i(-5),
                                             ScalarIr::f(7.9))),
            (V{0, 7, 7}));
}
TEST_F(NumericInt_Clamp, U64IsUnsigned) {
  const auto x = in64({3}, kU64, {0, kTwo63, kU64Max});
  const auto t = o({3}, kU64);
  run(make_op<OpKind::NumericInt_Clamp>(ClampOpIr{x, ScalarIr::u(5), ScalarIr::u(kU64Max - 1), t},
                                        kU64));
  EXPECT_EQ(get64(t), (U{5, kTwo63, kU64Max - 1}));
  EXPECT_THAT(run_error(make_op<OpKind::NumericInt_Clamp>(
                  ClampOpIr{x, ScalarIr::u(kTwo63 + 1), ScalarIr::u(5), o({3}, kU64)}, kU64)),
              HasSubstr("> max"));
}

class NumericFloat_ClampMin : public NumericTest {};
TEST_F(NumericFloat_ClampMin, NanPassesAndEqualTakesTheBound) {
  const V r =
      scalar<OpKind::NumericFloat_ClampMin>(in({4}, kF32, {-0.0, kNaN, -1, 2}), ScalarIr::f(0));
  expect_near(r, {0, kNaN, 0, 2});
  EXPECT_FALSE(std::signbit(r[0])) << "-0.0 is not greater than 0.0: the bound is taken";
  expect_near(scalar<OpKind::NumericFloat_ClampMin>(in({2}, kF64, {1, 2}), ScalarIr::f(kNaN)),
              {kNaN, kNaN});
}

class NumericInt_ClampMin : public NumericTest {};
TEST_F(NumericInt_ClampMin, ComparesInI64ThenNarrows) {
  // max(5, 1000) == 1000, `1000 as i8` == -24.
  EXPECT_EQ((scalar<OpKind::NumericInt_ClampMin>(in({2}, kI8, {5, -5}), ScalarIr::i(1000))),
            (V{-24, -24}));
  EXPECT_EQ((scalar<OpKind::NumericInt_ClampMin>(in({2}, kI32, {5, -5}), ScalarIr::i(0))),
            (V{5, 0}));
  EXPECT_EQ((scalar64<OpKind::NumericInt_ClampMin>(in64({2}, kU64, {1, kTwo63}),
                                                   ScalarIr::u(kTwo63 - 1))),
            (U{kTwo63 - 1, kTwo63}));
}

class NumericFloat_ClampMax : public NumericTest {};
TEST_F(NumericFloat_ClampMax, NanPassesAndEqualTakesTheBound) {
  const V r =
      scalar<OpKind::NumericFloat_ClampMax>(in({3}, kF32, {0.0, kNaN, 5}), ScalarIr::f(-0.0));
  expect_near(r, {0, kNaN, 0});
  EXPECT_EQ(signbits({r[0], r[2]}), (std::vector<bool>{true, true}));
  EXPECT_EQ((scalar<OpKind::NumericFloat_ClampMax>(in({2}, kBF16, {1, 3}), ScalarIr::i(2))),
            (V{1, 2}));
}

class NumericInt_ClampMax : public NumericTest {};
TEST_F(NumericInt_ClampMax, U64AndFloatBounds) {
  EXPECT_EQ(
      (scalar64<OpKind::NumericInt_ClampMax>(in64({2}, kU64, {kU64Max, 3}), ScalarIr::u(kTwo63))),
      (U{kTwo63, 3}));
  EXPECT_EQ((scalar<OpKind::NumericInt_ClampMax>(in({2}, kI32, {5, -5}), ScalarIr::f(2.9))),
            (V{2, -5}));
  EXPECT_EQ((scalar<OpKind::NumericInt_ClampMax>(in({1}, kU16, {9}), ScalarIr::i(-1))), (V{65535}));
}

// ---- Powi / PowiScalar -------------------------------------------------------------------------

class NumericFloat_Powi : public NumericTest {};
TEST_F(NumericFloat_Powi, IntegerExponentTensor) {
  const auto a = in({4}, kF32, {2, 2, -2, 0});
  const auto e = in({4}, kI32, {3, -1, 3, 0});
  EXPECT_EQ((binary<OpKind::NumericFloat_Powi>(a, e, {4}, kF32)), (V{8, 0.5, -8, 1}));
}
TEST_F(NumericFloat_Powi, ExponentIsConvertedToTheBaseType) {
  // int_into_float(2049, f16) == 2048, so (-1)^2049 gives 1.
  const auto a = in({1}, kF16, {-1});
  const auto e = in({1}, kI64, {2049});
  EXPECT_EQ((binary<OpKind::NumericFloat_Powi>(a, e, {1}, kF16)), (V{1}));
  const auto f = in({1}, kF64, {2});
  const auto g = in64({1}, kU64, {3});
  EXPECT_EQ((binary<OpKind::NumericFloat_Powi>(f, g, {1}, kF64)), (V{8}));
}

class NumericInt_Powi : public NumericTest {};
TEST_F(NumericInt_Powi, WrappingPowWithTheExponentAsU32) {
  const auto a = in({6}, kI32, {3, 2, -1, 1, 2, 0});
  const auto e = in({6}, kI32, {40, -1, -1, -5, 31, 0});
  EXPECT_EQ((binary<OpKind::NumericInt_Powi>(a, e, {6}, kI32)),
            (V{689956897, 0, -1, 1, -2147483648.0, 1}));
  EXPECT_EQ((binary<OpKind::NumericInt_Powi>(in({1}, kI8, {3}), in({1}, kI8, {5}), {1}, kI8)),
            (V{-13}));
  EXPECT_EQ((binary64<OpKind::NumericInt_Powi>(in64({2}, kU64, {3, kTwo63 + 1}),
                                               in64({2}, kU64, {41, 3}), {2}, kU64)),
            (U{18026252303461234787ull, 9223372036854775809ull}));
}

class NumericFloat_PowiScalar : public NumericTest {};
TEST_F(NumericFloat_PowiScalar, ShortcutsAndGeneralCase) {
  const auto x = in({3}, kF32, {2, kNaN, 4});
  expect_near(scalar<OpKind::NumericFloat_PowiScalar>(x, ScalarIr::i(0)), {1, 1, 1});
  expect_near(scalar<OpKind::NumericFloat_PowiScalar>(x, ScalarIr::i(3)), {8, kNaN, 64});
  expect_near(scalar<OpKind::NumericFloat_PowiScalar>(x, ScalarIr::i(-1)), {0.5, kNaN, 0.25});
  expect_near(scalar<OpKind::NumericFloat_PowiScalar>(x, ScalarIr::f(-3)), {0.125, kNaN, 0.015625});
  // burn-flex matches on `to_i64()`: 0.5 truncates to 0, so the result is ones.
  expect_near(scalar<OpKind::NumericFloat_PowiScalar>(x, ScalarIr::f(0.5)), {1, 1, 1});
  EXPECT_EQ((scalar<OpKind::NumericFloat_PowiScalar>(in({1}, kF16, {3}), ScalarIr::i(4))), (V{81}));
}

class NumericInt_PowiScalar : public NumericTest {};
TEST_F(NumericInt_PowiScalar, WrappingPow) {
  EXPECT_EQ((scalar<OpKind::NumericInt_PowiScalar>(in({3}, kI64, {2, 3, -2}), ScalarIr::i(3))),
            (V{8, 27, -8}));
  EXPECT_EQ((scalar64<OpKind::NumericInt_PowiScalar>(in({3}, kI64, {2, 3, -1}), ScalarIr::i(-1))),
            (U{0, 830436559519656619ull, kU64Max}));
  EXPECT_EQ((scalar<OpKind::NumericInt_PowiScalar>(in({2}, kU8, {2, 3}), ScalarIr::i(8))),
            (V{0, 6561 % 256}));
  EXPECT_EQ((scalar<OpKind::NumericInt_PowiScalar>(in({2}, kU16, {0, 7}), ScalarIr::i(0))),
            (V{1, 1}));
}

// ---- IntRandom ---------------------------------------------------------------------------------

class NumericInt_IntRandom : public NumericTest {};
TEST_F(NumericInt_IntRandom, UniformIsHalfOpen) {
  const V v = get(
      random<OpKind::NumericInt_IntRandom>({4000}, kI32, dist(DistributionKind::Uniform, -5, 5)));
  EXPECT_EQ(*std::min_element(v.begin(), v.end()), -5);
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 4);
  EXPECT_NEAR(mean(v), -0.5, 0.25);
}
TEST_F(NumericInt_IntRandom, SeedMakesItReproducible) {
  auto draw = [&](std::uint64_t seed) {
    exec->seed(seed);
    return get(
        random<OpKind::NumericInt_IntRandom>({64}, kI64, dist(DistributionKind::Uniform, 0, 1e9)));
  };
  const V a = draw(42);
  EXPECT_EQ(draw(42), a);
  EXPECT_NE(draw(43), a);
}
TEST_F(NumericInt_IntRandom, DefaultSpansTheWholeType) {
  const V i8 =
      get(random<OpKind::NumericInt_IntRandom>({4000}, kI8, dist(DistributionKind::Default)));
  EXPECT_LE(*std::min_element(i8.begin(), i8.end()), -120);
  EXPECT_GE(*std::max_element(i8.begin(), i8.end()), 120);
  const V u16 =
      get(random<OpKind::NumericInt_IntRandom>({4000}, kU16, dist(DistributionKind::Default)));
  EXPECT_GE(*std::min_element(u16.begin(), u16.end()), 0);
  EXPECT_GE(*std::max_element(u16.begin(), u16.end()), 60000);
  const U u64 =
      get64(random<OpKind::NumericInt_IntRandom>({1000}, kU64, dist(DistributionKind::Default)));
  const auto high = std::count_if(u64.begin(), u64.end(), [](auto x) { return x >= kTwo63; });
  EXPECT_GT(high, 400);
  EXPECT_LT(high, 600);
}
TEST_F(NumericInt_IntRandom, UniformU64AboveTwoPow63) {
  const double hi = 1.8e19;
  const U v = get64(
      random<OpKind::NumericInt_IntRandom>({2000}, kU64, dist(DistributionKind::Uniform, 0, hi)));
  const auto high = std::count_if(v.begin(), v.end(), [](auto x) { return x >= kTwo63; });
  EXPECT_GT(high, 800);
  for (auto x : v) ASSERT_LT(x, static_cast<std::uint64_t>(hi));
}
TEST_F(NumericInt_IntRandom, BernoulliAndNormal) {
  const V b = get(
      random<OpKind::NumericInt_IntRandom>({4000}, kI64, dist(DistributionKind::Bernoulli, 0.3)));
  for (double x : b) ASSERT_TRUE(x == 0 || x == 1);
  EXPECT_NEAR(mean(b), 0.3, 0.04);
  const V n = get(
      random<OpKind::NumericInt_IntRandom>({4000}, kI32, dist(DistributionKind::Normal, 10, 2)));
  // Samples truncate toward zero: the mean drops by about 0.5.
  EXPECT_NEAR(mean(n), 9.5, 0.2);
}
TEST_F(NumericInt_IntRandom, InvalidParametersAreErrors) {
  EXPECT_THAT(run_error(make_op<OpKind::NumericInt_IntRandom>(
                  RandomOpIr{o({4}, kI32), dist(DistributionKind::Uniform, 5, 5)}, kI32)),
              HasSubstr("empty"));
  EXPECT_THAT(run_error(make_op<OpKind::NumericInt_IntRandom>(
                  RandomOpIr{o({4}, kU8), dist(DistributionKind::Uniform, -3, 5)}, kU8)),
              HasSubstr("cannot be represented as u8"));
  EXPECT_THAT(run_error(make_op<OpKind::NumericInt_IntRandom>(
                  RandomOpIr{o({400}, kI8), dist(DistributionKind::Normal, 0, 1000)}, kI8)),
              HasSubstr("cannot be represented as i8"));
  EXPECT_TRUE(
      get(random<OpKind::NumericInt_IntRandom>({0, 2}, kI32, dist(DistributionKind::Default)))
          .empty());
}

class NumericFloat_IntRandom : public NumericTest {};
TEST_F(NumericFloat_IntRandom, IntegerValuesInAFloatTensor) {
  exec->seed(1);
  const V v = get(
      random<OpKind::NumericFloat_IntRandom>({2000}, kF32, dist(DistributionKind::Uniform, 0, 10)));
  for (double x : v) ASSERT_TRUE(x == std::floor(x) && x >= 0 && x <= 9) << x;
  EXPECT_NEAR(mean(v), 4.5, 0.3);
  exec->seed(1);
  EXPECT_EQ(get(random<OpKind::NumericFloat_IntRandom>({2000}, kF32,
                                                       dist(DistributionKind::Uniform, 0, 10))),
            v);
  const V b =
      get(random<OpKind::NumericFloat_IntRandom>({10}, kF16, dist(DistributionKind::Bernoulli, 1)));
  EXPECT_EQ(b, V(10, 1.0));
}

// ---- Pad ---------------------------------------------------------------------------------------

class NumericFloat_Pad : public NumericTest {};
TEST_F(NumericFloat_Pad, ConstantPadsEachDimensionInOrder) {
  const auto x = in({2, 3}, kF32, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(
      (pad<OpKind::NumericFloat_Pad>(x, {{1, 0}, {0, 2}}, constant(ScalarIr::f(0.5)), {3, 5})),
      (V{0.5, 0.5, 0.5, 0.5, 0.5, 1, 2, 3, 0.5, 0.5, 4, 5, 6, 0.5, 0.5}));
}
TEST_F(NumericFloat_Pad, ConstantGoesThroughF32) {
  const auto x = in({1}, kF64, {7});
  EXPECT_EQ((pad<OpKind::NumericFloat_Pad>(x, {{1, 0}}, constant(ScalarIr::f(0.1)), {2})),
            (V{static_cast<double>(0.1f), 7}));
}
TEST_F(NumericFloat_Pad, ReflectAndEdge) {
  const auto x = in({4}, kF32, {1, 2, 3, 4});
  EXPECT_EQ((pad<OpKind::NumericFloat_Pad>(x, {{2, 1}}, reflect(), {7})), (V{3, 2, 1, 2, 3, 4, 3}));
  EXPECT_EQ((pad<OpKind::NumericFloat_Pad>(x, {{2, 1}}, edge(), {7})), (V{1, 1, 1, 2, 3, 4, 4}));
  // Rank 3 in half precision, both modes on the last two dims.
  const auto y = in({1, 2, 2}, kF16, {1, 2, 3, 4});
  EXPECT_EQ((pad<OpKind::NumericFloat_Pad>(y, {{0, 0}, {1, 0}, {0, 1}}, reflect(), {1, 3, 3})),
            (V{3, 4, 3, 1, 2, 1, 3, 4, 3}));
  EXPECT_EQ((pad<OpKind::NumericFloat_Pad>(y, {{0, 0}, {1, 1}, {1, 0}}, edge(), {1, 4, 3})),
            (V{1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4}));
}
TEST_F(NumericFloat_Pad, StridedRankZeroAndErrors) {
  const auto t = transposed(in({2, 2}, kBF16, {1, 2, 3, 4}));  // [[1,3],[2,4]]
  EXPECT_EQ((pad<OpKind::NumericFloat_Pad>(t, {{0, 1}, {1, 0}}, edge(), {3, 3})),
            (V{1, 1, 3, 2, 2, 4, 2, 2, 4}));
  EXPECT_EQ((pad<OpKind::NumericFloat_Pad>(in({}, kF32, {5}), {}, reflect(), {})), (V{5}));
  const auto x = in({2}, kF32, {1, 2});
  EXPECT_THAT(run_error(make_op<OpKind::NumericFloat_Pad>(
                  PadOpIr{x, o({4}, kF32), {{2, 0}}, reflect()}, kF32)),
              HasSubstr("must be less than"));
  EXPECT_THAT(run_error(make_op<OpKind::NumericFloat_Pad>(
                  PadOpIr{in({0}, kF32, {}), o({1}, kF32), {{1, 0}}, edge()}, kF32)),
              HasSubstr("empty dimension"));
}

class NumericInt_Pad : public NumericTest {};
TEST_F(NumericInt_Pad, ConstantConvertsThroughF32ThenAs) {
  EXPECT_EQ(
      (pad<OpKind::NumericInt_Pad>(in({1}, kI8, {1}), {{1, 1}}, constant(ScalarIr::i(300)), {3})),
      (V{44, 1, 44}));
  EXPECT_EQ(
      (pad<OpKind::NumericInt_Pad>(in({1}, kU16, {1}), {{0, 1}}, constant(ScalarIr::f(-1)), {2})),
      (V{1, 65535}));
  // 16777217 is not an f32: it pads with 16777216.
  EXPECT_EQ((pad<OpKind::NumericInt_Pad>(in({1}, kI32, {0}), {{1, 0}},
                                         constant(ScalarIr::i(16777217)), {2})),
            (V{16777216, 0}));
  EXPECT_THAT(
      run_error(make_op<OpKind::NumericInt_Pad>(
          PadOpIr{in({1}, kI32, {0}), o({2}, kI32), {{1, 0}}, constant(ScalarIr::f(kNaN))}, kI32)),
      HasSubstr("cannot be represented"));
}
TEST_F(NumericInt_Pad, ReflectAndEdgeKeepU64Bits) {
  const auto x = in64({3}, kU64, {kU64Max, 1, kTwo63});
  const auto t = o({6}, kU64);
  run(make_op<OpKind::NumericInt_Pad>(PadOpIr{x, t, {{2, 1}}, reflect()}, kU64));
  EXPECT_EQ(get64(t), (U{kTwo63, 1, kU64Max, 1, kTwo63, 1}));
  const auto y = in({2, 2}, kI32, {1, 2, 3, 4});
  EXPECT_EQ((pad<OpKind::NumericInt_Pad>(y, {{1, 0}, {0, 1}}, edge(), {3, 3})),
            (V{1, 2, 2, 1, 2, 2, 3, 4, 4}));
}

}  // namespace
}  // namespace tb::test
