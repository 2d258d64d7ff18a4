// Float.Quantize and Float.Dequantize against Burn's formulas (burn-flex src/ops/qtensor.rs:
// q = clamp(round(x * (1 / (global * scale)))), x = global * scale * q; scales rounded up onto
// their dtype, a zero scale replaced), written out here independently of quant.cpp.
#include <cfloat>
#include <cmath>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "backends/libtorch/quant_test_util.hpp"
#include "exec/executor.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

const QuantStore kNative{QuantStoreKind::Native, 0};
const QuantStore kPacked{QuantStoreKind::PackedU32, 0};

// Rust's `(x * inv).round().clamp(a, b) as i8`.
int flex_q(float x, float inv, float lo, float hi) {
  const float r = std::round(x * inv);
  if (std::isnan(r)) return 0;
  return static_cast<int>(std::min(std::max(r, lo), hi));
}

// The minifloat code nearest to v (ties to the even code), saturating: brute force over the codes.
int ref_encode(QuantValue kind, float v) {
  const int codes = kind == QuantValue::E2M1 ? 16 : 256;
  const int sign = kind == QuantValue::E2M1 ? 8 : 0x80;
  int best = -1;
  double best_err = INFINITY;
  for (int c = 0; c < codes; ++c) {
    const double d = ref_decode(kind, static_cast<std::uint8_t>(c));
    if (!std::isfinite(d) || ((c & sign) != 0) != std::signbit(v)) continue;
    const double err = std::abs(d - v);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return best;
}

// The smallest value of a 16-bit float type not below v.
template <class H>
float up16(float v) {
  H h(v);
  if (static_cast<float>(h) < v) ++h.x;
  return static_cast<float>(h);
}

backend::libtorch::LibTorchExecutor& torch_exec(backend::Executor& e) {
  return dynamic_cast<backend::libtorch::LibTorchExecutor&>(e);
}

class QuantOp : public OpTest {
 protected:
  // Quantizes tensor 1 (shape, values) with scales tensor 2 (and global 3) into id 10.
  Status quantize(const Dims& shape, const std::vector<double>& x, const QuantScheme& s,
                  const Dims& scale_shape, const std::vector<double>& scales,
                  std::optional<double> global = std::nullopt) {
    put(tir(1, shape), x);
    put(tir(2, scale_shape), scales);
    QuantizationParametersIr qp{tir(2, scale_shape), std::nullopt};
    if (global) {
      put(tir(3, {1}), {*global});
      qp.global = tir(3, {1});
    }
    return exec->execute(make_op<OpKind::Float_Quantize>(
        QuantizeOpIr{tir(1, shape), qp, s, out(10, shape, DType::qfloat(s))}, DTypeKind::F32));
  }
  Bytes bytes(std::uint64_t id, const Dims& shape, const QuantScheme& s) {
    auto d = exec->read_tensor(tir(id, shape, DType::qfloat(s)));
    EXPECT_TRUE(d) << (d ? "" : d.error().what());
    return d ? d.value().bytes : Bytes();
  }
  Bytes expected(const RefQ& q, const Dims& shape, const QuantScheme& s) {
    return Bytes::from_vector(ref_bytes(q, shape, s));
  }
};

class Float_Quantize : public QuantOp {};
class Float_Dequantize : public QuantOp {};

TEST_F(Float_Quantize, PerTensorQ8SRoundsHalfAwayFromZeroIntoTorchQint8) {
  const auto s = make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {}, ScaleDtype::F32);
  const std::vector<double> x = {1.25, -1.25, 0.75, 100, -100, 0.1};
  ASSERT_TRUE(quantize({6}, x, s, {1}, {0.5}));
  std::vector<int> q;
  for (double v : x) q.push_back(flex_q(static_cast<float>(v), 1.0f / 0.5f, -127, 127));
  EXPECT_EQ(q, (std::vector<int>{3, -3, 2, 127, -127, 0}));
  EXPECT_EQ(bytes(10, {6}, s), expected({q, {0.5f}, std::nullopt}, {6}, s));
  const auto* stored = torch_exec(*exec).stored_quantized(10);
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->values.scalar_type(), at::kQInt8);
  // Why the values are not torch.quantize_per_tensor's: it rounds half to even.
  const at::Tensor torch_q =
      at::quantize_per_tensor(at::tensor({1.25f}), 0.5, 0, at::kQInt8).int_repr();
  EXPECT_EQ(torch_q[0].item<int>(), 2);
}

TEST_F(Float_Quantize, PerTensorQ8FUsesTheFullRange) {
  const auto s = make_scheme(QuantValue::Q8F, kPacked, std::nullopt, {}, ScaleDtype::F32);
  ASSERT_TRUE(quantize({4}, {-1000, 1000, -64.25, 3}, s, {1}, {0.5}));
  EXPECT_EQ(bytes(10, {4}, s), expected({{-128, 127, -128, 6}, {0.5f}, std::nullopt}, {4}, s));
}

TEST_F(Float_Quantize, ScalesAreRoundedUpOntoTheirDtype) {
  const Dims shape = {2, 4};
  const std::vector<double> x = {0.1, -0.2, 0.3, 30, 1, 2, -3, 4};
  struct Case {
    ScaleDtype dtype;
    float rounded;
  };
  const Case cases[] = {{ScaleDtype::F32, 0.3f},
                        {ScaleDtype::F16, up16<c10::Half>(0.3f)},
                        {ScaleDtype::BF16, up16<c10::BFloat16>(0.3f)},
                        {ScaleDtype::UE8M0, 0.5f},
                        {ScaleDtype::UE4M3, 0.3125f}};
  for (const auto& c : cases) {
    SCOPED_TRACE(static_cast<int>(c.dtype));
    const auto s = make_scheme(QuantValue::Q8S, kNative, std::nullopt, {4}, c.dtype);
    ASSERT_TRUE(quantize(shape, x, s, {2, 1}, {0.3, 0.3}));
    EXPECT_GE(c.rounded, 0.3f);
    RefQ q{{}, {c.rounded, c.rounded}, std::nullopt};
    for (double v : x)
      q.values.push_back(flex_q(static_cast<float>(v), 1.0f / c.rounded, -127, 127));
    EXPECT_EQ(bytes(10, shape, s), expected(q, shape, s));
  }
}

TEST_F(Float_Quantize, TwoLevelScalesMultiplyTheGlobalScale) {
  const auto s = make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {4}, ScaleDtype::UE4M3);
  const std::vector<double> x = {100, -50, 25, 1, 0.5, -0.25, 0.125, 0.01};
  ASSERT_TRUE(quantize({8}, x, s, {2}, {300, 0.2}, 0.01));
  // UE4M3 rounds 300 up to 320 and 0.2 up to 0.203125; the f32 global stays.
  const float scales[] = {320.0f, 0.203125f};
  RefQ q{{}, {320.0f, 0.203125f}, 0.01f};
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float inv = 1.0f / (0.01f * scales[i / 4]);
    q.values.push_back(flex_q(static_cast<float>(x[i]), inv, -127, 127));
  }
  EXPECT_EQ(bytes(10, {8}, s), expected(q, {8}, s));
  expect_near(get(tir(10, {8})), ref_dequantize(q, {8}, s), 0);
}

TEST_F(Float_Quantize, SubByteKindsPackIntoU32Words) {
  const Dims shape = {2, 16};
  std::vector<double> x;
  for (int i = 0; i < 32; ++i) x.push_back((i - 16) * 0.37);
  for (auto kind : {QuantValue::Q4S, QuantValue::Q4F, QuantValue::Q2S, QuantValue::Q2F}) {
    SCOPED_TRACE(static_cast<int>(kind));
    for (auto store : {kPacked, QuantStore{QuantStoreKind::PackedU32, 1}, kNative}) {
      const auto s = make_scheme(kind, store, ScaleDtype::F32, {}, ScaleDtype::F32);
      ASSERT_TRUE(quantize(shape, x, s, {1}, {0.9}));
      const float lo = kind == QuantValue::Q4S   ? -7
                       : kind == QuantValue::Q4F ? -8
                       : kind == QuantValue::Q2S ? -1
                                                 : -2;
      const float hi = kind == QuantValue::Q4S || kind == QuantValue::Q4F ? 7 : 1;
      RefQ q{{}, {0.9f}, std::nullopt};
      for (double v : x) q.values.push_back(flex_q(static_cast<float>(v), 1.0f / 0.9f, lo, hi));
      EXPECT_EQ(bytes(10, shape, s), expected(q, shape, s));
    }
  }
}

TEST_F(Float_Quantize, MinifloatKindsRoundToTheNearestEvenCode) {
  const Dims shape = {8};
  // Ties between e4m3 codes (17 lies between 16 and 18), values past the range, a negative zero.
  const std::vector<double> x = {17, 19, 1000, -1000, -0.0, 0.0029296875, 5, -7};
  for (auto kind : {QuantValue::E4M3, QuantValue::E5M2, QuantValue::E2M1}) {
    SCOPED_TRACE(static_cast<int>(kind));
    const float max = kind == QuantValue::E4M3 ? 448 : kind == QuantValue::E5M2 ? 57344 : 6;
    for (auto store : {kNative, kPacked, QuantStore{QuantStoreKind::PackedNative, 0}}) {
      const auto s = make_scheme(kind, store, std::nullopt, {4}, ScaleDtype::UE8M0);
      ASSERT_TRUE(quantize(shape, x, s, {2}, {1, 0.5}));
      RefQ q{{}, {1.0f, 0.5f}, std::nullopt};
      for (std::size_t i = 0; i < x.size(); ++i) {
        const float v = static_cast<float>(x[i]) * (1.0f / (i < 4 ? 1.0f : 0.5f));
        q.values.push_back(ref_encode(kind, std::min(std::max(v, -max), max)));
      }
      EXPECT_EQ(bytes(10, shape, s), expected(q, shape, s));
      expect_near(get(tir(10, shape)), ref_dequantize(q, shape, s), 0);
    }
  }
}

TEST_F(Float_Quantize, AZeroScaleBecomesTheSmallestOne) {
  const auto s = make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {}, ScaleDtype::F32);
  ASSERT_TRUE(quantize({3}, {0, 0, 0}, s, {1}, {0}));
  EXPECT_EQ(bytes(10, {3}, s), expected({{0, 0, 0}, {FLT_MIN}, std::nullopt}, {3}, s));
}

TEST_F(Float_Quantize, HalfPrecisionInputsAndQuantizedInputs) {
  const auto s = make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {}, ScaleDtype::F32);
  put(tir(1, {3}, DTypeKind::F16), {1.5, -2.5, 3});
  put(tir(2, {1}), {0.5});
  run(make_op<OpKind::Float_Quantize>(QuantizeOpIr{tir(1, {3}, DTypeKind::F16),
                                                   {tir(2, {1}), std::nullopt},
                                                   s,
                                                   out(10, {3}, DType::qfloat(s))},
                                      DTypeKind::F16));
  EXPECT_EQ(bytes(10, {3}, s), expected({{3, -5, 6}, {0.5f}, std::nullopt}, {3}, s));
  // Requantizing a quantized tensor: dequantized first.
  const auto s4 = make_scheme(QuantValue::Q4S, kPacked, ScaleDtype::F32, {}, ScaleDtype::F32);
  put(tir(3, {1}), {1.0});
  run(make_op<OpKind::Float_Quantize>(QuantizeOpIr{tir(10, {3}, DType::qfloat(s)),
                                                   {tir(3, {1}), std::nullopt},
                                                   s4,
                                                   out(11, {3}, DType::qfloat(s4))},
                                      DTypeKind::F32));
  EXPECT_EQ(bytes(11, {3}, s4), expected({{2, -3, 3}, {1.0f}, std::nullopt}, {3}, s4));
}

TEST_F(Float_Quantize, WhatCannotBeQuantizedIsAClearError) {
  auto lookup = make_scheme(QuantValue::Q4S, kPacked, ScaleDtype::F32, {}, ScaleDtype::F32);
  lookup.mode = QuantMode::Lookup;
  auto s = quantize({4}, {1, 2, 3, 4}, lookup, {1}, {1});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(), HasSubstr("Float.Quantize"));
  EXPECT_THAT(s.error().what(), HasSubstr("lookup scheme maps values through a table"));

  const auto block = make_scheme(QuantValue::Q8S, kNative, std::nullopt, {4}, ScaleDtype::F32);
  s = quantize({6}, {1, 2, 3, 4, 5, 6}, block, {2}, {1, 1});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(), HasSubstr("tensor [6] is not a whole number of [4] blocks"));
  s = quantize({8}, {1, 2, 3, 4, 5, 6, 7, 8}, block, {3}, {1, 1, 1});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(), HasSubstr("takes 2 scales (grid [2]), got 3"));

  const auto two = make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {4}, ScaleDtype::F16);
  s = quantize({8}, {1, 2, 3, 4, 5, 6, 7, 8}, two, {2}, {1, 1});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(),
              HasSubstr("two-level: its quantization parameters need a per-tensor"));
  s = quantize({8}, {1, 2, 3, 4, 5, 6, 7, 8}, block, {2}, {1, 1}, 1.0);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(), HasSubstr("takes no per-tensor scale"));
  // The output of a failed op holds the error.
  auto r = exec->read_tensor(tir(10, {8}, DType::qfloat(block)));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("takes no per-tensor scale"));
}

TEST_F(Float_Dequantize, PerTensorIsTorchsDequantizeIntoEveryFloatDType) {
  const auto s = make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {}, ScaleDtype::F32);
  const RefQ q{{-127, -3, 0, 1, 77, 127}, {0.0371f}, std::nullopt};
  ASSERT_TRUE(exec->register_tensor(TensorId{1}, {expected(q, {6}, s), {6}, DType::qfloat(s)}));
  const auto ref = ref_dequantize(q, {6}, s);
  std::uint64_t id = 20;
  for (DType d : {DType(DTypeKind::F32), DType(DTypeKind::F64), DType(DTypeKind::F16),
                  DType(DTypeKind::BF16)}) {
    run(make_op<OpKind::Float_Dequantize>(
        DequantizeOpIr{tir(1, {6}, DType::qfloat(s)), out(id, {6}, d)}, d));
    std::vector<double> want;
    for (double v : ref) {
      const float f = static_cast<float>(v);
      want.push_back(d.kind == DTypeKind::F16    ? static_cast<float>(c10::Half(f))
                     : d.kind == DTypeKind::BF16 ? static_cast<float>(c10::BFloat16(f))
                                                 : f);
    }
    EXPECT_EQ(get(tir(id, {6}, d)), want) << d.name();
    ++id;
  }
}

TEST_F(Float_Dequantize, BlockAndTwoLevelSchemes) {
  const Dims shape = {4, 8};
  std::mt19937 rng(3);
  for (auto kind : {QuantValue::Q8S, QuantValue::Q4F, QuantValue::E4M3, QuantValue::E2M1}) {
    for (bool two : {false, true}) {
      const auto s = make_scheme(kind, kPacked, two ? std::optional(ScaleDtype::F32) : std::nullopt,
                                 {2, 4}, ScaleDtype::F16);
      RefQ q{random_values(kind, 32, rng), {0.5f, 0.25f, 2.0f, 4.0f}, std::nullopt};
      if (two) q.global = 0.125f;
      ASSERT_TRUE(
          exec->register_tensor(TensorId{1}, {expected(q, shape, s), shape, DType::qfloat(s)}));
      run(make_op<OpKind::Float_Dequantize>(
          DequantizeOpIr{rw(tir(1, shape, DType::qfloat(s))), out(2, shape)}, DTypeKind::F32));
      expect_near(get(tir(2, shape)), ref_dequantize(q, shape, s), 0);
      EXPECT_EQ(torch_exec(*exec).stored_quantized(1), nullptr) << "ReadWrite frees the input";
    }
  }
}

TEST_F(Float_Dequantize, QuantizeThenDequantizeIsWithinHalfAStep) {
  const auto s = make_scheme(QuantValue::Q8S, kPacked, std::nullopt, {8}, ScaleDtype::F32);
  std::vector<double> x;
  for (int i = 0; i < 16; ++i) x.push_back(std::sin(i) * (i < 8 ? 1 : 100));
  const double s0 = 2.0 / 254, s1 = 200.0 / 254;
  ASSERT_TRUE(quantize({16}, x, s, {2}, {s0, s1}));
  run(make_op<OpKind::Float_Dequantize>(
      DequantizeOpIr{tir(10, {16}, DType::qfloat(s)), out(11, {16})}, DTypeKind::F32));
  const auto back = get(tir(11, {16}));
  for (int i = 0; i < 16; ++i) EXPECT_LE(std::abs(back[i] - x[i]), (i < 8 ? s0 : s1) / 2 + 1e-6);
}

TEST_F(Float_Dequantize, WhatCannotBeDequantizedIsAClearError) {
  put(tir(1, {2}), {1, 2});
  auto e = run_error(
      make_op<OpKind::Float_Dequantize>(DequantizeOpIr{tir(1, {2}), out(2, {2})}, DTypeKind::F32));
  EXPECT_THAT(e, HasSubstr("Float.Dequantize"));
  EXPECT_THAT(e, HasSubstr("tensor #1 holds Float values, not quantized ones"));

  auto lookup = make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {}, ScaleDtype::F32);
  lookup.mode = QuantMode::Lookup;
  ASSERT_TRUE(exec->register_tensor(
      TensorId{3},
      {expected({{0, 1}, {1.0f}, std::nullopt}, {2}, lookup), {2}, DType::qfloat(lookup)}));
  e = run_error(make_op<OpKind::Float_Dequantize>(
      DequantizeOpIr{tir(3, {2}, DType::qfloat(lookup)), out(4, {2})}, DTypeKind::F32));
  EXPECT_THAT(e, HasSubstr("Q8S/per-tensor(F32)/Native/Lookup"));
  EXPECT_THAT(e, HasSubstr("table Burn's IR does not carry"));
}

}  // namespace
}  // namespace tb::test
