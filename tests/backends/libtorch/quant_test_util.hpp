// A reference for Burn's QFloat TensorData, written from burn-std (src/tensor/quantization.rs:
// QuantizedBytes, quantized_data_len, encode_scales) and burn-cubecl (src/ops/qtensor.rs:
// new_quantized, q_into_data) apart from the code under test: values, then block scales in their
// scale dtype, then the per-tensor scale; packed stores pack along their packing axis, stored
// innermost, each line padded to whole words.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include "torchbridge/ir/types.hpp"

namespace tb::test {

using namespace tb::ir;

inline QuantScheme make_scheme(QuantValue value, QuantStore store, std::optional<ScaleDtype> tensor,
                               std::vector<std::uint8_t> block, ScaleDtype block_dtype) {
  QuantScheme s;
  s.value = value;
  s.store = store;
  s.mode = QuantMode::Symmetric;
  s.tensor = tensor;
  if (!block.empty()) s.block = BlockScale{make_block_size(block), block_dtype};
  return s;
}

// Quantized values (integers, or minifloat codes), block scales, per-tensor scale.
struct RefQ {
  std::vector<int> values;
  std::vector<float> scales;
  std::optional<float> global;
};

inline int ref_bits(QuantValue v) {
  if (v == QuantValue::Q4F || v == QuantValue::Q4S || v == QuantValue::E2M1) return 4;
  if (v == QuantValue::Q2F || v == QuantValue::Q2S) return 2;
  return 8;
}
inline bool ref_minifloat(QuantValue v) {
  return v == QuantValue::E4M3 || v == QuantValue::E5M2 || v == QuantValue::E2M1;
}

// OCP E4M3 (no infinities, S.1111.111 NaN), E5M2 (IEEE-like), E2M1 (no NaN).
inline double ref_decode(QuantValue v, std::uint8_t code) {
  if (v == QuantValue::E2M1) {
    static const double kMagnitudes[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    const double m = kMagnitudes[code & 7];
    return (code & 8) ? -m : m;
  }
  const bool e4 = v == QuantValue::E4M3;
  const int man_bits = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  const int exp = (code & 0x7F) >> man_bits;
  const int man = code & ((1 << man_bits) - 1);
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  if (e4 && (code & 0x7F) == 0x7F) return std::nan("");
  if (!e4 && exp == 31) return man ? std::nan("") : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(man, 1 - bias - man_bits);
  return sign * std::ldexp((1 << man_bits) + man, exp - bias - man_bits);
}

inline std::vector<int> random_values(QuantValue v, std::uint64_t n, std::mt19937& rng) {
  std::vector<int> out;
  const int bits = ref_bits(v);
  std::uniform_int_distribution<int> dist(
      ref_minifloat(v) ? 0 : -(1 << (bits - 1)),
      ref_minifloat(v) ? (1 << bits) - 1 : (1 << (bits - 1)) - 1);
  for (std::uint64_t i = 0; i < n; ++i) out.push_back(dist(rng));
  return out;
}

inline std::vector<std::uint64_t> ref_block(const QuantScheme& s, std::size_t rank) {
  std::vector<std::uint64_t> out(rank, 1);
  if (!s.block) return out;
  const std::size_t n = std::min<std::size_t>(rank, s.block->size.len);
  for (std::size_t i = 0; i < n; ++i) out[rank - n + i] = s.block->size.storage[i];
  return out;
}

inline Dims ref_grid(const Dims& shape, const QuantScheme& s) {
  if (!s.block) return {1};
  const auto block = ref_block(s, shape.size());
  Dims g;
  for (std::size_t d = 0; d < shape.size(); ++d) g.push_back((shape[d] + block[d] - 1) / block[d]);
  return g;
}

inline std::uint64_t ref_num_params(const Dims& shape, const QuantScheme& s) {
  return num_elements(ref_grid(shape, s));
}

inline ScaleDtype ref_scale_dtype(const QuantScheme& s) {
  if (s.block) return s.block->dtype;
  return s.tensor ? *s.tensor : ScaleDtype::F32;
}

inline void ref_put_scale(std::vector<std::uint8_t>& out, float v, ScaleDtype d) {
  auto put = [&](const auto x) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&x);
    out.insert(out.end(), p, p + sizeof(x));
  };
  switch (d) {
    case ScaleDtype::F32:
      put(v);
      return;
    case ScaleDtype::F16:
      put(c10::Half(v).x);
      return;
    case ScaleDtype::BF16:
      put(c10::BFloat16(v).x);
      return;
    case ScaleDtype::UE8M0: {
      int e = 0;
      const double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
      EXPECT_EQ(m, 0.5) << v << " is not a power of two";
      out.push_back(static_cast<std::uint8_t>(e - 1 + 127));
      return;
    }
    case ScaleDtype::UE4M3:
      for (int c = 0; c < 0x7F; ++c) {
        if (ref_decode(QuantValue::E4M3, static_cast<std::uint8_t>(c)) == v) {
          out.push_back(static_cast<std::uint8_t>(c));
          return;
        }
      }
      ADD_FAILURE() << v << " is not an e4m3 value";
      out.push_back(0);
      return;
  }
}

inline double ref_scale_value(float v, ScaleDtype d) {
  std::vector<std::uint8_t> b;
  ref_put_scale(b, v, d);
  switch (d) {
    case ScaleDtype::F16: {
      c10::Half h;
      std::memcpy(&h.x, b.data(), 2);
      return static_cast<float>(h);
    }
    case ScaleDtype::BF16: {
      c10::BFloat16 h;
      std::memcpy(&h.x, b.data(), 2);
      return static_cast<float>(h);
    }
    default:
      return v;
  }
}

// Row-major index <-> coordinates.
inline std::vector<std::uint64_t> unravel(std::uint64_t i, const Dims& shape) {
  std::vector<std::uint64_t> c(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}
inline std::uint64_t ravel(const std::vector<std::uint64_t>& c, const Dims& shape) {
  std::uint64_t i = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + c[d];
  return i;
}

inline std::vector<std::uint8_t> ref_bytes(const RefQ& q, const Dims& shape, const QuantScheme& s) {
  std::vector<std::uint8_t> out;
  const int bits = ref_bits(s.value);
  int word_bits = bits;
  if (s.store.kind == QuantStoreKind::PackedU32) word_bits = 32;
  if (s.store.kind == QuantStoreKind::PackedNative && s.value == QuantValue::E2M1) word_bits = 8;
  const int per_word = word_bits / bits;
  const std::size_t rank = shape.size();
  // The packing axis goes innermost (the others are "stored" in this order).
  std::size_t axis = rank ? rank - 1 : 0;
  if (per_word > 1 && rank) axis = rank - 1 - s.store.packing_dim;
  auto stored_shape = [&](Dims d) {
    if (rank && axis != rank - 1) std::swap(d[axis], d[rank - 1]);
    return d;
  };
  const Dims stored = stored_shape(shape);
  // The logical index of a stored position (the swap is its own inverse).
  auto logical = [&](std::uint64_t stored_index, const Dims& logical_shape) {
    auto c = unravel(stored_index, stored_shape(logical_shape));
    if (rank && axis != rank - 1) std::swap(c[axis], c[rank - 1]);
    return ravel(c, logical_shape);
  };
  if (per_word == 1) {
    for (int v : q.values) out.push_back(static_cast<std::uint8_t>(v));
  } else {
    const std::uint64_t line = rank ? stored.back() : 1;
    const std::uint64_t lines = line ? num_elements(shape) / line : 0;
    const std::uint64_t words = (line + per_word - 1) / per_word;
    for (std::uint64_t l = 0; l < lines; ++l) {
      for (std::uint64_t w = 0; w < words; ++w) {
        std::uint32_t word = 0;
        for (int k = 0; k < per_word; ++k) {
          const std::uint64_t i = w * per_word + k;
          if (i >= line) break;
          const int v = q.values[logical(l * line + i, shape)];
          word |= (static_cast<std::uint32_t>(v) & ((1u << bits) - 1)) << (k * bits);
        }
        for (int b = 0; b < word_bits / 8; ++b)
          out.push_back(static_cast<std::uint8_t>(word >> (8 * b)));
      }
    }
  }
  const Dims grid = ref_grid(shape, s);
  for (std::uint64_t i = 0; i < q.scales.size(); ++i) {
    const std::uint64_t g = s.block ? logical(i, grid) : i;
    ref_put_scale(out, q.scales[g], ref_scale_dtype(s));
  }
  if (q.global) ref_put_scale(out, *q.global, ScaleDtype::F32);
  return out;
}

// Burn's dequantization: (global * block scale) * value.
inline std::vector<double> ref_dequantize(const RefQ& q, const Dims& shape, const QuantScheme& s) {
  std::vector<double> out;
  const auto block = ref_block(s, shape.size());
  const Dims grid = ref_grid(shape, s);
  for (std::uint64_t i = 0; i < num_elements(shape); ++i) {
    std::uint64_t g = 0;
    if (s.block) {
      auto c = unravel(i, shape);
      for (std::size_t d = 0; d < c.size(); ++d) c[d] /= block[d];
      g = ravel(c, grid);
    }
    float scale = static_cast<float>(ref_scale_value(q.scales[g], ref_scale_dtype(s)));
    if (q.global) scale = *q.global * scale;
    const float v =
        ref_minifloat(s.value)
            ? static_cast<float>(ref_decode(s.value, static_cast<std::uint8_t>(q.values[i])))
            : static_cast<float>(q.values[i]);
    out.push_back(scale * v);
  }
  return out;
}

}  // namespace tb::test
