// FloatOperationIr lowering (lower_float.cpp). Expected values follow burn-flex (Burn's reference
// CPU backend): libm math on the f32/f64 value, f16/bf16 computed in f32 and rounded once.
#include <cmath>
#include <cstring>
#include <limits>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

double f32(double v) {
  return static_cast<float>(v);
}
double f16(double v) {
  return static_cast<float>(c10::Half(static_cast<float>(v)));
}
double bf16(double v) {
  return static_cast<float>(c10::BFloat16(static_cast<float>(v)));
}

class FloatOp : public OpTest {
 protected:
  TensorIr input(Dims dims, DType dtype, const std::vector<double>& values) {
    auto t = tir(next_++, std::move(dims), dtype);
    put(t, values);
    return t;
  }
  TensorIr output(Dims dims, DType dtype = DTypeKind::F32) {
    return out(next_++, std::move(dims), dtype);
  }

  // Runs a unary Float op on `x` (shape [n]) and returns the result in `dtype`.
  template <OpKind K>
  std::vector<double> unary(const std::vector<double>& x, DType dtype = DTypeKind::F32,
                            DType out_dtype = DTypeKind::F32, bool same_out = true) {
    const auto a = input({x.size()}, dtype, x);
    const auto o = output({x.size()}, same_out ? dtype : out_dtype);
    run(make_op<K>(UnaryOpIr{a, o}, dtype));
    return get(o);
  }
  template <OpKind K>
  std::vector<double> binary(Dims ld, const std::vector<double>& l, Dims rd,
                             const std::vector<double>& r, Dims od, DType dtype = DTypeKind::F32) {
    const auto a = input(ld, dtype, l);
    const auto b = input(rd, dtype, r);
    const auto o = output(od, dtype);
    run(make_op<K>(BinaryOpIr{a, b, o}, dtype));
    return get(o);
  }

  std::uint64_t next_ = 1;
};

// Expected values of a unary op in a dtype: f applied to the dtype's value of x, rounded back.
std::vector<double> expected(double (*f)(double), const std::vector<double>& x,
                             double (*round)(double) = f32) {
  std::vector<double> out;
  for (double v : x) out.push_back(round(f(round(v))));
  return out;
}

// One test per element-wise unary leaf: F32 values (incl. NaN/inf/domain edges), F64, F16, BF16.
#define TB_UNARY_TEST(Leaf, fn, ...)                                                           \
  class Float_##Leaf : public FloatOp {};                                                      \
  TEST_F(Float_##Leaf, MatchesLibmInEveryFloatDType) {                                         \
    const std::vector<double> x = {__VA_ARGS__};                                               \
    const auto f = [](double v) { return static_cast<double>(fn(v)); };                        \
    expect_near(unary<OpKind::Float_##Leaf>(x, DTypeKind::F32), expected(+f, x), 1e-6);        \
    expect_near(unary<OpKind::Float_##Leaf>(x, DTypeKind::F64),                                \
                expected(+f, x, [](double v) { return v; }), 1e-14);                           \
    expect_near(unary<OpKind::Float_##Leaf>(x, DTypeKind::F16), expected(+f, x, f16), 1e-3);   \
    expect_near(unary<OpKind::Float_##Leaf>(x, DTypeKind::BF16), expected(+f, x, bf16), 1e-2); \
    expect_near(unary<OpKind::Float_##Leaf>(x, DTypeKind::Flex32), expected(+f, x), 1e-6);     \
  }

TB_UNARY_TEST(Exp, std::exp, 0, 1, -1, 2.5, -kInf, kInf, kNaN, 10)
TB_UNARY_TEST(Log, std::log, 1, 2.5, 0, -1, kInf, kNaN, 0.001)
TB_UNARY_TEST(Log1p, std::log1p, 0, 1e-5, -1, -2, 3, kInf, kNaN)
TB_UNARY_TEST(Erf, std::erf, 0, 0.5, -0.5, 2, -3, kInf, -kInf, kNaN)
TB_UNARY_TEST(Sqrt, std::sqrt, 0, 4, 2, -1, kInf, kNaN, 0.25)
TB_UNARY_TEST(Cos, std::cos, 0, 1, -2, 3.14159, kNaN, 100)
TB_UNARY_TEST(Cosh, std::cosh, 0, 1, -2, 5, kNaN, -kInf)
TB_UNARY_TEST(Sin, std::sin, 0, 1, -2, 3.14159, kNaN, 100)
TB_UNARY_TEST(Sinh, std::sinh, 0, 1, -2, 5, kNaN, -kInf)
TB_UNARY_TEST(Tan, std::tan, 0, 1, -1.2, 0.5, kNaN)
TB_UNARY_TEST(Tanh, std::tanh, 0, 1, -2, 20, -kInf, kNaN)
TB_UNARY_TEST(ArcCos, std::acos, 0, 1, -1, 0.5, 2, kNaN)
TB_UNARY_TEST(ArcCosh, std::acosh, 1, 2, 10, 0.5, kInf, kNaN)
TB_UNARY_TEST(ArcSin, std::asin, 0, 1, -1, 0.5, -2, kNaN)
TB_UNARY_TEST(ArcSinh, std::asinh, 0, 1, -2, 100, -kInf, kNaN)
TB_UNARY_TEST(ArcTan, std::atan, 0, 1, -2, 100, kInf, -kInf, kNaN)
TB_UNARY_TEST(ArcTanh, std::atanh, 0, 0.5, -0.5, 1, -1, 2, kNaN)
TB_UNARY_TEST(Floor, std::floor, 0, 1.5, -1.5, 2, -0.1, kInf, kNaN, 1e20)
TB_UNARY_TEST(Ceil, std::ceil, 0, 1.5, -1.5, 2, -0.1, kInf, kNaN, 1e20)
TB_UNARY_TEST(Trunc, std::trunc, 0, 1.7, -1.7, 2, -0.1, -kInf, kNaN, 1e20)
TB_UNARY_TEST(
    Recip, [](double v) { return 1.0 / v; }, 1, 2, -4, 0.1, 0, kInf, kNaN)
#undef TB_UNARY_TEST

TEST_F(Float_Recip, NegativeZeroGivesNegativeInfinity) {
  const auto r = unary<OpKind::Float_Recip>({-0.0, 0.0});
  EXPECT_EQ(r, (std::vector<double>{-kInf, kInf}));
}

TEST_F(Float_Exp, RankZeroEmptyAndReadWriteInputs) {
  const auto s = input({}, DTypeKind::F32, {1});
  const auto so = output({});
  run(make_op<OpKind::Float_Exp>(UnaryOpIr{rw(s), so}, DTypeKind::F32));
  expect_near(get(so), {std::exp(1.0)});
  EXPECT_EQ(exec->stats().live_tensors, 1u) << "the ReadWrite input was freed";

  const auto e = input({0, 3}, DTypeKind::F32, {});
  const auto eo = output({0, 3});
  run(make_op<OpKind::Float_Exp>(UnaryOpIr{e, eo}, DTypeKind::F32));
  EXPECT_TRUE(get(eo).empty());
}

TEST_F(Float_Sqrt, NonContiguousInput) {
  const auto a = input({2, 3}, DTypeKind::F32, {1, 4, 9, 16, 25, 36});
  const auto t = transposed(a);  // [[1, 16], [4, 25], [9, 36]]
  const auto o = output({3, 2});
  run(make_op<OpKind::Float_Sqrt>(UnaryOpIr{t, o}, DTypeKind::F32));
  EXPECT_EQ(get(o), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

// ---- Round: half to even ------------------------------------------------------------------------

class Float_Round : public FloatOp {};
TEST_F(Float_Round, TiesGoToEven) {
  const std::vector<double> x = {0.5,    1.5,    2.5, -0.5, -1.5, -2.5,
                                 2.4999, 2.5001, 3.5, 1e20, kNaN, -kInf};
  const std::vector<double> want = {0, 2, 2, -0.0, -2, -2, 2, 3, 4, 1e20, kNaN, -kInf};
  for (DType d : {DType(DTypeKind::F32), DType(DTypeKind::F64), DType(DTypeKind::F16),
                  DType(DTypeKind::BF16)}) {
    std::vector<double> w = want;
    if (d.kind == DTypeKind::F32) w[9] = f32(1e20);
    if (d.kind == DTypeKind::F16)
      w[9] = kInf, w[6] = 2, w[7] = 2;  // 1e20 → inf; 2.4999/2.5001 → 2.5
    if (d.kind == DTypeKind::BF16) w[9] = bf16(1e20), w[6] = 2, w[7] = 2;
    expect_near(unary<OpKind::Float_Round>(x, d), w, 0);
  }
  const auto r = unary<OpKind::Float_Round>({-0.5});
  EXPECT_TRUE(std::signbit(r[0])) << "-0.5 rounds to -0";
}

// ---- PowfScalar, Powf, Hypot, ArcTan2 ----------------------------------------------------------

class Float_PowfScalar : public FloatOp {
 protected:
  std::vector<double> pow(const std::vector<double>& x, ScalarIr e, DType d = DTypeKind::F32) {
    const auto a = input({x.size()}, d, x);
    const auto o = output({x.size()}, d);
    run(make_op<OpKind::Float_PowfScalar>(ScalarOpIr{a, e, o}, d));
    return get(o);
  }
};
TEST_F(Float_PowfScalar, FollowsPowfIncludingItsEdgeCases) {
  const std::vector<double> x = {4, 2, 0, -0.0, -kInf, kInf, -8, kNaN};
  // pow(x, 0.5) is not sqrt: pow(-inf, 0.5) = +inf, pow(-0, 0.5) = +0.
  expect_near(pow(x, ScalarIr::f(0.5)), {2, std::sqrt(2.0), 0, 0, kInf, kInf, kNaN, kNaN});
  EXPECT_FALSE(std::signbit(pow({-0.0}, ScalarIr::f(0.5))[0]));
  expect_near(pow(x, ScalarIr::f(-0.5)), {0.5, 1 / std::sqrt(2.0), kInf, kInf, 0, 0, kNaN, kNaN});
  expect_near(pow({2, -2, 0.5}, ScalarIr::f(1.5)), {std::pow(2.0, 1.5), kNaN, std::pow(0.5, 1.5)});
}
TEST_F(Float_PowfScalar, IntegralExponentsAsPowi) {
  const std::vector<double> x = {3, -2, 0, kNaN, -kInf};
  expect_near(pow(x, ScalarIr::f(0)), {1, 1, 1, 1, 1});
  expect_near(pow(x, ScalarIr::i(1)), {3, -2, 0, kNaN, -kInf});
  expect_near(pow(x, ScalarIr::f(2)), {9, 4, 0, kNaN, kInf});
  expect_near(pow(x, ScalarIr::i(3)), {27, -8, 0, kNaN, -kInf});
  expect_near(pow(x, ScalarIr::f(-1)), {1.0 / 3, -0.5, kInf, kNaN, -0.0});
  expect_near(pow(x, ScalarIr::i(-2)), {1.0 / 9, 0.25, kInf, kNaN, 0});
  expect_near(pow({2, -3}, ScalarIr::u(4)), {16, 81});
}
TEST_F(Float_PowfScalar, HalfTypesAndF64) {
  expect_near(pow({1.5, 2, 3}, ScalarIr::f(2.5), DTypeKind::F16),
              {f16(std::pow(1.5, 2.5)), f16(std::pow(2.0, 2.5)), f16(std::pow(3.0, 2.5))}, 1e-3);
  expect_near(pow({1.5, 2}, ScalarIr::f(0.3), DTypeKind::BF16),
              {bf16(std::pow(1.5, 0.3)), bf16(std::pow(2.0, 0.3))}, 1e-2);
  expect_near(pow({1.1}, ScalarIr::f(100.5), DTypeKind::F64), {std::pow(1.1, 100.5)}, 1e-14);
}

class Float_Powf : public FloatOp {};
TEST_F(Float_Powf, ElementwiseWithBroadcasting) {
  // [2, 1] ^ [3] → [2, 3]
  expect_near(binary<OpKind::Float_Powf>({2, 1}, {2, -2}, {3}, {0, 0.5, 3}, {2, 3}),
              {1, std::sqrt(2.0), 8, 1, kNaN, -8});
  expect_near(binary<OpKind::Float_Powf>({4}, {0, kNaN, 1, -kInf}, {4}, {0, 0, kNaN, 0.5}, {4}),
              {1, 1, 1, kInf});
  expect_near(binary<OpKind::Float_Powf>({2}, {1.5, 2}, {2}, {2.5, 0.5}, {2}, DTypeKind::F16),
              {f16(std::pow(1.5, 2.5)), f16(std::sqrt(2.0))}, 1e-3);
  expect_near(binary<OpKind::Float_Powf>({1}, {1.1}, {1}, {100.5}, {1}, DTypeKind::F64),
              {std::pow(1.1, 100.5)}, 1e-14);
}

class Float_Hypot : public FloatOp {};
TEST_F(Float_Hypot, OverflowSafeAndBroadcasts) {
  expect_near(binary<OpKind::Float_Hypot>({3}, {3, 5, -8}, {1}, {4}, {3}),
              {5, std::hypot(5, 4), std::hypot(8, 4)});
  expect_near(
      binary<OpKind::Float_Hypot>({2}, {1e300, 3e-300}, {2}, {1e300, 4e-300}, {2}, DTypeKind::F64),
      {std::sqrt(2.0) * 1e300, 5e-300}, 1e-14);
  expect_near(binary<OpKind::Float_Hypot>({2}, {3e30, kInf}, {2}, {4e30, kNaN}, {2}),
              {f32(5e30), kInf});
  expect_near(binary<OpKind::Float_Hypot>({1}, {3}, {1}, {4}, {1}, DTypeKind::BF16), {5});
}

class Float_ArcTan2 : public FloatOp {};
TEST_F(Float_ArcTan2, LhsIsYRhsIsX) {
  expect_near(binary<OpKind::Float_ArcTan2>({4}, {1, 1, -1, -1}, {4}, {1, -1, 1, -1}, {4}),
              {std::atan2(1, 1), std::atan2(1, -1), std::atan2(-1, 1), std::atan2(-1, -1)});
  // [2, 1] vs [2] broadcast; atan2(0, -0) = pi.
  expect_near(binary<OpKind::Float_ArcTan2>({2, 1}, {0, 2}, {2}, {-0.0, 0}, {2, 2}),
              {M_PI, 0, M_PI / 2, M_PI / 2});
  expect_near(binary<OpKind::Float_ArcTan2>({1}, {1}, {1}, {2}, {1}, DTypeKind::F16),
              {f16(std::atan2(1, 2))}, 1e-3);
}

// ---- Fmod, FmodScalar (protocol 6): C fmod, the sign of the dividend ---------------------------

class Float_Fmod : public FloatOp {};
TEST_F(Float_Fmod, SignOfTheDividendInEveryFloatDType) {
  const std::vector<double> l = {5.5, -5.5, 5.5, -5.5, 0, -0.0, 3, kInf, kNaN, 7};
  const std::vector<double> r = {2, 2, -2, -2, 3, 3, 0, 2, 2, kInf};
  const std::vector<double> want = {1.5, -1.5, 1.5, -1.5, 0, -0.0, kNaN, kNaN, kNaN, 7};
  for (DType d : {DType(DTypeKind::F32), DType(DTypeKind::F64), DType(DTypeKind::F16),
                  DType(DTypeKind::BF16)}) {
    const auto got = binary<OpKind::Float_Fmod>({10}, l, {10}, r, {10}, d);
    expect_near(got, want, 0);
    EXPECT_TRUE(std::signbit(got[1]) && std::signbit(got[5]))
        << "the dividend's sign, " << d.name();
  }
  // [2, 2] against [1, 2]: fmod is not Python's remainder (-7 fmod 3 is -1, not 2).
  expect_near(binary<OpKind::Float_Fmod>({2, 2}, {7, -7, 8, -8}, {1, 2}, {3, -3}, {2, 2}),
              {1, -1, 2, -2}, 0);
}

class Float_FmodScalar : public FloatOp {
 protected:
  std::vector<double> fmod(const std::vector<double>& x, ScalarIr s, DType d = DTypeKind::F32) {
    const auto a = input({x.size()}, d, x);
    const auto o = output({x.size()}, d);
    run(make_op<OpKind::Float_FmodScalar>(ScalarOpIr{a, s, o}, d));
    return get(o);
  }
};
TEST_F(Float_FmodScalar, SignOfTheDividendNotOfTheDivisor) {
  const std::vector<double> x = {5.5, -5.5, 0, -0.0, kInf, kNaN};
  expect_near(fmod(x, ScalarIr::f(2)), {1.5, -1.5, 0, -0.0, kNaN, kNaN}, 0);
  expect_near(fmod(x, ScalarIr::f(-2)), {1.5, -1.5, 0, -0.0, kNaN, kNaN}, 0);
  expect_near(fmod(x, ScalarIr::i(0)), {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, 0);
  expect_near(fmod({7, -7}, ScalarIr::i(3), DTypeKind::F64), {1, -1}, 0);
}
TEST_F(Float_FmodScalar, TheDivisorIsRoundedToTheTensorsDTypeFirst) {
  // f16(0.1) = 0.0999755859375, so fmod(1, it) = 2^-12; with 0.1 itself it would be ~0.1.
  expect_near(fmod({1}, ScalarIr::f(0.1), DTypeKind::F16), {std::ldexp(1.0, -12)}, 0);
  expect_near(fmod({1}, ScalarIr::f(0.1), DTypeKind::F64), {std::fmod(1.0, 0.1)}, 0);
}

// ---- IsNan, IsInf -------------------------------------------------------------------------------

class Float_IsNan : public FloatOp {};
TEST_F(Float_IsNan, IntoEveryBoolStore) {
  const std::vector<double> x = {1, kNaN, kInf, -kNaN, 0};
  for (auto store : {BoolStore::Native, BoolStore::U8, BoolStore::U32}) {
    for (DType d : {DType(DTypeKind::F32), DType(DTypeKind::F16), DType(DTypeKind::F64)}) {
      EXPECT_EQ(unary<OpKind::Float_IsNan>(x, d, DType::boolean(store), false),
                (std::vector<double>{0, 1, 0, 1, 0}));
    }
  }
}

class Float_IsInf : public FloatOp {};
TEST_F(Float_IsInf, IntoEveryBoolStore) {
  const std::vector<double> x = {1, kNaN, kInf, -kInf, 1e30};
  for (auto store : {BoolStore::Native, BoolStore::U8, BoolStore::U32}) {
    EXPECT_EQ(unary<OpKind::Float_IsInf>(x, DTypeKind::F32, DType::boolean(store), false),
              (std::vector<double>{0, 0, 1, 1, 0}));
    // 1e30 overflows f16 to inf when registered.
    EXPECT_EQ(unary<OpKind::Float_IsInf>(x, DTypeKind::F16, DType::boolean(store), false),
              (std::vector<double>{0, 0, 1, 1, 1}));
  }
}

// ---- IntoInt: Rust `as`
// ---------------------------------------------------------------------------

class Float_IntoInt : public FloatOp {
 protected:
  TensorData into_int(const std::vector<double>& x, DType from, DType to) {
    const auto a = input({x.size()}, from, x);
    const auto o = output({x.size()}, to);
    run(make_op<OpKind::Float_IntoInt>(CastOpIr{a, o}, from));
    auto data = exec->read_tensor(ro(o));
    EXPECT_TRUE(data);
    return data ? data.value() : TensorData{};
  }
  template <class T>
  std::vector<T> as(const TensorData& d) {
    std::vector<T> out(d.bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), d.bytes.data(), d.bytes.size());
    return out;
  }
};

TEST_F(Float_IntoInt, TruncatesSaturatesAndMapsNaNToZeroForEveryIntDType) {
  const std::vector<double> x = {1.9, -1.9, kNaN, kInf, -kInf, 1e10, -1e10, 300, -300, 65535.5};
  EXPECT_EQ(as<std::int64_t>(into_int(x, DTypeKind::F64, DTypeKind::I64)),
            (std::vector<std::int64_t>{1, -1, 0, INT64_MAX, INT64_MIN, 10000000000LL,
                                       -10000000000LL, 300, -300, 65535}));
  EXPECT_EQ(as<std::int32_t>(into_int(x, DTypeKind::F32, DTypeKind::I32)),
            (std::vector<std::int32_t>{1, -1, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 300,
                                       -300, 65535}));
  EXPECT_EQ(as<std::int16_t>(into_int(x, DTypeKind::F32, DTypeKind::I16)),
            (std::vector<std::int16_t>{1, -1, 0, 32767, -32768, 32767, -32768, 300, -300, 32767}));
  EXPECT_EQ(as<std::int8_t>(into_int(x, DTypeKind::F32, DTypeKind::I8)),
            (std::vector<std::int8_t>{1, -1, 0, 127, -128, 127, -128, 127, -128, 127}));
  EXPECT_EQ(as<std::uint8_t>(into_int(x, DTypeKind::F32, DTypeKind::U8)),
            (std::vector<std::uint8_t>{1, 0, 0, 255, 0, 255, 0, 255, 0, 255}));
  EXPECT_EQ(as<std::uint16_t>(into_int(x, DTypeKind::F32, DTypeKind::U16)),
            (std::vector<std::uint16_t>{1, 0, 0, 65535, 0, 65535, 0, 300, 0, 65535}));
  EXPECT_EQ(as<std::uint32_t>(into_int(x, DTypeKind::F64, DTypeKind::U32)),
            (std::vector<std::uint32_t>{1, 0, 0, UINT32_MAX, 0, UINT32_MAX, 0, 300, 0, 65535}));
  EXPECT_EQ(as<std::uint64_t>(into_int(x, DTypeKind::F64, DTypeKind::U64)),
            (std::vector<std::uint64_t>{1, 0, 0, UINT64_MAX, 0, 10000000000ULL, 0, 300, 0, 65535}));
}

TEST_F(Float_IntoInt, LargeValuesAtTheEdgesOfInt64AndUint64) {
  const std::vector<double> x = {9223372036854775808.0,   // 2^63
                                 9223372036854774784.0,   // the largest f64 below 2^63
                                 -9223372036854775808.0,  // -2^63
                                 1e19,
                                 18446744073709549568.0,
                                 18446744073709551616.0};
  EXPECT_EQ(as<std::int64_t>(into_int(x, DTypeKind::F64, DTypeKind::I64)),
            (std::vector<std::int64_t>{INT64_MAX, 9223372036854774784LL, INT64_MIN, INT64_MAX,
                                       INT64_MAX, INT64_MAX}));
  EXPECT_EQ(
      as<std::uint64_t>(into_int(x, DTypeKind::F64, DTypeKind::U64)),
      (std::vector<std::uint64_t>{9223372036854775808ULL, 9223372036854774784ULL, 0,
                                  10000000000000000000ULL, 18446744073709549568ULL, UINT64_MAX}));
}

TEST_F(Float_IntoInt, FromHalfTypes) {
  EXPECT_EQ(as<std::int32_t>(into_int({2.75, -2.75, 65504, kNaN}, DTypeKind::F16, DTypeKind::I32)),
            (std::vector<std::int32_t>{2, -2, 65504, 0}));
  EXPECT_EQ(as<std::int8_t>(into_int({-3.5, 1e30}, DTypeKind::BF16, DTypeKind::I8)),
            (std::vector<std::int8_t>{-3, 127}));
  EXPECT_EQ(as<std::int32_t>(into_int({7.9}, DTypeKind::Flex32, DTypeKind::I32)),
            (std::vector<std::int32_t>{7}));
}

// ---- Matmul -------------------------------------------------------------------------------------

class Float_Matmul : public FloatOp {
 protected:
  std::vector<double> matmul(Dims ld, const std::vector<double>& l, Dims rd,
                             const std::vector<double>& r, Dims od, DType d = DTypeKind::F32) {
    const auto a = input(ld, d, l);
    const auto b = input(rd, d, r);
    const auto o = output(od, d);
    run(make_op<OpKind::Float_Matmul>(MatmulOpIr{a, b, o}, d));
    return get(o);
  }
};
TEST_F(Float_Matmul, TwoDimensional) {
  // [[1, 2, 3], [4, 5, 6]] · [[7, 8], [9, 10], [11, 12]]
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  const std::vector<double> want = {58, 64, 139, 154};
  for (DType d : {DType(DTypeKind::F32), DType(DTypeKind::F64), DType(DTypeKind::F16),
                  DType(DTypeKind::BF16), DType(DTypeKind::Flex32)}) {
    EXPECT_EQ(matmul({2, 3}, a, {3, 2}, b, {2, 2}, d), want) << d.name();
  }
}
TEST_F(Float_Matmul, BroadcastsBatchDims) {
  // lhs [2, 1, 1, 2], rhs [1, 3, 2, 1] → [2, 3, 1, 1]
  const auto r = matmul({2, 1, 1, 2}, {1, 2, 3, 4}, {1, 3, 2, 1}, {1, 1, 2, 0, 0, 3}, {2, 3, 1, 1});
  // lhs rows (1, 2), (3, 4); rhs cols (1, 1), (2, 0), (0, 3)
  EXPECT_EQ(r, (std::vector<double>{3, 2, 6, 7, 6, 12}));
}
TEST_F(Float_Matmul, EmptyInnerDimGivesZerosAndNonContiguousInputs) {
  EXPECT_EQ(matmul({2, 0}, {}, {0, 3}, {}, {2, 3}), (std::vector<double>(6, 0)));
  const auto a = input({2, 2}, DTypeKind::F32, {1, 2, 3, 4});
  const auto t = transposed(a);  // [[1, 3], [2, 4]]
  const auto o = output({2, 2});
  run(make_op<OpKind::Float_Matmul>(MatmulOpIr{t, a, o}, DTypeKind::F32));
  EXPECT_EQ(get(o), (std::vector<double>{10, 14, 14, 20}));
}
TEST_F(Float_Matmul, HalfAccumulatesInF32) {
  // 2048 + 1 + 1 … is not representable step by step in f16, the f32 sum rounds once.
  const std::vector<double> a = {2048, 1, 1, 1}, b = {1, 1, 1, 1};
  EXPECT_EQ(matmul({1, 4}, a, {4, 1}, b, {1, 1}, DTypeKind::F16), (std::vector<double>{2052}));
}

// ---- Cross --------------------------------------------------------------------------------------

class Float_Cross : public FloatOp {
 protected:
  std::vector<double> cross(Dims ld, const std::vector<double>& l, Dims rd,
                            const std::vector<double>& r, Dims od, std::uint64_t dim,
                            DType d = DTypeKind::F32) {
    const auto a = input(ld, d, l);
    const auto b = input(rd, d, r);
    const auto o = output(od, d);
    run(make_op<OpKind::Float_Cross>(CrossOpIr{a, b, o, dim}, d));
    return get(o);
  }
};
TEST_F(Float_Cross, AlongTheLastDimWithBroadcasting) {
  // [2, 3] × [1, 3]: x × y = z, y × y = 0
  EXPECT_EQ(cross({2, 3}, {1, 0, 0, 0, 1, 0}, {1, 3}, {0, 1, 0}, {2, 3}, 1),
            (std::vector<double>{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(cross({1, 3}, {1, 2, 3}, {1, 3}, {4, 5, 6}, {1, 3}, 1, DTypeKind::F64),
            (std::vector<double>{-3, 6, -3}));
  EXPECT_EQ(cross({1, 3}, {1, 2, 3}, {1, 3}, {4, 5, 6}, {1, 3}, 1, DTypeKind::F16),
            (std::vector<double>{-3, 6, -3}));
}
TEST_F(Float_Cross, AlongTheFirstDim) {
  // columns are the vectors: [3, 2]
  EXPECT_EQ(cross({3, 2}, {1, 0, 2, 1, 3, 0}, {3, 2}, {4, 0, 5, 1, 6, 0}, {3, 2}, 0),
            (std::vector<double>{-3, 0, 6, 0, -3, 0}));
}
TEST_F(Float_Cross, DimensionOfWrongSizeIsAnError) {
  const auto a = input({2, 2}, DTypeKind::F32, {1, 2, 3, 4});
  EXPECT_THAT(
      run_error(make_op<OpKind::Float_Cross>(CrossOpIr{a, a, output({2, 2}), 1}, DTypeKind::F32)),
      HasSubstr("size 3"));
}

// ---- Random -------------------------------------------------------------------------------------

class Float_Random : public FloatOp {
 protected:
  std::vector<double> random(Distribution d, std::uint64_t n, DType dtype = DTypeKind::F32) {
    const auto o = output({n}, dtype);
    run(make_op<OpKind::Float_Random>(RandomOpIr{o, d}, dtype));
    return get(o);
  }
  static double mean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  }
  static double stddev(const std::vector<double>& v) {
    const double m = mean(v);
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / static_cast<double>(v.size()));
  }
};
TEST_F(Float_Random, DefaultIsUniformOnZeroOne) {
  for (DType d : {DType(DTypeKind::F32), DType(DTypeKind::F64), DType(DTypeKind::F16),
                  DType(DTypeKind::BF16)}) {
    const auto v = random({DistributionKind::Default, 0, 0}, 20000, d);
    ASSERT_EQ(v.size(), 20000u);
    for (double x : v) {
      ASSERT_GE(x, 0.0) << d.name();
      ASSERT_LT(x, 1.0) << d.name();
    }
    EXPECT_NEAR(mean(v), 0.5, 0.02) << d.name();
  }
}
TEST_F(Float_Random, UniformBernoulliNormal) {
  const auto u = random({DistributionKind::Uniform, -2, 3}, 20000);
  for (double x : u) {
    ASSERT_GE(x, -2.0);
    ASSERT_LT(x, 3.0);
  }
  EXPECT_NEAR(mean(u), 0.5, 0.1);
  EXPECT_NEAR(stddev(u), 5 / std::sqrt(12.0), 0.05);

  const auto b = random({DistributionKind::Bernoulli, 0.3, 0}, 20000, DTypeKind::F16);
  for (double x : b) ASSERT_TRUE(x == 0 || x == 1) << x;
  EXPECT_NEAR(mean(b), 0.3, 0.02);
  EXPECT_EQ(random({DistributionKind::Bernoulli, 1, 0}, 10), std::vector<double>(10, 1));
  EXPECT_EQ(random({DistributionKind::Bernoulli, 0, 0}, 10), std::vector<double>(10, 0));

  const auto n = random({DistributionKind::Normal, 2, 0.5}, 20000, DTypeKind::F64);
  EXPECT_NEAR(mean(n), 2, 0.02);
  EXPECT_NEAR(stddev(n), 0.5, 0.02);
  // rand_distr takes the sign of std as part of std·z: same law as |std|.
  EXPECT_NEAR(stddev(random({DistributionKind::Normal, 0, -3}, 20000)), 3, 0.1);
}
TEST_F(Float_Random, UniformNeverReachesHighInHalfPrecision) {
  // In f16 the values just below 1 are 1 − 2^-11 apart: an f32 sample rounds up to 1 often.
  const auto v = random({DistributionKind::Uniform, 0.999, 1}, 5000, DTypeKind::F16);
  for (double x : v) {
    ASSERT_GE(x, f16(0.999));
    ASSERT_LT(x, 1.0);
  }
}
TEST_F(Float_Random, SeedMakesItReproducible) {
  exec->seed(42);
  const auto a = random({DistributionKind::Normal, 0, 1}, 64);
  const auto a2 = random({DistributionKind::Default, 0, 0}, 64);
  exec->seed(42);
  EXPECT_EQ(random({DistributionKind::Normal, 0, 1}, 64), a);
  EXPECT_EQ(random({DistributionKind::Default, 0, 0}, 64), a2);
  exec->seed(43);
  EXPECT_NE(random({DistributionKind::Normal, 0, 1}, 64), a);
  EXPECT_NE(random({DistributionKind::Normal, 0, 1}, 64),
            random({DistributionKind::Normal, 0, 1}, 64));
}
TEST_F(Float_Random, ShapesAndInvalidParameters) {
  const auto o = output({2, 0, 3});
  run(make_op<OpKind::Float_Random>(RandomOpIr{o, {DistributionKind::Default, 0, 0}},
                                    DTypeKind::F32));
  EXPECT_TRUE(get(o).empty());
  const auto s = output({});
  run(make_op<OpKind::Float_Random>(RandomOpIr{s, {DistributionKind::Uniform, 5, 6}},
                                    DTypeKind::F32));
  const auto sv = get(s);
  ASSERT_EQ(sv.size(), 1u);
  EXPECT_TRUE(sv[0] >= 5 && sv[0] < 6);
  EXPECT_THAT(run_error(make_op<OpKind::Float_Random>(
                  RandomOpIr{output({2}), {DistributionKind::Uniform, 1, 1}}, DTypeKind::F32)),
              HasSubstr("low < high"));
  EXPECT_THAT(run_error(make_op<OpKind::Float_Random>(
                  RandomOpIr{output({2}), {DistributionKind::Bernoulli, 1.5, 0}}, DTypeKind::F32)),
              HasSubstr("probability"));
  EXPECT_THAT(run_error(make_op<OpKind::Float_Random>(
                  RandomOpIr{output({2}), {DistributionKind::Normal, 0, kInf}}, DTypeKind::F32)),
              HasSubstr("finite"));
}

// ---- GridSample2d -------------------------------------------------------------------------------

class Float_GridSample2d : public FloatOp {
 protected:
  // Input [1, 2, 2, 3]: channel 0 = [[1, 2, 3], [4, 5, 6]], channel 1 = 10 × channel 0.
  std::vector<double> sample(const std::vector<double>& grid_xy, InterpolateModeIr mode,
                             GridSamplePaddingModeIr pad, bool align, DType d = DTypeKind::F32) {
    const auto t = input({1, 2, 2, 3}, d, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60});
    const std::uint64_t points = grid_xy.size() / 2;
    const auto g = input({1, 1, points, 2}, d, grid_xy);
    const auto o = output({1, 2, 1, points}, d);
    run(make_op<OpKind::Float_GridSample2d>(
        GridSample2dOpIr{t, g, GridSampleOptionsIr{mode, pad, align}, o}, d));
    return get(o);
  }
  // Channel 0 of a result, and a check that channel 1 is ten times it.
  static std::vector<double> ch0(const std::vector<double>& v) {
    const std::size_t n = v.size() / 2;
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isnan(v[i])) {
        EXPECT_TRUE(std::isnan(v[n + i]));
      } else {
        EXPECT_NEAR(v[n + i], 10 * v[i], 1e-4 * std::max(1.0, std::abs(v[n + i])));
      }
    }
    return std::vector<double>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
  }
  using M = InterpolateModeIr;
  using P = GridSamplePaddingModeIr;
};

TEST_F(Float_GridSample2d, BilinearAlignCorners) {
  // px = x + 1, py = (y + 1) / 2
  const std::vector<double> g = {0, 0, -1, -1, 1, 1, 0.5, -0.5, 1.5, 0};
  expect_near(ch0(sample(g, M::Bilinear, P::Zeros, true)), {3.5, 1, 6, 3.25, 2.25});
  expect_near(ch0(sample(g, M::Bilinear, P::Border, true)), {3.5, 1, 6, 3.25, 4.5});
  expect_near(ch0(sample(g, M::Bilinear, P::Reflection, true)), {3.5, 1, 6, 3.25, 4});
}
TEST_F(Float_GridSample2d, BilinearWithoutAlignCorners) {
  // px = 1.5 (x + 1) − 0.5, py = (y + 1) − 0.5
  const std::vector<double> g = {-1, -1, 0, 0, 1, 1};
  expect_near(ch0(sample(g, M::Bilinear, P::Zeros, false)), {0.25, 3.5, 1.5});
  expect_near(ch0(sample(g, M::Bilinear, P::Border, false)), {1, 3.5, 6});
  expect_near(ch0(sample(g, M::Bilinear, P::Reflection, false)), {1, 3.5, 6});
  // Far outside: reflection folds back (x = 3: px = 5.5 → −0.5 in [−0.5, 2.5]; py = 0.5).
  expect_near(ch0(sample({3, 0}, M::Bilinear, P::Reflection, false)), {2.5});
  expect_near(ch0(sample({3, 0}, M::Bilinear, P::Zeros, false)), {0});
}
TEST_F(Float_GridSample2d, NearestRoundsHalfToEven) {
  // align: px = x + 1 → 0.5 rounds to 0, 1.5 to 2; py = (y + 1)/2 = 0.5 → 0.
  const std::vector<double> g = {-0.5, 0, 0.5, 0, 0, 1, 2, 0};
  EXPECT_EQ(ch0(sample(g, M::Nearest, P::Zeros, true)), (std::vector<double>{1, 3, 5, 0}));
  EXPECT_EQ(ch0(sample(g, M::Nearest, P::Border, true)), (std::vector<double>{1, 3, 5, 3}));
  // x = 2 → px = 3 → reflected in [0, 2] to 1.
  EXPECT_EQ(ch0(sample(g, M::Nearest, P::Reflection, true)), (std::vector<double>{1, 3, 5, 2}));
}
TEST_F(Float_GridSample2d, NonFiniteCoordinatesAsBurnFlex) {
  // Border maps a non-finite point to the centre (px = 1, py = 0.5).
  expect_near(ch0(sample({kNaN, 0, 0, kInf}, M::Bilinear, P::Border, true)), {3.5, 3.5});
  // Zeros / Reflection: the weights become NaN.
  expect_near(ch0(sample({kNaN, 0}, M::Bilinear, P::Zeros, true)), {kNaN});
  expect_near(ch0(sample({kInf, 0}, M::Bilinear, P::Reflection, false)), {kNaN});
}
TEST_F(Float_GridSample2d, HalfTypesAndF64) {
  expect_near(ch0(sample({0.5, -0.5, 0, 0}, M::Bilinear, P::Zeros, true, DTypeKind::F16)),
              {3.25, 3.5}, 1e-3);
  expect_near(ch0(sample({0.5, -0.5}, M::Bilinear, P::Border, true, DTypeKind::BF16)), {3.25},
              1e-2);
  expect_near(ch0(sample({0.5, -0.5}, M::Bilinear, P::Border, true, DTypeKind::F64)), {3.25},
              1e-14);
}
TEST_F(Float_GridSample2d, BicubicInterpolatesThroughTheSamples) {
  // With align_corners, grid points on pixel centres return the input values exactly.
  const std::vector<double> g = {-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1};
  expect_near(ch0(sample(g, M::Bicubic, P::Border, true)), {1, 2, 3, 4, 5, 6});
  // px = 0.5 on row 0, taps at x = −1 (clamped to 0), 0, 1, 2 → 1, 1, 2, 3 with the A = −0.75
  // weights (−0.09375, 0.59375, 0.59375, −0.09375).
  expect_near(ch0(sample({-0.5, -1}, M::Bicubic, P::Border, true)), {1.40625});
}
TEST_F(Float_GridSample2d, OutputShapeAndUnsupportedModes) {
  // N = 2, Hout = 2, Wout = 1: one point per row.
  const auto t = input({2, 1, 1, 2}, DTypeKind::F32, {1, 2, 3, 4});
  const auto g = input({2, 2, 1, 2}, DTypeKind::F32, {-1, 0, 1, 0, -1, 0, 1, 0});
  const auto o = output({2, 1, 2, 1});
  run(make_op<OpKind::Float_GridSample2d>(
      GridSample2dOpIr{t, g, GridSampleOptionsIr{M::Bilinear, P::Zeros, true}, o}, DTypeKind::F32));
  EXPECT_EQ(get(o), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_THAT(run_error(make_op<OpKind::Float_GridSample2d>(
                  GridSample2dOpIr{t, g, GridSampleOptionsIr{M::Lanczos3, P::Zeros, true},
                                   output({2, 1, 2, 1})},
                  DTypeKind::F32)),
              HasSubstr("no Lanczos3 mode"));
}

}  // namespace
}  // namespace tb::test
