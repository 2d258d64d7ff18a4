// The scheme and number-format half of quant.hpp: what a QuantScheme means (scale levels and
// dtypes, block grids; the value kinds themselves are ir/quant_value.hpp's), the scale and
// minifloat codecs, and the public "scheme facts". Scalars and shapes only, no tensors: kept apart
// from quant.cpp's tensor-level work (bytes, arithmetic, transfers), which reads these through
// quant_internal.hpp.
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <fmt/format.h>

#include "quant/quant.hpp"
#include "quant/quant_internal.hpp"

namespace tb::backend::libtorch::quant {

using ir::QuantMode;
using ir::QuantScheme;
using ir::QuantStoreKind;
using ir::QuantValue;
using ir::ScaleDtype;

namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}
float float_of(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

// QuantScheme::tensor_scale: a scheme with no level reads as per-tensor f32.
std::optional<ScaleDtype> tensor_scale(const QuantScheme& s) {
  if (!s.tensor && !s.block) return ScaleDtype::F32;
  return s.tensor;
}

constexpr std::uint32_t kUe8m0Min = 0x00400000u;  // 2^-127, subnormal in f32
constexpr std::uint32_t kUe8m0Max = 0x7F000000u;  // 2^127

float round_up_pow2(float scale) {
  if (std::isnan(scale)) return scale;
  if (scale <= float_of(kUe8m0Min)) return float_of(kUe8m0Min);
  if (scale >= float_of(kUe8m0Max)) return float_of(kUe8m0Max);
  constexpr std::uint32_t step = 1u << 23;
  return float_of((bits_of(scale) + (step - 1)) & ~(step - 1));
}

std::uint8_t f32_to_ue8m0(float scale) {
  const float r = round_up_pow2(scale);
  if (std::isnan(r)) return 0xFF;
  return static_cast<std::uint8_t>(bits_of(r) >> 23);
}
float ue8m0_to_f32(std::uint8_t code) {
  if (code == 0) return float_of(kUe8m0Min);
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return float_of(static_cast<std::uint32_t>(code) << 23);
}

float table_value(QuantValue kind, std::uint32_t code) {
  const bool negative = kind == QuantValue::E2M1 ? (code & 0x8u) != 0 : (code & 0x80u) != 0;
  float magnitude = 0.0f;
  switch (kind) {
    case QuantValue::E4M3: {
      const std::uint32_t e = (code >> 3) & 0xFu, m = code & 0x7u;
      if (e == 0xF && m == 0x7) return std::numeric_limits<float>::quiet_NaN();
      magnitude = e == 0 ? std::ldexp(static_cast<float>(m), -9)
                         : std::ldexp(1.0f + static_cast<float>(m) / 8.0f, static_cast<int>(e) - 7);
      break;
    }
    case QuantValue::E5M2: {
      const std::uint32_t e = (code >> 2) & 0x1Fu, m = code & 0x3u;
      if (e == 0x1F) {
        if (m != 0) return std::numeric_limits<float>::quiet_NaN();
        magnitude = std::numeric_limits<float>::infinity();
      } else {
        magnitude = e == 0
                        ? std::ldexp(static_cast<float>(m), -16)
                        : std::ldexp(1.0f + static_cast<float>(m) / 4.0f, static_cast<int>(e) - 15);
      }
      break;
    }
    case QuantValue::E2M1: {
      const std::uint32_t e = (code >> 1) & 0x3u, m = code & 0x1u;
      magnitude = e == 0 ? 0.5f * static_cast<float>(m)
                         : std::ldexp(1.0f + 0.5f * static_cast<float>(m), static_cast<int>(e) - 1);
      break;
    }
    default:
      break;
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace

namespace detail {

// QuantScheme::scale_dtype: the innermost level's.
ScaleDtype scale_dtype(const QuantScheme& s) {
  if (s.block) return s.block->dtype;
  return s.tensor.value_or(ScaleDtype::F32);
}
// global_scale_dtype: the per-tensor scale block scales are relative to.
std::optional<ScaleDtype> global_dtype(const QuantScheme& s) {
  if (!s.block) return std::nullopt;
  return tensor_scale(s);
}

std::size_t scale_size(ScaleDtype d) {
  switch (d) {
    case ScaleDtype::F32:
      return 4;
    case ScaleDtype::F16:
    case ScaleDtype::BF16:
      return 2;
    case ScaleDtype::UE8M0:
    case ScaleDtype::UE4M3:
      return 1;
  }
  return 4;
}

float max_representable(ScaleDtype d) {
  switch (d) {
    case ScaleDtype::F32:
      return FLT_MAX;
    case ScaleDtype::F16:
      return 65504.0f;
    case ScaleDtype::BF16:
      return float_of(0x7F7F0000u);
    case ScaleDtype::UE8M0:
      return float_of(0x7F000000u);
    case ScaleDtype::UE4M3:
      return 448.0f;
  }
  return FLT_MAX;
}

// The scale burn-flex keeps: rounded up onto the dtype, and never zero (validated_scale).
float validated(float scale, ScaleDtype d) {
  const float r = round_up_scale(scale, d);
  if (r > 0.0f && std::isfinite(r)) return r;
  return round_up_scale(FLT_MIN, d);
}

void encode_scale(float s, ScaleDtype d, std::vector<std::uint8_t>& out) {
  auto put = [&](const auto v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(v));
  };
  switch (d) {
    case ScaleDtype::F32:
      put(s);
      return;
    case ScaleDtype::F16:
      put(c10::Half(s).x);
      return;
    case ScaleDtype::BF16:
      put(c10::BFloat16(s).x);
      return;
    case ScaleDtype::UE8M0:
      out.push_back(f32_to_ue8m0(s));
      return;
    case ScaleDtype::UE4M3:
      out.push_back(encode_minifloat(QuantValue::E4M3, s));
      return;
  }
}

float decode_scale(const std::uint8_t* p, ScaleDtype d) {
  switch (d) {
    case ScaleDtype::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case ScaleDtype::F16: {
      c10::Half h;
      std::memcpy(&h.x, p, 2);
      return static_cast<float>(h);
    }
    case ScaleDtype::BF16: {
      c10::BFloat16 b;
      std::memcpy(&b.x, p, 2);
      return static_cast<float>(b);
    }
    case ScaleDtype::UE8M0:
      return ue8m0_to_f32(*p);
    case ScaleDtype::UE4M3:
      return decode_minifloat(QuantValue::E4M3, *p);
  }
  return 0.0f;
}

// BlockSize::to_dim_vec: `rank` dims, missing leading ones filled with 1.
std::vector<std::int64_t> block_dims(const ir::BlockSize& b, std::size_t rank) {
  const std::size_t data_len = std::min<std::size_t>(rank, b.len);
  std::vector<std::int64_t> out(rank, 1);
  for (std::size_t i = 0; i < data_len; ++i) out[rank - data_len + i] = b.storage[i];
  return out;
}

// params_shape: one scale per block ([1] for a per-tensor level).
std::vector<std::int64_t> grid_of(const std::vector<std::int64_t>& shape, const QuantScheme& s) {
  if (!s.block) return {1};
  const auto block = block_dims(s.block->size, shape.size());
  std::vector<std::int64_t> grid(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::int64_t b = std::max<std::int64_t>(block[d], 1);
    grid[d] = (shape[d] + b - 1) / b;
  }
  return grid;
}

std::size_t params_bytes(const QuantScheme& s, std::int64_t num_params) {
  std::size_t n = static_cast<std::size_t>(num_params) * scale_size(scale_dtype(s));
  if (auto g = global_dtype(s)) n += scale_size(*g);
  return n;
}

const std::array<float, 256>& minifloat_table(QuantValue kind) {
  static const auto make = [](QuantValue k) {
    std::array<float, 256> t{};
    for (std::uint32_t c = 0; c < 256; ++c)
      t[c] = table_value(k, k == QuantValue::E2M1 ? (c & 0xFu) : c);
    return t;
  };
  static const std::array<float, 256> e4m3 = make(QuantValue::E4M3);
  static const std::array<float, 256> e5m2 = make(QuantValue::E5M2);
  static const std::array<float, 256> e2m1 = make(QuantValue::E2M1);
  return kind == QuantValue::E4M3 ? e4m3 : kind == QuantValue::E5M2 ? e5m2 : e2m1;
}

}  // namespace detail

using namespace detail;

// ---- Scheme facts. ------------------------------------------------------------------------

bool torch_qint8(const QuantScheme& s) {
  return (s.value == QuantValue::Q8F || s.value == QuantValue::Q8S) &&
         s.mode == QuantMode::Symmetric && !s.block;
}

bool quantizable(const QuantScheme& s) {
  const auto g = global_dtype(s);
  if (s.block && g) return max_representable(s.block->dtype) <= 65504.0f && *g == ScaleDtype::F32;
  return true;
}

ir::DTypeUsageSet usage(const QuantScheme& s) {
  if (s.mode != QuantMode::Symmetric || !quantizable(s)) return {0};
  return {ir::kUsageStorage};
}

std::string describe(const QuantScheme& s) {
  std::string level;
  if (s.block) {
    std::vector<int> dims(s.block->size.storage.begin(),
                          s.block->size.storage.begin() + s.block->size.len);
    level = fmt::format("block[{}]({})", fmt::join(dims, "x"), ir::enum_name(s.block->dtype));
    if (s.tensor) level += fmt::format("+tensor({})", ir::enum_name(*s.tensor));
  } else {
    level = fmt::format("per-tensor({})", ir::enum_name(scale_dtype(s)));
  }
  std::string store(ir::enum_name(s.store.kind));
  if (s.store.kind != QuantStoreKind::Native) store += fmt::format("({})", s.store.packing_dim);
  return fmt::format("{}/{}/{}{}", ir::enum_name(s.value), level, store,
                     s.mode == QuantMode::Lookup ? "/Lookup" : "");
}

float round_up_scale(float scale, ScaleDtype d) {
  if (d == ScaleDtype::F32) return scale;
  if (d == ScaleDtype::UE8M0) return round_up_pow2(scale);
  if (std::isnan(scale)) return scale;
  const float max = max_representable(d);
  if (scale >= max) return max;
  std::uint32_t step = 0;
  float min_normal = 0.0f, spacing = 0.0f;
  switch (d) {
    case ScaleDtype::F16:
      step = 1u << 13;
      min_normal = 6.103515625e-05f;      // 2^-14
      spacing = 5.9604644775390625e-08f;  // 2^-24
      break;
    case ScaleDtype::BF16:
      step = 1u << 16;
      break;
    default:  // UE4M3
      step = 1u << 20;
      min_normal = 0.015625f;  // 2^-6
      spacing = 0.001953125f;  // 2^-9
      break;
  }
  if (spacing > 0.0f && scale < min_normal) return std::ceil(scale / spacing) * spacing;
  return float_of((bits_of(scale) + (step - 1)) & ~(step - 1));
}

float decode_minifloat(QuantValue kind, std::uint8_t code) {
  return minifloat_table(kind)[code];
}

std::uint8_t encode_minifloat(QuantValue kind, float value) {
  const std::uint32_t bits = bits_of(value);
  const std::uint32_t mag_bits = bits & 0x7FFFFFFFu;
  const float magnitude = float_of(mag_bits);
  if (kind == QuantValue::E2M1) {
    // cubecl float_to_e2m1_bits: thresholds at the midpoints, ties to the even code.
    std::uint32_t code = 0;
    code += magnitude > 0.25f;
    code += magnitude >= 0.75f;
    code += magnitude > 1.25f;
    code += magnitude >= 1.75f;
    code += magnitude > 2.5f;
    code += magnitude >= 3.5f;
    code += magnitude > 5.0f;
    return static_cast<std::uint8_t>(code | ((bits >> 31) << 3));
  }
  // cubecl f32_to_fp8_bits.
  const bool e4m3 = kind == QuantValue::E4M3;
  const std::uint32_t mantissa_bits = e4m3 ? 3 : 2;
  const std::uint32_t bias = e4m3 ? 7 : 15;
  const std::uint32_t shift = 23 - mantissa_bits;
  const std::uint32_t rebias = bias - 127u;  // wrapping, as cubecl's u32 arithmetic
  const std::uint32_t half_ulp = 1u << (shift - 1);
  const float subnormal_scale = e4m3 ? 512.0f : 65536.0f;
  const float min_normal = e4m3 ? 0.015625f : 6.103515625e-05f;
  const float max_value = e4m3 ? 448.0f : 57344.0f;
  const std::uint32_t max_code = e4m3 ? 0x7Eu : 0x7Bu;
  const std::uint32_t sign = (bits >> 24) & 0x80u;

  std::uint32_t code = 0;
  if (mag_bits > 0x7F800000u) {
    code = 0x7Fu;
  } else if (magnitude > max_value) {
    code = max_code;
  } else if (magnitude < min_normal) {
    const float steps = magnitude * subnormal_scale;
    const auto truncated = static_cast<std::uint32_t>(steps);
    const float fraction = steps - static_cast<float>(truncated);
    const bool up = fraction > 0.5f || (fraction == 0.5f && (truncated & 1u));
    code = truncated + (up ? 1u : 0u);
  } else {
    const std::uint32_t exponent = (mag_bits >> 23) + rebias;
    const std::uint32_t mantissa = mag_bits & 0x7FFFFFu;
    const std::uint32_t lsb = (mantissa >> shift) & 1u;
    const std::uint32_t rounded = ((exponent << 23) | mantissa) + (half_ulp - 1) + lsb;
    code = rounded >> shift;
  }
  return static_cast<std::uint8_t>(code | sign);
}

}  // namespace tb::backend::libtorch::quant
