// Quantized tensors on the LibTorch backend: Burn's QFloat byte layout for every scheme, the
// dequantized values, transfers, golden vectors from Burn itself, and quantized tensors flowing
// into ordinary ops. The reference layout below is written from burn-std/burn-cubecl, apart from
// backends/libtorch/src/quant/quant.cpp.
#include "quant/quant.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "backends/libtorch/quant_test_util.hpp"
#include "exec/executor.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;
namespace quant = backend::libtorch::quant;

// Scales every scale dtype holds exactly (powers of two inside UE4M3's range).
constexpr float kScales[] = {0.25f, 0.5f, 2.0f, 0.125f, 4.0f, 1.0f};

struct Combo {
  QuantValue value;
  QuantStore store;
  std::string level;  // tensor, none, block4, block2x4, two-level
  ScaleDtype dtype;
};

std::vector<Combo> all_combos() {
  std::vector<Combo> out;
  const QuantValue values[] = {QuantValue::Q8F,  QuantValue::Q8S,  QuantValue::Q4F,
                               QuantValue::Q4S,  QuantValue::Q2F,  QuantValue::Q2S,
                               QuantValue::E4M3, QuantValue::E5M2, QuantValue::E2M1};
  const QuantStore stores[] = {
      QuantStore{QuantStoreKind::Native, 0}, QuantStore{QuantStoreKind::PackedU32, 0},
      QuantStore{QuantStoreKind::PackedU32, 1}, QuantStore{QuantStoreKind::PackedNative, 0}};
  const ScaleDtype dtypes[] = {ScaleDtype::F32, ScaleDtype::F16, ScaleDtype::BF16,
                               ScaleDtype::UE8M0, ScaleDtype::UE4M3};
  for (auto v : values) {
    for (auto st : stores) {
      out.push_back({v, st, "none", ScaleDtype::F32});
      for (auto d : dtypes) {
        for (const char* level : {"tensor", "block4", "block2x4", "two-level"})
          out.push_back({v, st, level, d});
      }
    }
  }
  return out;
}

QuantScheme scheme_of(const Combo& c) {
  if (c.level == "none") return make_scheme(c.value, c.store, std::nullopt, {}, c.dtype);
  if (c.level == "tensor") return make_scheme(c.value, c.store, c.dtype, {}, c.dtype);
  if (c.level == "block4") return make_scheme(c.value, c.store, std::nullopt, {4}, c.dtype);
  if (c.level == "block2x4") return make_scheme(c.value, c.store, std::nullopt, {2, 4}, c.dtype);
  return make_scheme(c.value, c.store, ScaleDtype::F32, {4}, c.dtype);
}

std::string name_of(const Combo& c) {
  return quant::describe(scheme_of(c));
}

backend::libtorch::LibTorchExecutor& torch_exec(backend::Executor& e) {
  return dynamic_cast<backend::libtorch::LibTorchExecutor&>(e);
}

class Quant : public OpTest {
 protected:
  // A second session on the same backend (the other side of a same-host transfer).
  std::unique_ptr<backend::Executor> other = backend_->new_executor();
};

// Every value kind x level x store x scale dtype: bytes in equal bytes out, the values read back
// are Burn's dequantization, and a same-host transfer delivers the same bytes.
TEST_F(Quant, EverySchemeRoundTripsBitExactly) {
  std::mt19937 rng(7);
  const Dims shape = {4, 16};
  int checked = 0;
  for (const Combo& c : all_combos()) {
    SCOPED_TRACE(name_of(c));
    const QuantScheme s = scheme_of(c);
    RefQ q;
    q.values = random_values(s.value, num_elements(shape), rng);
    for (std::uint64_t i = 0; i < ref_num_params(shape, s); ++i)
      q.scales.push_back(kScales[i % std::size(kScales)]);
    if (c.level == "two-level") q.global = 0.5f;
    const TensorData data{Bytes::from_vector(ref_bytes(q, shape, s)), shape, DType::qfloat(s)};
    const TensorIr t = tir(100, shape, DType::qfloat(s));

    ASSERT_TRUE(exec->register_tensor(t.id, data)) << exec->sync().error().what();
    auto back = exec->read_tensor(t);
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(back.value().bytes, data.bytes) << "bytes in != bytes out";
    EXPECT_EQ(back.value().dtype, data.dtype);

    auto floats = exec->read_tensor(tir(100, shape, DTypeKind::F32));
    ASSERT_TRUE(floats) << floats.error().what();
    const auto expected = ref_dequantize(q, shape, s);
    const auto actual = values_of(floats.value());
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (std::isnan(expected[i])) {
        EXPECT_TRUE(std::isnan(actual[i])) << i;
      } else {
        EXPECT_EQ(actual[i], expected[i]) << "element " << i;
      }
    }

    const bool two_level_ok =
        c.level != "two-level" || (c.dtype == ScaleDtype::F16 || c.dtype == ScaleDtype::UE4M3);
    EXPECT_EQ(exec->dtype_usage(DType::qfloat(s)).bits, two_level_ok ? kUsageStorage : 0);

    auto moved = exec->take_for_transfer(rw(t));
    ASSERT_TRUE(moved) << moved.error().what();
    ASSERT_TRUE(other->register_transferred(TensorId{200}, *moved.value()));
    auto arrived = other->read_tensor(tir(200, shape, DType::qfloat(s), TensorStatus::ReadWrite));
    ASSERT_TRUE(arrived) << arrived.error().what();
    EXPECT_EQ(arrived.value().bytes, data.bytes) << "the transfer changed the bytes";
    ++checked;
  }
  EXPECT_EQ(checked, 9 * 4 * (1 + 5 * 4));
}

TEST_F(Quant, PerTensorSymmetric8BitIsATorchQint8Tensor) {
  for (auto v : {QuantValue::Q8S, QuantValue::Q8F}) {
    const QuantScheme s =
        make_scheme(v, {QuantStoreKind::Native, 0}, ScaleDtype::F32, {}, ScaleDtype::F32);
    RefQ q{{-128, -3, 0, 5, 127, 64}, {0.05f}, std::nullopt};
    const Dims shape = {2, 3};
    ASSERT_TRUE(exec->register_tensor(
        TensorId{1}, {Bytes::from_vector(ref_bytes(q, shape, s)), shape, DType::qfloat(s)}));
    const auto* stored = torch_exec(*exec).stored_quantized(1);
    ASSERT_NE(stored, nullptr);
    EXPECT_EQ(stored->values.scalar_type(), at::kQInt8);
    EXPECT_EQ(stored->values.q_scale(), static_cast<double>(0.05f));
    EXPECT_EQ(stored->values.q_zero_point(), 0);
    // Dequantized by torch, exactly Burn's scale * q.
    const auto values = get(tir(1, shape));
    for (std::size_t i = 0; i < values.size(); ++i)
      EXPECT_EQ(values[i], static_cast<double>(0.05f * static_cast<float>(q.values[i])));
  }
  // Block schemes and sub-byte kinds keep plain values and scales.
  const QuantScheme block =
      make_scheme(QuantValue::Q8S, {QuantStoreKind::Native, 0}, std::nullopt, {4}, ScaleDtype::F32);
  RefQ q{{1, 2, 3, 4, 5, 6, 7, 8}, {0.5f, 2.0f}, std::nullopt};
  ASSERT_TRUE(exec->register_tensor(
      TensorId{2}, {Bytes::from_vector(ref_bytes(q, {8}, block)), {8}, DType::qfloat(block)}));
  EXPECT_EQ(torch_exec(*exec).stored_quantized(2)->values.scalar_type(), at::kChar);
}

// Vectors serialized by Burn 0.22.1 itself (tests/ir/golden/vectors.tsv, kind tensor_data).
TEST_F(Quant, BurnGoldenVectorsRoundTripAndDequantize) {
  std::ifstream in(TB_GOLDEN_VECTORS);
  ASSERT_TRUE(in) << TB_GOLDEN_VECTORS;
  // name -> (values as Burn wrote them, scale of each value)
  std::map<std::string, std::vector<double>> expected;
  {
    std::vector<double> v;
    for (int x : {-127, 0, 64, 127, -1, 5}) v.push_back(0.05f * static_cast<float>(x));
    expected["QFloat/q8s-tensor"] = v;
    v.clear();
    for (int x : {1, -2, 3, -4, 5, -6, 7, -8}) v.push_back(0.25f * static_cast<float>(x));
    expected["QFloat/q8s-tensor-packedu32"] = v;
    v.clear();
    for (int x : {-7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 0})
      v.push_back(0.25f * static_cast<float>(x));
    expected["QFloat/q4s-packedu32-tensor"] = v;
    v.clear();
    for (int i = 0; i < 16; ++i)
      v.push_back((i < 8 ? 0.5f : 2.0f) * static_cast<float>(i % 15 - 7));
    expected["QFloat/q4s-packedu32-block8-f16"] = v;
    v.clear();
    for (int i = 0; i < 32; ++i) v.push_back(0.75f * static_cast<float>(i % 3 - 1));
    expected["QFloat/q2s-packedu32-tensor"] = v;
    v.clear();
    for (int i = 0; i < 32; ++i)
      v.push_back((0.001f * (i < 16 ? 448.0f : 0.5f)) * static_cast<float>(i * 3 - 48));
    expected["QFloat/q8s-two-level-ue4m3"] = v;
    v.clear();
    for (int i = 0; i < 32; ++i)  // Burn's generator wrapped `(i as i8) * 8`
      v.push_back((i < 16 ? 0.25f : 4.0f) *
                  static_cast<float>(static_cast<std::int8_t>(127 - i * 8)));
    expected["QFloat/q8s-block16-ue8m0"] = v;
    v.clear();
    for (int i = 0; i < 32; ++i)
      v.push_back(2.0f * static_cast<float>(
                             ref_decode(QuantValue::E4M3, static_cast<std::uint8_t>(i * 29))));
    expected["QFloat/e4m3-block32-ue8m0"] = v;
  }
  std::string line;
  int seen = 0;
  std::uint64_t id = 1;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind, name, hex;
    if (!(fields >> kind >> name >> hex) || kind != "tensor_data" || name.rfind("QFloat/", 0))
      continue;
    SCOPED_TRACE(name);
    std::vector<std::uint8_t> raw;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
      raw.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    auto data = decode<TensorData>(Bytes::from_vector(raw));
    ASSERT_TRUE(data) << data.error().what();
    const auto& d = data.value();
    const TensorIr t = tir(id++, d.shape, d.dtype);
    auto s = exec->register_tensor(t.id, d);
    if (d.dtype.scheme.mode == QuantMode::Lookup) {
      // Stored and read back; it cannot be dequantized without its table.
      ASSERT_TRUE(s) << s.error().what();
      EXPECT_EQ(exec->read_tensor(t).value().bytes, d.bytes);
      auto f = exec->read_tensor(tir(t.id.value, d.shape));
      ASSERT_FALSE(f);
      EXPECT_THAT(f.error().what(), HasSubstr("lookup"));
      ++seen;
      continue;
    }
    ASSERT_TRUE(s) << s.error().what();
    auto back = exec->read_tensor(t);
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(back.value().bytes, d.bytes);
    EXPECT_EQ(encode(back.value()), raw);
    auto floats = exec->read_tensor(tir(t.id.value, d.shape));
    ASSERT_TRUE(floats) << floats.error().what();
    if (expected.count(name)) {
      EXPECT_EQ(values_of(floats.value()), expected[name]);
    }
    ++seen;
  }
  EXPECT_EQ(seen, 13);
}

TEST_F(Quant, MalformedDataIsAClearError) {
  const QuantScheme s = make_scheme(QuantValue::Q4S, {QuantStoreKind::PackedU32, 0},
                                    ScaleDtype::F32, {}, ScaleDtype::F32);
  TensorData bad{Bytes::copy_of("abcde", 5), {2, 8}, DType::qfloat(s)};
  EXPECT_FALSE(exec->register_tensor(TensorId{1}, bad));
  auto r = exec->read_tensor(tir(1, {2, 8}, DType::qfloat(s)));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("needs 12 bytes (8 of values, 4 of scales), got 5"));
  EXPECT_THAT(r.error().what(), HasSubstr("Q4S/per-tensor(F32)/PackedU32(0)"));

  // A packing dimension outside the tensor.
  const QuantScheme outer = make_scheme(QuantValue::Q4S, {QuantStoreKind::PackedU32, 3},
                                        ScaleDtype::F32, {}, ScaleDtype::F32);
  TensorData odd{Bytes::copy_of("abcdefgh", 8), {2, 8}, DType::qfloat(outer)};
  EXPECT_FALSE(exec->register_tensor(TensorId{2}, odd));
  EXPECT_THAT(exec->read_tensor(tir(2, {2, 8}, DType::qfloat(outer))).error().what(),
              HasSubstr("outside a rank-2 tensor"));
}

// TensorData::quantized writes one byte per value whatever the store; burn-std's unpack reads
// words over the flattened tensor. Both come back as they came.
TEST_F(Quant, OtherBurnLayoutsComeBackAsTheyCame) {
  const QuantScheme q8 = make_scheme(QuantValue::Q8S, {QuantStoreKind::PackedU32, 0},
                                     ScaleDtype::F32, {}, ScaleDtype::F32);
  std::vector<std::uint8_t> unpadded = {1, 2, 3, 0xFD, 5, 6};  // [2, 3], no word padding
  const float scale = 0.5f;
  const auto* sp = reinterpret_cast<const std::uint8_t*>(&scale);
  unpadded.insert(unpadded.end(), sp, sp + 4);
  const TensorData a{Bytes::from_vector(unpadded), {2, 3}, DType::qfloat(q8)};
  ASSERT_TRUE(exec->register_tensor(TensorId{1}, a));
  EXPECT_EQ(exec->read_tensor(tir(1, {2, 3}, DType::qfloat(q8))).value().bytes, a.bytes);
  EXPECT_EQ(get(tir(1, {2, 3})), (std::vector<double>{0.5, 1, 1.5, -1.5, 2.5, 3}));

  // Q4 [3, 3]: flat = 2 words, per line = 3 words.
  const QuantScheme q4 = make_scheme(QuantValue::Q4S, {QuantStoreKind::PackedU32, 0},
                                     ScaleDtype::F32, {}, ScaleDtype::F32);
  std::vector<std::uint8_t> flat = {0x21, 0x43, 0x65, 0x07, 0x01, 0, 0, 0};  // 1..7, 0, 1
  flat.insert(flat.end(), sp, sp + 4);
  const TensorData b{Bytes::from_vector(flat), {3, 3}, DType::qfloat(q4)};
  ASSERT_TRUE(exec->register_tensor(TensorId{2}, b));
  EXPECT_EQ(exec->read_tensor(tir(2, {3, 3}, DType::qfloat(q4))).value().bytes, b.bytes);
  EXPECT_EQ(get(tir(2, {3, 3})), (std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3, 3.5, 0, 0.5}));
}

// Protocol 6: a 0.23 client accepts only the canonical layout, so a tensor registered in another
// comes back in the canonical one (per line, each line padded to whole words), values unchanged.
TEST_F(Quant, CanonicalReadsRewriteOtherLayouts) {
  const QuantScheme q8 = make_scheme(QuantValue::Q8S, {QuantStoreKind::PackedU32, 0},
                                     ScaleDtype::F32, {}, ScaleDtype::F32);
  const float scale = 0.5f;
  const auto* sp = reinterpret_cast<const std::uint8_t*>(&scale);
  std::vector<std::uint8_t> unpadded = {1, 2, 3, 0xFD, 5, 6};  // [2, 3], no word padding
  unpadded.insert(unpadded.end(), sp, sp + 4);
  std::vector<std::uint8_t> canonical = {1, 2, 3, 0, 0xFD, 5, 6, 0};  // each line one word
  canonical.insert(canonical.end(), sp, sp + 4);
  ASSERT_TRUE(exec->register_tensor(
      TensorId{1}, TensorData{Bytes::from_vector(unpadded), {2, 3}, DType::qfloat(q8)}));
  ASSERT_TRUE(exec->register_tensor(
      TensorId{2}, TensorData{Bytes::from_vector(canonical), {2, 3}, DType::qfloat(q8)}));
  exec->set_quant_rules({/*canonical_layout=*/true, /*divide_ties_to_even=*/false});
  const auto read = exec->read_tensor(tir(1, {2, 3}, DType::qfloat(q8), TensorStatus::ReadOnly));
  ASSERT_TRUE(read) << read.error().what();
  EXPECT_EQ(read.value().bytes, Bytes::from_vector(canonical));
  // Canonical data stays as it came, and the values are the same either way.
  EXPECT_EQ(
      exec->read_tensor(tir(2, {2, 3}, DType::qfloat(q8), TensorStatus::ReadOnly)).value().bytes,
      Bytes::from_vector(canonical));
  EXPECT_EQ(get(tir(1, {2, 3})), (std::vector<double>{0.5, 1, 1.5, -1.5, 2.5, 3}));

  // Q4 [3, 3] in flat words (2 words) comes back per line (3 words), block scales recomputed.
  const QuantScheme q4 = make_scheme(QuantValue::Q4S, {QuantStoreKind::PackedU32, 0},
                                     ScaleDtype::F32, {}, ScaleDtype::F32);
  std::vector<std::uint8_t> flat = {0x21, 0x43, 0x65, 0x07, 0x01, 0, 0, 0};  // 1..7, 0, 1
  flat.insert(flat.end(), sp, sp + 4);
  ASSERT_TRUE(exec->register_tensor(
      TensorId{3}, TensorData{Bytes::from_vector(flat), {3, 3}, DType::qfloat(q4)}));
  std::vector<std::uint8_t> lines = {0x21, 0x03, 0, 0, 0x54, 0x06, 0, 0, 0x07, 0x01, 0, 0};
  lines.insert(lines.end(), sp, sp + 4);
  EXPECT_EQ(
      exec->read_tensor(tir(3, {3, 3}, DType::qfloat(q4), TensorStatus::ReadOnly)).value().bytes,
      Bytes::from_vector(lines));
}

TEST_F(Quant, DTypeUsageMatchesWhatWorks) {
  const QuantStore native{QuantStoreKind::Native, 0};
  EXPECT_EQ(exec->dtype_usage(DType::qfloat(default_quant_scheme())).bits, kUsageStorage);
  // A lookup scheme has no table to dequantize with; a two-level scheme whose block scales reach
  // f32's range, or whose per-tensor scale is narrower than f32, cannot be quantized (burn-std
  // quantizable()).
  QuantScheme lookup = make_scheme(QuantValue::Q4S, native, ScaleDtype::F16, {}, ScaleDtype::F16);
  lookup.mode = QuantMode::Lookup;
  EXPECT_EQ(exec->dtype_usage(DType::qfloat(lookup)).bits, 0);
  EXPECT_EQ(exec->dtype_usage(DType::qfloat(make_scheme(QuantValue::Q8S, native, ScaleDtype::F32,
                                                        {4}, ScaleDtype::F32)))
                .bits,
            0);
  EXPECT_EQ(exec->dtype_usage(DType::qfloat(make_scheme(QuantValue::Q8S, native, ScaleDtype::BF16,
                                                        {4}, ScaleDtype::UE4M3)))
                .bits,
            0);
  EXPECT_EQ(exec->dtype_usage(
                    DType::qfloat(make_scheme(QuantValue::E2M1, {QuantStoreKind::PackedNative, 1},
                                              ScaleDtype::F32, {16}, ScaleDtype::UE4M3)))
                .bits,
            kUsageStorage);
}

// Same-host transfers of quantized tensors go through torch's dequantize and are requantized with
// the same scale where they arrive.
TEST_F(Quant, TransfersDequantizeAndRequantizeWithTheSameScale) {
  const QuantScheme s = make_scheme(QuantValue::Q8S, {QuantStoreKind::Native, 0}, ScaleDtype::F32,
                                    {}, ScaleDtype::F32);
  RefQ q{{}, {0.0123f}, std::nullopt};
  for (int v = -128; v < 128; ++v) q.values.push_back(v);
  const Dims shape = {16, 16};
  const TensorData data{Bytes::from_vector(ref_bytes(q, shape, s)), shape, DType::qfloat(s)};
  ASSERT_TRUE(exec->register_tensor(TensorId{1}, data));
  auto moved = exec->take_for_transfer(tir(1, shape, DType::qfloat(s)));
  ASSERT_TRUE(moved);
  const auto* parked =
      dynamic_cast<const backend::libtorch::QuantTransferable*>(moved.value().get());
  ASSERT_NE(parked, nullptr);
  EXPECT_FALSE(parked->transfer().raw);
  EXPECT_EQ(parked->transfer().dequantized.scalar_type(), at::kFloat);
  EXPECT_FALSE(parked->transfer().meta.values.defined()) << "only the dequantized values travel";
  EXPECT_EQ(moved.value()->dtype(), DType::qfloat(s));
  ASSERT_TRUE(other->register_transferred(TensorId{9}, *moved.value()));
  const auto* arrived = torch_exec(*other).stored_quantized(9);
  ASSERT_NE(arrived, nullptr);
  EXPECT_EQ(arrived->values.scalar_type(), at::kQInt8);
  EXPECT_EQ(arrived->values.q_scale(), static_cast<double>(0.0123f));
  EXPECT_EQ(other->read_tensor(tir(9, shape, DType::qfloat(s))).value().bytes, data.bytes);

  // A zero scale cannot carry values through dequantize: they move as they are.
  RefQ zero{{1, -2, 3, -4}, {0.0f}, std::nullopt};
  const TensorData z{Bytes::from_vector(ref_bytes(zero, {4}, s)), {4}, DType::qfloat(s)};
  ASSERT_TRUE(exec->register_tensor(TensorId{2}, z));
  auto raw = exec->take_for_transfer(tir(2, {4}, DType::qfloat(s)));
  ASSERT_TRUE(raw);
  EXPECT_TRUE(
      dynamic_cast<const backend::libtorch::QuantTransferable&>(*raw.value()).transfer().raw);
  ASSERT_TRUE(other->register_transferred(TensorId{10}, *raw.value()));
  EXPECT_EQ(other->read_tensor(tir(10, {4}, DType::qfloat(s))).value().bytes, z.bytes);
}

// ---- Quantized inputs to ordinary ops. --------------------------------------------------------

class QuantizedInputs : public OpTest {
 protected:
  QuantScheme q8 = make_scheme(QuantValue::Q8S, {QuantStoreKind::Native, 0}, ScaleDtype::F32, {},
                               ScaleDtype::F32);
  void put_q(std::uint64_t id, const Dims& shape, const QuantScheme& s, const RefQ& q) {
    ASSERT_TRUE(exec->register_tensor(
        TensorId{id}, {Bytes::from_vector(ref_bytes(q, shape, s)), shape, DType::qfloat(s)}));
  }
};

TEST_F(QuantizedInputs, LayoutOpsKeepThePerTensorScale) {
  put_q(1, {2, 3}, q8, {{1, 2, 3, 4, 5, 6}, {0.1f}, std::nullopt});
  const DType qd = DType::qfloat(q8);
  run(make_op<OpKind::BaseFloat_SwapDims>(
      SwapDimsOpIr{tir(1, {2, 3}, qd), out(2, {3, 2}, qd), 0, 1}));
  run(make_op<OpKind::BaseFloat_Reshape>(ShapeOpIr{tir(2, {3, 2}, qd), out(3, {6}, qd)}));
  auto data = exec->read_tensor(tir(3, {6}, qd));
  ASSERT_TRUE(data) << data.error().what();
  const RefQ expect{{1, 4, 2, 5, 3, 6}, {0.1f}, std::nullopt};
  EXPECT_EQ(data.value().bytes, Bytes::from_vector(ref_bytes(expect, {6}, q8)));
  EXPECT_EQ(torch_exec(*exec).stored_quantized(3)->values.scalar_type(), at::kQInt8);
}

TEST_F(QuantizedInputs, BlockSchemesRequantizeDynamically) {
  // Blocks of 2 along the rows; transposed, each row mixes values of both blocks, so the output is
  // requantized with fresh scales (burn-flex block_safe_layout_op -> quantize_dynamic).
  const QuantScheme b =
      make_scheme(QuantValue::Q8S, {QuantStoreKind::Native, 0}, std::nullopt, {2}, ScaleDtype::F32);
  const RefQ in{{127, -127, 64, 32}, {0.01f, 0.02f}, std::nullopt};
  put_q(1, {2, 2}, b, in);
  const DType bd = DType::qfloat(b);
  run(make_op<OpKind::BaseFloat_SwapDims>(
      SwapDimsOpIr{tir(1, {2, 2}, bd), out(2, {2, 2}, bd), 0, 1}));
  const auto x = ref_dequantize(in, {2, 2}, b);  // [[a, b], [c, d]]
  const float t[4] = {static_cast<float>(x[0]), static_cast<float>(x[2]), static_cast<float>(x[1]),
                      static_cast<float>(x[3])};
  RefQ expect{{}, {}, std::nullopt};
  for (int row = 0; row < 2; ++row) {
    const float alpha = std::max(std::abs(t[2 * row]), std::abs(t[2 * row + 1]));
    expect.scales.push_back(2.0f * alpha / 254.0f);
  }
  for (int i = 0; i < 4; ++i) {
    const float inv = 1.0f / (1.0f * expect.scales[i / 2]);
    expect.values.push_back(static_cast<int>(std::round(t[i] * inv)));
  }
  auto data = exec->read_tensor(tir(2, {2, 2}, bd));
  ASSERT_TRUE(data) << data.error().what();
  EXPECT_EQ(data.value().bytes, Bytes::from_vector(ref_bytes(expect, {2, 2}, b)));
}

TEST_F(QuantizedInputs, FloatOpsDequantizeOnDemand) {
  put_q(1, {3}, q8, {{10, -20, 30}, {0.5f}, std::nullopt});
  put(tir(2, {3}), {1, 1, 1});
  run(make_op<OpKind::NumericFloat_Add>(
      BinaryOpIr{tir(1, {3}, DType::qfloat(q8)), tir(2, {3}), out(3, {3})}, DTypeKind::F32));
  EXPECT_EQ(get(tir(3, {3})), (std::vector<double>{6, -9, 16}));
  // A matmul with a quantized operand, and an argmax of a quantized tensor.
  put_q(4, {2, 2}, q8, {{1, 2, 3, 4}, {0.25f}, std::nullopt});
  put(tir(5, {2, 1}), {1, 1});
  run(make_op<OpKind::Float_Matmul>(
      MatmulOpIr{tir(4, {2, 2}, DType::qfloat(q8)), tir(5, {2, 1}), out(6, {2, 1})},
      DTypeKind::F32));
  EXPECT_EQ(get(tir(6, {2, 1})), (std::vector<double>{0.75, 1.75}));
  run(make_op<OpKind::NumericFloat_ArgMax>(
      ReduceDimOpIr{tir(1, {3}, DType::qfloat(q8)), out(7, {1}, DTypeKind::I64), 0, 1},
      DTypeKind::F32));
  EXPECT_EQ(get(tir(7, {1}, DTypeKind::I64)), (std::vector<double>{2}));
  // The quantized tensor itself is untouched.
  EXPECT_NE(torch_exec(*exec).stored_quantized(1), nullptr);
}

// burn-flex 0.22.1 quantizes x * (1 / scale) rounded half away from zero, 0.23 x / scale rounded
// half to even: a session keeps to its Burn version's rule (Executor::QuantRules), in Quantize and
// where an op's quantized output is requantized.
TEST_F(QuantizedInputs, QuantizeRoundsAsTheSessionsBurnVersion) {
  const QuantScheme b =
      make_scheme(QuantValue::Q8S, {QuantStoreKind::Native, 0}, std::nullopt, {5}, ScaleDtype::F32);
  // Over the scale 0.25: 0.5, 1.5, -2.5, 6.5, -0.5, every one a tie.
  const std::vector<double> x = {0.125, 0.375, -0.625, 1.625, -0.125};
  const std::vector<double> away = {0.25, 0.5, -0.75, 1.75, -0.25};
  const std::vector<double> even = {0, 0.5, -0.5, 1.5, 0};
  std::uint64_t id = 1;
  for (const bool ties_to_even : {false, true}) {
    exec->set_quant_rules({false, ties_to_even});
    const auto in = tir(id++, {5});
    put(in, x);
    const auto scales = tir(id++, {1});
    put(scales, {0.25});
    const auto q = out(id++, {5}, DType::qfloat(b));
    run(make_op<OpKind::Float_Quantize>(
        QuantizeOpIr{in, QuantizationParametersIr{scales, std::nullopt}, b, q}, DTypeKind::F32));
    expect_near(get(tir(q.id.value, {5})), ties_to_even ? even : away, 0);
  }
}

TEST_F(QuantizedInputs, ReadingAsAnIntegerOrReadingFloatsAsQuantizedIsAnError) {
  put_q(1, {3}, q8, {{10, -20, 30}, {0.5f}, std::nullopt});
  auto r = exec->read_tensor(tir(1, {3}, DTypeKind::I64));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(),
              HasSubstr("is quantized (Q8S/per-tensor(F32)/Native), read as i64"));
  put(tir(2, {3}), {1, 2, 3});
  auto f = exec->read_tensor(tir(2, {3}, DType::qfloat(q8)));
  ASSERT_FALSE(f);
  EXPECT_THAT(f.error().what(), HasSubstr("holds Float values, not quantized ones"));
}

TEST_F(QuantizedInputs, LiveBytesCountQuantizedTensors) {
  put_q(1, {100}, q8, {std::vector<int>(100, 3), {0.5f}, std::nullopt});
  EXPECT_GE(exec->stats().live_bytes, 100u);
  run(make_op<OpKind::Drop_Op>(tir(1, {100}, DType::qfloat(q8))));
  EXPECT_EQ(exec->stats().live_bytes, 0u);
}

}  // namespace
}  // namespace tb::test
