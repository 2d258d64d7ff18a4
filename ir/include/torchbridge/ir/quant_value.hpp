// What a quantized value kind is, in one table (cubecl-common 0.11.3 src/quant/scheme.rs:447-498,
// burn-std 0.22.1 src/tensor/dtype.rs:56-73): bits, packing, range, element size. The LibTorch
// backend's quantized tensors, DType::element_size and the C++ client's dynamic quantization all
// read these, so a value kind's facts cannot drift apart between host and client.
#pragma once

#include <cstddef>
#include <utility>

#include "torchbridge/ir/types.hpp"

namespace tb::ir {

struct QuantValueFacts {
  int bits;            // QuantValue::size_bits
  int native_packing;  // QuantValue::native_packing: E2M1 is processed in pairs
  float min;           // QuantValue::range
  float max;
  bool minifloat;  // E4M3, E5M2, E2M1: codes are small floats, not integers
};

constexpr QuantValueFacts quant_value_facts(QuantValue v) {
  switch (v) {
    case QuantValue::Q8F:
      return {8, 1, -128.0f, 127.0f, false};
    case QuantValue::Q8S:
      return {8, 1, -127.0f, 127.0f, false};
    case QuantValue::Q4F:
      return {4, 1, -8.0f, 7.0f, false};
    case QuantValue::Q4S:
      return {4, 1, -7.0f, 7.0f, false};
    case QuantValue::Q2F:
      return {2, 1, -2.0f, 1.0f, false};
    case QuantValue::Q2S:
      return {2, 1, -1.0f, 1.0f, false};
    case QuantValue::E4M3:
      return {8, 1, -448.0f, 448.0f, true};
    case QuantValue::E5M2:
      return {8, 1, -57344.0f, 57344.0f, true};
    case QuantValue::E2M1:
      return {4, 2, -6.0f, 6.0f, true};
  }
  return {8, 1, -128.0f, 127.0f, false};
}

constexpr int quant_value_bits(QuantValue v) {
  return quant_value_facts(v).bits;
}
constexpr bool is_minifloat(QuantValue v) {
  return quant_value_facts(v).minifloat;
}
constexpr std::pair<float, float> quant_value_range(QuantValue v) {
  const QuantValueFacts f = quant_value_facts(v);
  return {f.min, f.max};
}

// QuantStore::size_bits: the bits of one stored word.
constexpr int quant_store_bits(const QuantScheme& s) {
  const QuantValueFacts f = quant_value_facts(s.value);
  switch (s.store.kind) {
    case QuantStoreKind::Native:
      return f.bits;
    case QuantStoreKind::PackedNative:
      return f.bits * f.native_packing;
    case QuantStoreKind::PackedU32:
      return 32;
  }
  return 8;
}

// Bytes per element of a QFloat TensorData (burn-std DType::size); 0 for sub-byte values. A native
// E2M1 is a byte because the kernels pack it in pairs; a PackedNative store is a byte only for
// E2M1, as Burn has it.
constexpr std::size_t quant_element_size(const QuantScheme& s) {
  const QuantValueFacts f = quant_value_facts(s.value);
  switch (s.store.kind) {
    case QuantStoreKind::Native:
      return f.bits * f.native_packing == 8 ? 1 : 0;
    case QuantStoreKind::PackedU32:
      return 4;
    case QuantStoreKind::PackedNative:
      return f.native_packing > 1 && f.bits * f.native_packing == 8 ? 1 : 0;
  }
  return 0;
}

}  // namespace tb::ir
