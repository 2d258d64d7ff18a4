// torchbridge/ir/quant_value.hpp: the one table of quantized value kinds, checked against Burn's
// own numbers (cubecl-common QuantValue::size_bits / range, QuantStore::size_bits, burn-std
// DType::size), since the backend, DType::element_size and the client all read it.
#include "torchbridge/ir/quant_value.hpp"

#include <gtest/gtest.h>

namespace {

using tb::ir::QuantScheme;
using tb::ir::QuantStore;
using tb::ir::QuantStoreKind;
using tb::ir::QuantValue;

QuantScheme scheme(QuantValue v, QuantStoreKind store) {
  QuantScheme s;
  s.value = v;
  s.store = QuantStore{store, 0};
  return s;
}

TEST(QuantValueFacts, BitsAndRangesAreBurns) {
  using Range = std::pair<float, float>;
  EXPECT_EQ(tb::ir::quant_value_bits(QuantValue::Q8F), 8);
  EXPECT_EQ(tb::ir::quant_value_bits(QuantValue::E5M2), 8);
  EXPECT_EQ(tb::ir::quant_value_bits(QuantValue::Q4S), 4);
  EXPECT_EQ(tb::ir::quant_value_bits(QuantValue::E2M1), 4);
  EXPECT_EQ(tb::ir::quant_value_bits(QuantValue::Q2F), 2);
  EXPECT_EQ(tb::ir::quant_value_range(QuantValue::Q8F), Range(-128.0f, 127.0f));
  EXPECT_EQ(tb::ir::quant_value_range(QuantValue::Q8S), Range(-127.0f, 127.0f));
  EXPECT_EQ(tb::ir::quant_value_range(QuantValue::Q4F), Range(-8.0f, 7.0f));
  EXPECT_EQ(tb::ir::quant_value_range(QuantValue::Q4S), Range(-7.0f, 7.0f));
  EXPECT_EQ(tb::ir::quant_value_range(QuantValue::Q2F), Range(-2.0f, 1.0f));
  EXPECT_EQ(tb::ir::quant_value_range(QuantValue::Q2S), Range(-1.0f, 1.0f));
  EXPECT_EQ(tb::ir::quant_value_range(QuantValue::E4M3), Range(-448.0f, 448.0f));
  EXPECT_EQ(tb::ir::quant_value_range(QuantValue::E5M2), Range(-57344.0f, 57344.0f));
  EXPECT_EQ(tb::ir::quant_value_range(QuantValue::E2M1), Range(-6.0f, 6.0f));
  EXPECT_TRUE(tb::ir::is_minifloat(QuantValue::E2M1));
  EXPECT_FALSE(tb::ir::is_minifloat(QuantValue::Q8S));
}

TEST(QuantValueFacts, StoreBitsAndElementSizesAreBurns) {
  EXPECT_EQ(tb::ir::quant_store_bits(scheme(QuantValue::Q4F, QuantStoreKind::Native)), 4);
  EXPECT_EQ(tb::ir::quant_store_bits(scheme(QuantValue::E2M1, QuantStoreKind::PackedNative)), 8);
  EXPECT_EQ(tb::ir::quant_store_bits(scheme(QuantValue::Q8S, QuantStoreKind::PackedNative)), 8);
  EXPECT_EQ(tb::ir::quant_store_bits(scheme(QuantValue::Q2S, QuantStoreKind::PackedU32)), 32);

  auto size = [](QuantValue v, QuantStoreKind k) {
    return tb::ir::DType::qfloat(scheme(v, k)).element_size();
  };
  for (auto v :
       {QuantValue::Q8F, QuantValue::Q8S, QuantValue::E4M3, QuantValue::E5M2, QuantValue::E2M1}) {
    EXPECT_EQ(size(v, QuantStoreKind::Native), 1u) << tb::ir::enum_name(v);
  }
  for (auto v : {QuantValue::Q4F, QuantValue::Q4S, QuantValue::Q2F, QuantValue::Q2S}) {
    EXPECT_EQ(size(v, QuantStoreKind::Native), 0u) << tb::ir::enum_name(v);
    EXPECT_EQ(size(v, QuantStoreKind::PackedU32), 4u) << tb::ir::enum_name(v);
  }
  // A PackedNative store is a whole byte for E2M1 alone, 8-bit kinds included (burn-std).
  EXPECT_EQ(size(QuantValue::E2M1, QuantStoreKind::PackedNative), 1u);
  EXPECT_EQ(size(QuantValue::Q8S, QuantStoreKind::PackedNative), 0u);
  EXPECT_EQ(size(QuantValue::Q4S, QuantStoreKind::PackedNative), 0u);
}

}  // namespace
