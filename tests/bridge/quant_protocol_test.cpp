// Quantized tensors over Burn's wire protocol: real frames (RegisterTensor of QFloat data in Burn's
// layout, Float.Quantize, Float.Dequantize, ReadTensor, DTypeUsage) sent to a live host, checked
// against Burn's formulas. Burn 0.22's remote client cannot create quantized tensors itself, so
// these frames are built here with the codec.
#include <cmath>
#include <random>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "backends/libtorch/quant_test_util.hpp"
#include "bridge/bridge_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

const QuantStore kNative{QuantStoreKind::Native, 0};
const QuantStore kPacked{QuantStoreKind::PackedU32, 0};

// A spread of schemes: every value kind, every level, every store, every scale dtype.
std::vector<QuantScheme> schemes() {
  return {
      make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {}, ScaleDtype::F32),
      make_scheme(QuantValue::Q8F, kPacked, std::nullopt, {}, ScaleDtype::F32),
      make_scheme(QuantValue::Q4S, kPacked, std::nullopt, {8}, ScaleDtype::F16),
      make_scheme(QuantValue::Q4F, {QuantStoreKind::PackedU32, 1}, std::nullopt, {2, 4},
                  ScaleDtype::BF16),
      make_scheme(QuantValue::Q2S, kPacked, ScaleDtype::F32, {}, ScaleDtype::F32),
      make_scheme(QuantValue::Q2F, kNative, std::nullopt, {4}, ScaleDtype::UE8M0),
      make_scheme(QuantValue::E4M3, kNative, std::nullopt, {8}, ScaleDtype::UE8M0),
      make_scheme(QuantValue::E5M2, kPacked, ScaleDtype::BF16, {}, ScaleDtype::BF16),
      make_scheme(QuantValue::E2M1, {QuantStoreKind::PackedNative, 0}, ScaleDtype::F32, {16},
                  ScaleDtype::UE4M3),
      make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {8}, ScaleDtype::UE4M3),
  };
}

RefQ sample(const QuantScheme& s, const Dims& shape, std::mt19937& rng) {
  RefQ q;
  q.values = random_values(s.value, num_elements(shape), rng);
  const float scales[] = {0.5f, 0.25f, 2.0f, 0.125f};
  for (std::uint64_t i = 0; i < ref_num_params(shape, s); ++i) q.scales.push_back(scales[i % 4]);
  if (s.block && s.tensor) q.global = 0.75f;
  return q;
}

TensorData qdata(const RefQ& q, const Dims& shape, const QuantScheme& s) {
  return TensorData{Bytes::from_vector(ref_bytes(q, shape, s)), shape, DType::qfloat(s)};
}

void expect_values(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << i;
    } else {
      EXPECT_EQ(actual[i], expected[i]) << "element " << i;
    }
  }
}

class BridgeQuant : public ::testing::Test {
 protected:
  TestHost host{1};
  Session session{host.port(), 0};
};

TEST_F(BridgeQuant, RegisteredQuantizedDataReadsBackInBurnsLayout) {
  std::mt19937 rng(11);
  const Dims shape = {4, 16};
  std::uint64_t id = 1;
  for (const auto& s : schemes()) {
    SCOPED_TRACE(to_string(s));
    const RefQ q = sample(s, shape, rng);
    const TensorData data = qdata(q, shape, s);
    session.send({register_tensor(id, data)});
    auto back = session.read(tir(id, shape, DType::qfloat(s)));
    ASSERT_TRUE(std::holds_alternative<TensorData>(back)) << std::get<ExecutionError>(back).reason;
    EXPECT_EQ(std::get<TensorData>(back), data);
    auto floats = session.read(tir(id, shape, DTypeKind::F32));
    ASSERT_TRUE(std::holds_alternative<TensorData>(floats));
    expect_values(values_of(std::get<TensorData>(floats)), ref_dequantize(q, shape, s));
    ++id;
  }
  EXPECT_TRUE(std::holds_alternative<std::monostate>(session.sync()));
}

// burn-flex's quantize and dequantize, computed here: q = clamp(round(x * (1 / scale))).
TEST_F(BridgeQuant, QuantizeAndDequantizeFramesFollowBurnsFormulas) {
  const Dims shape = {2, 8};
  std::vector<double> x;
  for (int i = 0; i < 16; ++i) x.push_back(std::cos(i * 0.7) * (i < 8 ? 3 : 0.4));
  const auto s = make_scheme(QuantValue::Q8S, kPacked, std::nullopt, {8}, ScaleDtype::F16);
  const std::vector<double> scales = {3.0 / 127, 0.4 / 127};  // rounded up onto f16 by the host
  session.send(
      {register_tensor(1, make_data(shape, DTypeKind::F32, x)),
       register_tensor(2, make_data({2, 1}, DTypeKind::F32, scales)),
       register_op(make_op<OpKind::Float_Quantize>(
           QuantizeOpIr{
               tir(1, shape), {tir(2, {2, 1}), std::nullopt}, s, out(3, shape, DType::qfloat(s))},
           DTypeKind::F32)),
       register_op(make_op<OpKind::Float_Dequantize>(
           DequantizeOpIr{tir(3, shape, DType::qfloat(s)), out(4, shape)}, DTypeKind::F32))});
  RefQ expected;
  for (double v : scales) {
    c10::Half h(static_cast<float>(v));
    if (static_cast<float>(h) < static_cast<float>(v)) ++h.x;  // ScaleDtype::round_up
    expected.scales.push_back(static_cast<float>(h));
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float inv = 1.0f / (1.0f * expected.scales[i / 8]);
    const float r = std::round(static_cast<float>(x[i]) * inv);
    expected.values.push_back(static_cast<int>(std::min(std::max(r, -127.0f), 127.0f)));
  }
  auto q = session.read(tir(3, shape, DType::qfloat(s)));
  ASSERT_TRUE(std::holds_alternative<TensorData>(q)) << std::get<ExecutionError>(q).reason;
  EXPECT_EQ(std::get<TensorData>(q).bytes, Bytes::from_vector(ref_bytes(expected, shape, s)));
  auto f = session.read(tir(4, shape));
  ASSERT_TRUE(std::holds_alternative<TensorData>(f));
  expect_values(values_of(std::get<TensorData>(f)), ref_dequantize(expected, shape, s));
}

TEST_F(BridgeQuant, DTypeUsageAnswersForQFloat) {
  EXPECT_EQ(session.dtype_usage(DType::qfloat(default_quant_scheme())), kUsageStorage);
  for (const auto& s : schemes()) EXPECT_EQ(session.dtype_usage(DType::qfloat(s)), kUsageStorage);
  auto lookup = schemes()[0];
  lookup.mode = QuantMode::Lookup;
  EXPECT_EQ(session.dtype_usage(DType::qfloat(lookup)), 0);
  // Block scales in f32 under a per-tensor scale: not quantizable (burn-std quantizable()).
  EXPECT_EQ(session.dtype_usage(DType::qfloat(
                make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {4}, ScaleDtype::F32))),
            0);
}

TEST_F(BridgeQuant, FailuresComeBackAsExecutionErrorsAndTheSessionGoesOn) {
  auto lookup = make_scheme(QuantValue::Q8S, kNative, ScaleDtype::F32, {}, ScaleDtype::F32);
  lookup.mode = QuantMode::Lookup;
  session.send(
      {register_tensor(1, make_data({4}, DTypeKind::F32, {1, 2, 3, 4})),
       register_tensor(2, make_data({1}, DTypeKind::F32, {1})),
       register_op(make_op<OpKind::Float_Quantize>(QuantizeOpIr{tir(1, {4}),
                                                                {tir(2, {1}), std::nullopt},
                                                                lookup,
                                                                out(3, {4}, DType::qfloat(lookup))},
                                                   DTypeKind::F32)),
       // Quantized data of the wrong length.
       register_tensor(5, TensorData{Bytes::copy_of("xyz", 3), {4}, DType::qfloat(schemes()[0])})});
  auto s = session.sync();
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(s));
  EXPECT_THAT(std::get<ExecutionError>(s).reason, HasSubstr("2 operations failed"));
  EXPECT_THAT(std::get<ExecutionError>(s).reason, HasSubstr("lookup scheme"));
  auto r = session.read(tir(3, {4}, DType::qfloat(lookup)));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
  EXPECT_THAT(std::get<ExecutionError>(r).reason, HasSubstr("Float.Quantize"));
  r = session.read(tir(5, {4}, DType::qfloat(schemes()[0])));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
  EXPECT_THAT(std::get<ExecutionError>(r).reason,
              HasSubstr("needs 8 bytes (4 of values, 4 of scales), got 3"));
  auto ok = session.read(tir(1, {4}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(ok));
}

}  // namespace
}  // namespace tb::test
