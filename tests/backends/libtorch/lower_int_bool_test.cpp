// IntOperationIr and BoolOperationIr lowering (lower_int_bool.cpp). Expected values follow
// burn-flex: Rust integer semantics on each dtype's own width (wrapping shifts and matmul, logical
// right shift for unsigned dtypes), `as` conversions.
#include <cstring>
#include <limits>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

class IntOp : public OpTest {
 protected:
  TensorIr input(Dims dims, DType dtype, const std::vector<double>& values) {
    auto t = tir(next_++, std::move(dims), dtype);
    put(t, values);
    return t;
  }
  // Exact 64-bit values (U64 / I64 beyond 2^53), registered from their bytes.
  template <class T>
  TensorIr input_raw(Dims dims, DType dtype, const std::vector<T>& values) {
    auto t = tir(next_++, std::move(dims), dtype);
    std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
    if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    auto s = exec->register_tensor(
        t.id, TensorData{Bytes::from_vector(std::move(bytes)), t.shape.dims, dtype});
    EXPECT_TRUE(s);
    return t;
  }
  template <class T>
  std::vector<T> get_raw(const TensorIr& t) {
    auto data = exec->read_tensor(ro(t));
    EXPECT_TRUE(data) << (data ? "" : data.error().what());
    if (!data) return {};
    EXPECT_EQ(data.value().dtype, t.dtype);
    EXPECT_EQ(data.value().shape, t.shape.dims);
    std::vector<T> out(data.value().bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), data.value().bytes.data(), data.value().bytes.size());
    return out;
  }
  TensorIr output(Dims dims, DType dtype) { return out(next_++, std::move(dims), dtype); }

  template <OpKind K>
  std::vector<double> binary(DType d, Dims ld, const std::vector<double>& l, Dims rd,
                             const std::vector<double>& r, Dims od) {
    const auto a = input(ld, d, l);
    const auto b = input(rd, d, r);
    const auto o = output(od, d);
    run(make_op<K>(BinaryOpIr{a, b, o}));
    return get(o);
  }
  template <OpKind K>
  std::vector<double> scalar(DType d, const std::vector<double>& l, ScalarIr s) {
    const auto a = input({l.size()}, d, l);
    const auto o = output({l.size()}, d);
    run(make_op<K>(ScalarOpIr{a, s, o}));
    return get(o);
  }
  template <OpKind K>
  std::vector<double> unary(DType d, const std::vector<double>& x) {
    const auto a = input({x.size()}, d, x);
    const auto o = output({x.size()}, d);
    run(make_op<K>(UnaryOpIr{a, o}));
    return get(o);
  }

  std::uint64_t next_ = 1;
};

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kTwo63 = std::uint64_t{1} << 63;

// ---- IntoFloat
// ------------------------------------------------------------------------------------

class Int_IntoFloat : public IntOp {
 protected:
  std::vector<double> cast(const TensorIr& a, DType to) {
    const auto o = output(a.shape.dims, to);
    run(make_op<OpKind::Int_IntoFloat>(CastOpIr{a, o}));
    return get(o);
  }
};
TEST_F(Int_IntoFloat, EveryIntDTypeIntoEveryFloatDType) {
  EXPECT_EQ(cast(input({3}, DTypeKind::I32, {-7, 0, 2147483647}), DTypeKind::F32),
            (std::vector<double>{-7, 0, 2147483648.0}));
  EXPECT_EQ(cast(input({2}, DTypeKind::I8, {-128, 127}), DTypeKind::F64),
            (std::vector<double>{-128, 127}));
  EXPECT_EQ(cast(input({2}, DTypeKind::U8, {255, 3}), DTypeKind::F16),
            (std::vector<double>{255, 3}));
  EXPECT_EQ(cast(input({2}, DTypeKind::U16, {65535, 1}), DTypeKind::F32),
            (std::vector<double>{65535, 1}));
  EXPECT_EQ(cast(input({2}, DTypeKind::U32, {4294967295.0, 7}), DTypeKind::F64),
            (std::vector<double>{4294967295.0, 7}));
  // f16 saturates to inf past 65504; bf16 rounds 257 to 256 (even).
  EXPECT_EQ(cast(input({2}, DTypeKind::I32, {70000, -2049}), DTypeKind::F16),
            (std::vector<double>{std::numeric_limits<double>::infinity(), -2048}));
  EXPECT_EQ(cast(input({1}, DTypeKind::I16, {257}), DTypeKind::BF16), (std::vector<double>{256}));
  EXPECT_EQ(cast(input({1}, DTypeKind::I64, {3}), DTypeKind::Flex32), (std::vector<double>{3}));
}
TEST_F(Int_IntoFloat, I64AndU64RoundCorrectly) {
  // 2^53 + 1 is not an f64: ties to even gives 2^53.
  const auto big = input_raw<std::int64_t>({2}, DTypeKind::I64, {9007199254740993LL, INT64_MIN});
  EXPECT_EQ(cast(big, DTypeKind::F64),
            (std::vector<double>{9007199254740992.0, -9223372036854775808.0}));
  // u64 values with the top bit set are not negative; 2^63 + 2^39 + 1 rounds UP to 2^63 + 2^40 in
  // f32 (a halve-then-convert without the sticky bit would round down to 2^63).
  const auto u = input_raw<std::uint64_t>(
      {4}, DTypeKind::U64, {kU64Max, kTwo63, kTwo63 + (std::uint64_t{1} << 39) + 1, 5});
  EXPECT_EQ(cast(u, DTypeKind::F32),
            (std::vector<double>{18446744073709551616.0, 9223372036854775808.0,
                                 9223373136366403584.0, 5}));
  EXPECT_EQ(cast(u, DTypeKind::F64),
            (std::vector<double>{18446744073709551616.0, 9223372036854775808.0,
                                 9223372586610589696.0, 5}));
}

// ---- Bitwise and / or / xor / not
// ----------------------------------------------------------------

class Int_BitwiseAnd : public IntOp {};
TEST_F(Int_BitwiseAnd, SignedUnsignedAndBroadcast) {
  EXPECT_EQ(
      binary<OpKind::Int_BitwiseAnd>(DTypeKind::I32, {2, 2}, {12, -1, -8, 7}, {2}, {10, 5}, {2, 2}),
      (std::vector<double>{8, 5, 8, 5}));
  EXPECT_EQ(
      binary<OpKind::Int_BitwiseAnd>(DTypeKind::U8, {2}, {0xF0, 0xFF}, {2}, {0x3C, 0x81}, {2}),
      (std::vector<double>{0x30, 0x81}));
  const auto a = input_raw<std::uint64_t>({2}, DTypeKind::U64, {kU64Max, kTwo63 | 6});
  const auto b = input_raw<std::uint64_t>({2}, DTypeKind::U64, {kTwo63 | 1, kTwo63 | 3});
  const auto o = output({2}, DTypeKind::U64);
  run(make_op<OpKind::Int_BitwiseAnd>(BinaryOpIr{a, b, o}));
  EXPECT_EQ(get_raw<std::uint64_t>(o), (std::vector<std::uint64_t>{kTwo63 | 1, kTwo63 | 2}));
}
TEST_F(Int_BitwiseAnd, NonContiguousAndReadWriteInputs) {
  const auto a = input({2, 2}, DTypeKind::I64, {1, 2, 3, 4});
  const auto t = transposed(a);  // [[1, 3], [2, 4]]
  const auto b = input({2, 2}, DTypeKind::I64, {3, 3, 3, 3});
  const auto o = output({2, 2}, DTypeKind::I64);
  run(make_op<OpKind::Int_BitwiseAnd>(BinaryOpIr{rw(t), rw(b), o}));
  EXPECT_EQ(get(o), (std::vector<double>{1, 3, 2, 0}));
  EXPECT_EQ(exec->stats().live_tensors, 2u) << "a and the output remain";
}

class Int_BitwiseOr : public IntOp {};
TEST_F(Int_BitwiseOr, SignedAndUnsigned) {
  EXPECT_EQ(binary<OpKind::Int_BitwiseOr>(DTypeKind::I16, {3}, {1, -32768, 0}, {3}, {2, 1, 0}, {3}),
            (std::vector<double>{3, -32767, 0}));
  EXPECT_EQ(binary<OpKind::Int_BitwiseOr>(DTypeKind::U32, {1}, {0x80000000u}, {1}, {1}, {1}),
            (std::vector<double>{2147483649.0}));
}

class Int_BitwiseXor : public IntOp {};
TEST_F(Int_BitwiseXor, SignedAndUnsigned) {
  EXPECT_EQ(binary<OpKind::Int_BitwiseXor>(DTypeKind::I8, {2}, {-1, 5}, {1}, {0x0F}, {2}),
            (std::vector<double>{-16, 10}));
  EXPECT_EQ(
      binary<OpKind::Int_BitwiseXor>(DTypeKind::U16, {2}, {0xFFFF, 0}, {2}, {0x00FF, 0x8000}, {2}),
      (std::vector<double>{0xFF00, 0x8000}));
}

class Int_BitwiseAndScalar : public IntOp {};
TEST_F(Int_BitwiseAndScalar, OnEveryWidth) {
  EXPECT_EQ(scalar<OpKind::Int_BitwiseAndScalar>(DTypeKind::I32, {-1, 6, 9}, ScalarIr::i(12)),
            (std::vector<double>{12, 4, 8}));
  EXPECT_EQ(scalar<OpKind::Int_BitwiseAndScalar>(DTypeKind::U8, {255, 17}, ScalarIr::i(0x1F1)),
            (std::vector<double>{0xF1, 17}));
  const auto a = input_raw<std::uint64_t>({1}, DTypeKind::U64, {kU64Max});
  const auto o = output({1}, DTypeKind::U64);
  run(make_op<OpKind::Int_BitwiseAndScalar>(ScalarOpIr{a, ScalarIr::u(kTwo63 | 5), o}));
  EXPECT_EQ(get_raw<std::uint64_t>(o), (std::vector<std::uint64_t>{kTwo63 | 5}));
}

class Int_BitwiseOrScalar : public IntOp {};
TEST_F(Int_BitwiseOrScalar, MasksUnsignedWidths) {
  EXPECT_EQ(scalar<OpKind::Int_BitwiseOrScalar>(DTypeKind::U16, {1, 0x8000}, ScalarIr::i(0x10002)),
            (std::vector<double>{3, 0x8002}));
  EXPECT_EQ(scalar<OpKind::Int_BitwiseOrScalar>(DTypeKind::I64, {-8, 0}, ScalarIr::i(3)),
            (std::vector<double>{-5, 3}));
  EXPECT_EQ(scalar<OpKind::Int_BitwiseOrScalar>(DTypeKind::I8, {0}, ScalarIr::i(-128)),
            (std::vector<double>{-128}));
}

class Int_BitwiseXorScalar : public IntOp {};
TEST_F(Int_BitwiseXorScalar, OnEveryWidth) {
  EXPECT_EQ(scalar<OpKind::Int_BitwiseXorScalar>(DTypeKind::I32, {5, -1}, ScalarIr::i(-1)),
            (std::vector<double>{-6, 0}));
  EXPECT_EQ(scalar<OpKind::Int_BitwiseXorScalar>(DTypeKind::U32, {5, 0}, ScalarIr::i(-1)),
            (std::vector<double>{4294967290.0, 4294967295.0}));
  EXPECT_EQ(scalar<OpKind::Int_BitwiseXorScalar>(DTypeKind::U8, {0x0F}, ScalarIr::u(0xFF)),
            (std::vector<double>{0xF0}));
}

class Int_BitwiseNot : public IntOp {};
TEST_F(Int_BitwiseNot, EveryIntDType) {
  EXPECT_EQ(unary<OpKind::Int_BitwiseNot>(DTypeKind::I32, {5, -1, 0}),
            (std::vector<double>{-6, 0, -1}));
  EXPECT_EQ(unary<OpKind::Int_BitwiseNot>(DTypeKind::I8, {127}), (std::vector<double>{-128}));
  EXPECT_EQ(unary<OpKind::Int_BitwiseNot>(DTypeKind::I16, {0}), (std::vector<double>{-1}));
  EXPECT_EQ(unary<OpKind::Int_BitwiseNot>(DTypeKind::I64, {41}), (std::vector<double>{-42}));
  EXPECT_EQ(unary<OpKind::Int_BitwiseNot>(DTypeKind::U8, {5, 255}), (std::vector<double>{250, 0}));
  EXPECT_EQ(unary<OpKind::Int_BitwiseNot>(DTypeKind::U16, {5, 0}),
            (std::vector<double>{65530, 65535}));
  EXPECT_EQ(unary<OpKind::Int_BitwiseNot>(DTypeKind::U32, {5}),
            (std::vector<double>{4294967290.0}));
  const auto a = input_raw<std::uint64_t>({2}, DTypeKind::U64, {5, kU64Max});
  const auto o = output({2}, DTypeKind::U64);
  run(make_op<OpKind::Int_BitwiseNot>(UnaryOpIr{a, o}));
  EXPECT_EQ(get_raw<std::uint64_t>(o), (std::vector<std::uint64_t>{kU64Max - 5, 0}));
}

// ---- Shifts -------------------------------------------------------------------------------------

class Int_BitwiseLeftShift : public IntOp {};
TEST_F(Int_BitwiseLeftShift, WrapsOnTheDTypeWidthAndMasksTheAmount) {
  // i32: 1 << 31 wraps to i32::MIN; amount 33 → 1; amount −1 → 31.
  EXPECT_EQ(binary<OpKind::Int_BitwiseLeftShift>(DTypeKind::I32, {4}, {1, 1, 1, 3}, {4},
                                                 {31, 33, -1, 2}, {4}),
            (std::vector<double>{-2147483648.0, 2, -2147483648.0, 12}));
  EXPECT_EQ(
      binary<OpKind::Int_BitwiseLeftShift>(DTypeKind::I8, {3}, {-128, 64, 1}, {3}, {1, 1, 9}, {3}),
      (std::vector<double>{0, -128, 2}));
  EXPECT_EQ(binary<OpKind::Int_BitwiseLeftShift>(DTypeKind::U8, {2}, {200, 1}, {1}, {1}, {2}),
            (std::vector<double>{144, 2}));
  EXPECT_EQ(
      binary<OpKind::Int_BitwiseLeftShift>(DTypeKind::U16, {2}, {0x8001, 3}, {2}, {1, 17}, {2}),
      (std::vector<double>{2, 6}));
  EXPECT_EQ(
      binary<OpKind::Int_BitwiseLeftShift>(DTypeKind::U32, {1}, {4294967295.0}, {1}, {4}, {1}),
      (std::vector<double>{4294967280.0}));
  const auto a = input_raw<std::uint64_t>({2}, DTypeKind::U64, {3, 1});
  const auto n = input_raw<std::uint64_t>({2}, DTypeKind::U64, {63, 64 + 2});
  const auto o = output({2}, DTypeKind::U64);
  run(make_op<OpKind::Int_BitwiseLeftShift>(BinaryOpIr{a, n, o}));
  EXPECT_EQ(get_raw<std::uint64_t>(o), (std::vector<std::uint64_t>{kTwo63, 4}));
}

class Int_BitwiseRightShift : public IntOp {};
TEST_F(Int_BitwiseRightShift, ArithmeticForSignedLogicalForUnsigned) {
  EXPECT_EQ(binary<OpKind::Int_BitwiseRightShift>(DTypeKind::I32, {4}, {-8, -1, 4, 1024}, {4},
                                                  {1, 31, 33, -1}, {4}),
            (std::vector<double>{-4, -1, 2, 0}));
  EXPECT_EQ(binary<OpKind::Int_BitwiseRightShift>(DTypeKind::I8, {2}, {-128, 64}, {2}, {7, 8}, {2}),
            (std::vector<double>{-1, 64}));
  EXPECT_EQ(binary<OpKind::Int_BitwiseRightShift>(DTypeKind::U8, {1}, {255}, {1}, {4}, {1}),
            (std::vector<double>{15}));
  EXPECT_EQ(
      binary<OpKind::Int_BitwiseRightShift>(DTypeKind::U32, {1}, {2147483648.0}, {1}, {31}, {1}),
      (std::vector<double>{1}));
  const auto a = input_raw<std::uint64_t>({4}, DTypeKind::U64, {kTwo63, kU64Max, kU64Max, 8});
  const auto n = input_raw<std::uint64_t>({4}, DTypeKind::U64, {1, 60, 0, 64 + 3});
  const auto o = output({4}, DTypeKind::U64);
  run(make_op<OpKind::Int_BitwiseRightShift>(BinaryOpIr{a, n, o}));
  EXPECT_EQ(get_raw<std::uint64_t>(o), (std::vector<std::uint64_t>{kTwo63 >> 1, 15, kU64Max, 1}));
  // i64: arithmetic by 63.
  const auto s = input_raw<std::int64_t>({1}, DTypeKind::I64, {INT64_MIN});
  const auto sn = input_raw<std::int64_t>({1}, DTypeKind::I64, {63});
  const auto so = output({1}, DTypeKind::I64);
  run(make_op<OpKind::Int_BitwiseRightShift>(BinaryOpIr{s, sn, so}));
  EXPECT_EQ(get_raw<std::int64_t>(so), (std::vector<std::int64_t>{-1}));
}

class Int_BitwiseLeftShiftScalar : public IntOp {};
TEST_F(Int_BitwiseLeftShiftScalar, MasksTheAmountToTheWidth) {
  EXPECT_EQ(scalar<OpKind::Int_BitwiseLeftShiftScalar>(DTypeKind::I32, {1, -1}, ScalarIr::i(33)),
            (std::vector<double>{2, -2}));
  EXPECT_EQ(scalar<OpKind::Int_BitwiseLeftShiftScalar>(DTypeKind::I16, {1}, ScalarIr::i(15)),
            (std::vector<double>{-32768}));
  EXPECT_EQ(scalar<OpKind::Int_BitwiseLeftShiftScalar>(DTypeKind::U8, {3}, ScalarIr::i(-1)),
            (std::vector<double>{128}));
  const auto a = input_raw<std::uint64_t>({1}, DTypeKind::U64, {kU64Max});
  const auto o = output({1}, DTypeKind::U64);
  run(make_op<OpKind::Int_BitwiseLeftShiftScalar>(ScalarOpIr{a, ScalarIr::u(60), o}));
  EXPECT_EQ(get_raw<std::uint64_t>(o), (std::vector<std::uint64_t>{std::uint64_t{0xF} << 60}));
}

class Int_BitwiseRightShiftScalar : public IntOp {};
TEST_F(Int_BitwiseRightShiftScalar, SignedAndUnsigned) {
  EXPECT_EQ(scalar<OpKind::Int_BitwiseRightShiftScalar>(DTypeKind::I64, {-16, 16}, ScalarIr::i(2)),
            (std::vector<double>{-4, 4}));
  EXPECT_EQ(scalar<OpKind::Int_BitwiseRightShiftScalar>(DTypeKind::U16, {0x8000}, ScalarIr::i(15)),
            (std::vector<double>{1}));
  EXPECT_EQ(scalar<OpKind::Int_BitwiseRightShiftScalar>(DTypeKind::I8, {-128}, ScalarIr::i(8 + 7)),
            (std::vector<double>{-1}));
  const auto a = input_raw<std::uint64_t>({1}, DTypeKind::U64, {kU64Max});
  const auto o = output({1}, DTypeKind::U64);
  run(make_op<OpKind::Int_BitwiseRightShiftScalar>(ScalarOpIr{a, ScalarIr::i(63), o}));
  EXPECT_EQ(get_raw<std::uint64_t>(o), (std::vector<std::uint64_t>{1}));
}

// ---- Matmul -------------------------------------------------------------------------------------

class Int_Matmul : public IntOp {
 protected:
  std::vector<double> matmul(DType d, Dims ld, const std::vector<double>& l, Dims rd,
                             const std::vector<double>& r, Dims od) {
    const auto a = input(ld, d, l);
    const auto b = input(rd, d, r);
    const auto o = output(od, d);
    run(make_op<OpKind::Int_Matmul>(MatmulOpIr{a, b, o}));
    return get(o);
  }
};
TEST_F(Int_Matmul, EveryIntDType) {
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  for (DType d : {DType(DTypeKind::I64), DType(DTypeKind::I32), DType(DTypeKind::I16),
                  DType(DTypeKind::U64), DType(DTypeKind::U32), DType(DTypeKind::U16)}) {
    EXPECT_EQ(matmul(d, {2, 3}, a, {3, 2}, b, {2, 2}), (std::vector<double>{58, 64, 139, 154}))
        << d.name();
  }
  EXPECT_EQ(matmul(DTypeKind::I8, {1, 2}, {-3, 2}, {2, 1}, {4, 5}, {1, 1}),
            (std::vector<double>{-2}));
}
TEST_F(Int_Matmul, WrapsLikeTheDType) {
  // i32: 65536 · 65536 = 2^32 → 0; 46341² + 1 overflows to negative.
  EXPECT_EQ(matmul(DTypeKind::I32, {1, 2}, {65536, 46341}, {2, 1}, {65536, 46341}, {1, 1}),
            (std::vector<double>{
                static_cast<double>(static_cast<std::int32_t>(std::uint32_t{46341} * 46341u))}));
  EXPECT_EQ(matmul(DTypeKind::U8, {1, 2}, {16, 3}, {2, 1}, {16, 1}, {1, 1}),
            (std::vector<double>{3}));
  EXPECT_EQ(matmul(DTypeKind::U16, {1, 1}, {300}, {1, 1}, {300}, {1, 1}),
            (std::vector<double>{90000 % 65536}));
  EXPECT_EQ(matmul(DTypeKind::I8, {1, 1}, {-128}, {1, 1}, {-1}, {1, 1}),
            (std::vector<double>{-128}));
}
TEST_F(Int_Matmul, ExactBeyondFloatPrecision) {
  // (2^53 + 1) · 3 + 1 · 1: exact in int64, not in f64 (burn-tch goes through f32).
  const auto a = input_raw<std::int64_t>({1, 2}, DTypeKind::I64, {9007199254740993LL, 1});
  const auto b = input_raw<std::int64_t>({2, 1}, DTypeKind::I64, {3, 1});
  const auto o = output({1, 1}, DTypeKind::I64);
  run(make_op<OpKind::Int_Matmul>(MatmulOpIr{a, b, o}));
  EXPECT_EQ(get_raw<std::int64_t>(o), (std::vector<std::int64_t>{27021597764222980LL}));
  const auto u = input_raw<std::uint64_t>({1, 1}, DTypeKind::U64, {kTwo63 + 1});
  const auto v = input_raw<std::uint64_t>({1, 1}, DTypeKind::U64, {3});
  const auto uo = output({1, 1}, DTypeKind::U64);
  run(make_op<OpKind::Int_Matmul>(MatmulOpIr{u, v, uo}));
  EXPECT_EQ(get_raw<std::uint64_t>(uo), (std::vector<std::uint64_t>{kTwo63 + 3}));
}
TEST_F(Int_Matmul, BroadcastsBatchDimsEmptyAndNonContiguous) {
  EXPECT_EQ(matmul(DTypeKind::I32, {2, 1, 1, 2}, {1, 2, 3, 4}, {1, 3, 2, 1}, {1, 1, 2, 0, 0, 3},
                   {2, 3, 1, 1}),
            (std::vector<double>{3, 2, 6, 7, 6, 12}));
  EXPECT_EQ(matmul(DTypeKind::I32, {2, 0}, {}, {0, 2}, {}, {2, 2}), (std::vector<double>(4, 0)));
  EXPECT_TRUE(matmul(DTypeKind::I32, {0, 3}, {}, {3, 2}, {1, 2, 3, 4, 5, 6}, {0, 2}).empty());
  const auto a = input({2, 2}, DTypeKind::I64, {1, 2, 3, 4});
  const auto t = transposed(a);
  const auto o = output({2, 2}, DTypeKind::I64);
  run(make_op<OpKind::Int_Matmul>(MatmulOpIr{t, a, o}));
  EXPECT_EQ(get(o), (std::vector<double>{10, 14, 14, 20}));
}
TEST_F(Int_Matmul, LargeInnerDimensionInChunks) {
  // 1 × 5000 · 5000 × 1000 ones: several chunks of the inner dimension.
  const std::uint64_t k = 5000, n = 1000;
  const auto a = input({1, k}, DTypeKind::I32, std::vector<double>(k, 1));
  const auto b = input({k, n}, DTypeKind::I32, std::vector<double>(k * n, 2));
  const auto o = output({1, n}, DTypeKind::I32);
  run(make_op<OpKind::Int_Matmul>(MatmulOpIr{a, b, o}));
  EXPECT_EQ(get(o), std::vector<double>(n, 10000));
}

// ---- Bool
// ----------------------------------------------------------------------------------------

class Bool_IntoFloat : public IntOp {};
TEST_F(Bool_IntoFloat, OneAndZeroInTheDeclaredDType) {
  for (DType from : {kBool, kBoolU8, kBoolU32}) {
    for (DType to : {DType(DTypeKind::F32), DType(DTypeKind::F64), DType(DTypeKind::F16),
                     DType(DTypeKind::BF16), DType(DTypeKind::Flex32)}) {
      const auto a = input({3}, from, {1, 0, 1});
      const auto o = output({3}, to);
      run(make_op<OpKind::Bool_IntoFloat>(CastOpIr{a, o}));
      EXPECT_EQ(get(o), (std::vector<double>{1, 0, 1})) << from.name() << " → " << to.name();
    }
  }
}

class Bool_IntoInt : public IntOp {};
TEST_F(Bool_IntoInt, OneAndZeroInTheDeclaredDType) {
  for (DType to : {DType(DTypeKind::I64), DType(DTypeKind::I32), DType(DTypeKind::I16),
                   DType(DTypeKind::I8), DType(DTypeKind::U64), DType(DTypeKind::U32),
                   DType(DTypeKind::U16), DType(DTypeKind::U8)}) {
    const auto a = input({2, 2}, kBoolU32, {0, 1, 1, 0});
    const auto o = output({2, 2}, to);
    run(make_op<OpKind::Bool_IntoInt>(CastOpIr{a, o}));
    EXPECT_EQ(get(o), (std::vector<double>{0, 1, 1, 0})) << to.name();
  }
  const auto s = input({}, kBool, {1});
  const auto so = output({}, DTypeKind::I32);
  const auto live = exec->stats().live_tensors;
  run(make_op<OpKind::Bool_IntoInt>(CastOpIr{rw(s), so}));
  EXPECT_EQ(get(so), (std::vector<double>{1}));
  EXPECT_EQ(exec->stats().live_tensors, live) << "the ReadWrite input was freed";
}

class Bool_Not : public IntOp {};
TEST_F(Bool_Not, EveryStore) {
  for (DType d : {kBool, kBoolU8, kBoolU32}) {
    EXPECT_EQ(unary<OpKind::Bool_Not>(d, {1, 0, 0}), (std::vector<double>{0, 1, 1})) << d.name();
  }
  const auto e = input({0}, kBool, {});
  const auto eo = output({0}, kBool);
  run(make_op<OpKind::Bool_Not>(UnaryOpIr{e, eo}));
  EXPECT_TRUE(get(eo).empty());
}

// [2, 1] op [2]: (a0 b0, a0 b1, a1 b0, a1 b1) with a = (1, 0), b = (1, 0).
class Bool_And : public IntOp {};
TEST_F(Bool_And, Broadcasts) {
  EXPECT_EQ(binary<OpKind::Bool_And>(kBool, {2, 1}, {1, 0}, {2}, {1, 0}, {2, 2}),
            (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(binary<OpKind::Bool_And>(kBoolU32, {2}, {1, 1}, {2}, {0, 1}, {2}),
            (std::vector<double>{0, 1}));
}
class Bool_Or : public IntOp {};
TEST_F(Bool_Or, Broadcasts) {
  EXPECT_EQ(binary<OpKind::Bool_Or>(kBool, {2, 1}, {1, 0}, {2}, {1, 0}, {2, 2}),
            (std::vector<double>{1, 1, 1, 0}));
  EXPECT_EQ(binary<OpKind::Bool_Or>(kBoolU8, {2}, {0, 0}, {2}, {0, 1}, {2}),
            (std::vector<double>{0, 1}));
}
class Bool_Xor : public IntOp {};
TEST_F(Bool_Xor, Broadcasts) {
  EXPECT_EQ(binary<OpKind::Bool_Xor>(kBool, {2, 1}, {1, 0}, {2}, {1, 0}, {2, 2}),
            (std::vector<double>{0, 1, 1, 0}));
  EXPECT_EQ(binary<OpKind::Bool_Xor>(kBoolU32, {}, {1}, {3}, {1, 0, 1}, {3}),
            (std::vector<double>{0, 1, 0}));
}

}  // namespace
}  // namespace tb::test
