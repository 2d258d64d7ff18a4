#include "quant.hpp"

#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <fmt/format.h>

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

int value_bits(QuantValue v) {
  switch (v) {
    case QuantValue::Q8F:
    case QuantValue::Q8S:
    case QuantValue::E4M3:
    case QuantValue::E5M2:
      return 8;
    case QuantValue::Q4F:
    case QuantValue::Q4S:
    case QuantValue::E2M1:
      return 4;
    case QuantValue::Q2F:
    case QuantValue::Q2S:
      return 2;
  }
  return 8;
}

bool is_minifloat(QuantValue v) {
  return v == QuantValue::E4M3 || v == QuantValue::E5M2 || v == QuantValue::E2M1;
}

// QuantValue::range.
std::pair<float, float> value_range(QuantValue v) {
  switch (v) {
    case QuantValue::Q8F:
      return {-128.0f, 127.0f};
    case QuantValue::Q4F:
      return {-8.0f, 7.0f};
    case QuantValue::Q2F:
      return {-2.0f, 1.0f};
    case QuantValue::Q8S:
      return {-127.0f, 127.0f};
    case QuantValue::Q4S:
      return {-7.0f, 7.0f};
    case QuantValue::Q2S:
      return {-1.0f, 1.0f};
    case QuantValue::E4M3:
      return {-448.0f, 448.0f};
    case QuantValue::E5M2:
      return {-57344.0f, 57344.0f};
    case QuantValue::E2M1:
      return {-6.0f, 6.0f};
  }
  return {-128.0f, 127.0f};
}

// QuantStore::size_bits.
int store_bits(const QuantScheme& s) {
  switch (s.store.kind) {
    case QuantStoreKind::Native:
      return value_bits(s.value);
    case QuantStoreKind::PackedNative:
      return value_bits(s.value) * (s.value == QuantValue::E2M1 ? 2 : 1);
    case QuantStoreKind::PackedU32:
      return 32;
  }
  return 8;
}

// QuantScheme::tensor_scale: a scheme with no level reads as per-tensor f32.
std::optional<ScaleDtype> tensor_scale(const QuantScheme& s) {
  if (!s.tensor && !s.block) return ScaleDtype::F32;
  return s.tensor;
}
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

std::int64_t product(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{1}, std::multiplies<>());
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

std::string shape_str(const std::vector<std::int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

// Each block scale copied over its block (partial blocks at the end included).
at::Tensor expand_grid(const at::Tensor& grid, const std::vector<std::int64_t>& shape,
                       const QuantScheme& s) {
  if (!s.block) return grid.reshape({});
  const auto block = block_dims(s.block->size, shape.size());
  at::Tensor t = grid;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const auto dim = static_cast<std::int64_t>(d);
    if (block[d] > 1) t = t.repeat_interleave(block[d], dim);
    if (t.size(dim) != shape[d]) t = t.narrow(dim, 0, shape[d]);
  }
  return t;
}

// Where the values of a packed store go: the stored tensor (packing axis swapped innermost), its
// line length and how many lines.
struct ValueLayout {
  int bits = 8;
  int per_word = 1;  // values per storage word
  int word_bytes = 1;
  std::optional<std::int64_t> swapped;  // the outer axis stored innermost
  std::int64_t lines = 1;
  std::int64_t line = 0;  // values per line
  std::int64_t words_per_line = 0;

  std::size_t bytes() const {
    return static_cast<std::size_t>(lines * words_per_line * word_bytes);
  }
  // One value per byte, nothing to mask.
  bool unpacked() const { return per_word == 1; }
};

Result<ValueLayout> value_layout(const std::vector<std::int64_t>& shape, const QuantScheme& s,
                                 Packing packing) {
  ValueLayout l;
  l.bits = value_bits(s.value);
  const int word_bits = store_bits(s);
  l.per_word = word_bits / l.bits;
  l.word_bytes = (word_bits + 7) / 8;
  const std::int64_t numel = product(shape);
  if (packing == Packing::kBytes) {
    l.per_word = 1;
    l.word_bytes = 1;
    l.lines = 1;
    l.line = numel;
    l.words_per_line = numel;
    return l;
  }
  const bool per_line = packing == Packing::kPerLine && l.per_word > 1 && !shape.empty() &&
                        s.store.kind != QuantStoreKind::Native;
  if (!per_line) {
    l.lines = 1;
    l.line = numel;
    l.words_per_line = (numel + l.per_word - 1) / l.per_word;
    return l;
  }
  const auto rank = static_cast<std::int64_t>(shape.size());
  const auto packing_dim = static_cast<std::int64_t>(s.store.packing_dim);
  if (packing_dim >= rank) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} packs along dimension {} from the innermost, outside a rank-{} tensor",
                      describe(s), packing_dim, rank);
  }
  const std::int64_t axis = rank - packing_dim - 1;
  auto stored = shape;
  if (axis != rank - 1) {
    l.swapped = axis;
    std::swap(stored[static_cast<std::size_t>(axis)], stored.back());
  }
  l.line = stored.back();
  l.lines = l.line == 0 ? 0 : numel / l.line;
  if (l.line == 0) {
    std::vector<std::int64_t> outer(stored.begin(), stored.end() - 1);
    l.lines = product(outer);
  }
  l.words_per_line = (l.line + l.per_word - 1) / l.per_word;
  return l;
}

std::size_t params_bytes(const QuantScheme& s, std::int64_t num_params) {
  std::size_t n = static_cast<std::size_t>(num_params) * scale_size(scale_dtype(s));
  if (auto g = global_dtype(s)) n += scale_size(*g);
  return n;
}

// The stored grid order: swapped with the values when the packing axis is not innermost.
at::Tensor stored_order(const at::Tensor& logical, const ValueLayout& l) {
  if (!l.swapped || logical.dim() == 0) return logical;
  return logical.transpose(*l.swapped, logical.dim() - 1);
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

// Values as f32, before scaling.
at::Tensor value_floats(const QTensor& q) {
  if (!is_minifloat(q.scheme.value)) return q.values.to(at::kFloat);
  const auto& table = minifloat_table(q.scheme.value);
  at::Tensor lut =
      at::from_blob(const_cast<float*>(table.data()), {256}, at::kFloat).to(q.values.device());
  return lut.index_select(0, q.values.reshape({-1}).to(at::kLong)).view(q.values.sizes());
}

// Rust's f32::round (half away from zero), then the range clamp, NaN as 0 (`as i8`).
at::Tensor round_clamp_int8(const at::Tensor& v, float lo, float hi) {
  const at::Tensor t = v.trunc();
  const at::Tensor step = at::where((v - t).abs() >= 0.5, v.sign(), at::zeros_like(v));
  return at::nan_to_num((t + step).clamp(lo, hi), 0.0).to(at::kChar);
}

at::Tensor encode_codes(const at::Tensor& v, QuantValue kind, float lo, float hi) {
  const at::Tensor clamped = v.clamp(lo, hi).to(at::kCPU).contiguous();
  at::Tensor codes = at::empty(clamped.sizes(), at::TensorOptions().dtype(at::kByte));
  const float* src = clamped.data_ptr<float>();
  std::uint8_t* dst = codes.data_ptr<std::uint8_t>();
  const std::int64_t n = clamped.numel();
  for (std::int64_t i = 0; i < n; ++i) dst[i] = encode_minifloat(kind, src[i]);
  return codes.to(v.device());
}

// The scale of a tensor held as torch qint8: its scheme allows it and torch can take the scale.
std::optional<float> torch_scale(const QuantScheme& s, const at::Tensor& scales) {
  if (!torch_qint8(s) || !scales.defined() || scales.numel() != 1) return std::nullopt;
  const float scale = scales.reshape({-1}).to(at::kCPU)[0].item<float>();
  if (!(scale > 0.0f) || !std::isfinite(scale)) return std::nullopt;
  return scale;
}

// Wraps int8 values as torch qint8 when the scheme and its scale allow it.
at::Tensor as_torch(at::Tensor values, const QuantScheme& s, const at::Tensor& scales) {
  const auto scale = torch_scale(s, scales);
  if (!scale || values.scalar_type() != at::kChar) return values;
  return at::_make_per_tensor_quantized_tensor(values, static_cast<double>(*scale), 0);
}

at::Tensor plain_values(const QTensor& q) {
  return q.values.is_quantized() ? q.values.int_repr() : q.values;
}

// Quantizes with the scales as given (no rounding onto the scale dtype).
Result<QTensor> quantize_with(const at::Tensor& x, const QuantScheme& scheme,
                              const std::vector<float>& scales, std::optional<float> global) {
  if (scheme.mode == QuantMode::Lookup) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: a lookup scheme maps values through a table Burn's IR does not carry",
                      describe(scheme));
  }
  const auto shape = x.sizes().vec();
  const auto grid = grid_of(shape, scheme);
  if (static_cast<std::int64_t>(scales.size()) != product(grid)) {
    return make_error(
        ErrorCode::kInvalidArgument, "{} on a tensor of shape {} takes {} scales (grid {}), got {}",
        describe(scheme), shape_str(shape), product(grid), shape_str(grid), scales.size());
  }
  if (scheme.block) {
    const auto block = block_dims(scheme.block->size, shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (block[d] == 0 || shape[d] % block[d] != 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "tensor {} is not a whole number of {} blocks", shape_str(shape),
                          shape_str(block));
      }
    }
  }
  // burn-flex: inv_scale = 1 / (multiplier * scale), x * inv_scale.
  const float multiplier = global.value_or(1.0f);
  std::vector<float> inv(scales.size());
  for (std::size_t i = 0; i < scales.size(); ++i) inv[i] = 1.0f / (multiplier * scales[i]);
  const auto dev = at::TensorOptions().dtype(at::kFloat).device(x.device());
  const at::Tensor inv_grid = at::tensor(inv, at::kFloat).reshape(grid).to(x.device());
  const at::Tensor scaled = x.to(dev) * expand_grid(inv_grid, shape, scheme);
  const auto [lo, hi] = value_range(scheme.value);

  QTensor q;
  q.scheme = scheme;
  q.scales = at::tensor(scales, at::kFloat).reshape(grid).to(x.device());
  q.global = global;
  q.values = is_minifloat(scheme.value) ? encode_codes(scaled, scheme.value, lo, hi)
                                        : round_clamp_int8(scaled, lo, hi);
  q.values = as_torch(q.values, scheme, q.scales);
  return q;
}

std::vector<float> floats_of(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

// ---- Scheme facts. ------------------------------------------------------------------------

std::uint64_t QTensor::nbytes() const {
  std::uint64_t n = static_cast<std::uint64_t>(values.numel()) * values.element_size();
  if (scales.defined()) n += static_cast<std::uint64_t>(scales.numel()) * 4;
  return n;
}

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

// ---- Bytes. --------------------------------------------------------------------------------

Result<QTensor> from_data(const ir::TensorData& data, const at::Device& device) {
  const QuantScheme& s = data.dtype.scheme;
  const std::vector<std::int64_t> shape(data.shape.begin(), data.shape.end());
  const std::int64_t numel = product(shape);
  const auto grid = grid_of(shape, s);
  const std::size_t param_len = params_bytes(s, product(grid));
  const std::size_t total = data.bytes.size();

  // The canonical layout first; then the two others Burn writes (they coincide with it whenever
  // every line is a whole number of words).
  std::optional<ValueLayout> layout;
  Packing packing = Packing::kPerLine;
  std::string expected;
  for (Packing p : {Packing::kPerLine, Packing::kBytes, Packing::kFlat}) {
    auto l = value_layout(shape, s, p);
    if (!l) {
      if (p == Packing::kPerLine) expected = l.error().message;
      continue;
    }
    if (p == Packing::kPerLine) {
      expected = fmt::format("{} bytes ({} of values, {} of scales)", l.value().bytes() + param_len,
                             l.value().bytes(), param_len);
    }
    if (l.value().bytes() + param_len == total) {
      layout = l.value();
      packing = p;
      break;
    }
  }
  if (!layout) {
    return make_error(ErrorCode::kInvalidArgument,
                      "QFloat TensorData ({}) of shape {} needs {}, got {} bytes", describe(s),
                      shape_str(shape), expected, total);
  }
  const ValueLayout& l = *layout;
  const std::uint8_t* bytes = data.bytes.data();

  // Values, in stored order.
  std::vector<std::int64_t> stored = shape;
  if (l.swapped) std::swap(stored[static_cast<std::size_t>(*l.swapped)], stored.back());
  const bool minifloat = is_minifloat(s.value);
  at::Tensor values =
      at::empty(stored, at::TensorOptions().dtype(minifloat ? at::kByte : at::kChar));
  auto* out = static_cast<std::uint8_t*>(values.data_ptr());
  if (l.unpacked()) {
    if (numel) std::memcpy(out, bytes, static_cast<std::size_t>(numel));
  } else {
    const std::uint32_t mask = (1u << l.bits) - 1u;
    for (std::int64_t line = 0; line < l.lines; ++line) {
      for (std::int64_t i = 0; i < l.line; ++i) {
        const std::int64_t w = line * l.words_per_line + i / l.per_word;
        std::uint32_t word = 0;
        std::memcpy(&word, bytes + w * l.word_bytes, static_cast<std::size_t>(l.word_bytes));
        std::uint32_t field = (word >> ((i % l.per_word) * l.bits)) & mask;
        if (!minifloat && (field >> (l.bits - 1))) field |= ~mask;  // sign-extend
        out[line * l.line + i] = static_cast<std::uint8_t>(field);
      }
    }
  }
  if (l.swapped) values = values.transpose(*l.swapped, values.dim() - 1).contiguous();

  // Scales, then the per-tensor scale.
  const std::uint8_t* p = bytes + l.bytes();
  const ScaleDtype sd = scale_dtype(s);
  std::vector<std::int64_t> stored_grid = grid;
  if (l.swapped && s.block)
    std::swap(stored_grid[static_cast<std::size_t>(*l.swapped)], stored_grid.back());
  at::Tensor scales = at::empty(stored_grid, at::TensorOptions().dtype(at::kFloat));
  float* sp = scales.data_ptr<float>();
  for (std::int64_t i = 0; i < scales.numel(); ++i)
    sp[i] = decode_scale(p + i * scale_size(sd), sd);
  if (l.swapped && s.block) scales = scales.transpose(*l.swapped, scales.dim() - 1).contiguous();
  std::optional<float> global;
  if (auto g = global_dtype(s)) {
    global = decode_scale(bytes + total - scale_size(*g), *g);
  }

  QTensor q;
  q.scheme = s;
  q.global = global;
  q.packing = packing;
  q.params = std::make_shared<const std::vector<std::uint8_t>>(bytes + l.bytes(), bytes + total);
  q.scales = scales;
  q.values = as_torch(values, s, scales);
  return to_device(q, device);
}

Result<ir::TensorData> to_data(const QTensor& q) {
  const QuantScheme& s = q.scheme;
  const auto shape = q.shape();
  TB_TRY_ASSIGN(const ValueLayout l, value_layout(shape, s, q.packing));

  std::vector<std::uint8_t> bytes(l.bytes(), 0);
  at::Tensor values = stored_order(plain_values(q), l).to(at::kCPU).contiguous();
  const auto* in = static_cast<const std::uint8_t*>(values.data_ptr());
  if (l.unpacked()) {
    if (!bytes.empty()) std::memcpy(bytes.data(), in, bytes.size());
  } else {
    const std::uint32_t mask = (1u << l.bits) - 1u;
    for (std::int64_t line = 0; line < l.lines; ++line) {
      for (std::int64_t i = 0; i < l.line; ++i) {
        const std::int64_t w = line * l.words_per_line + i / l.per_word;
        const std::uint32_t field = (static_cast<std::uint32_t>(in[line * l.line + i]) & mask)
                                    << ((i % l.per_word) * l.bits);
        std::uint32_t word = 0;
        std::memcpy(&word, bytes.data() + w * l.word_bytes, static_cast<std::size_t>(l.word_bytes));
        word |= field;
        std::memcpy(bytes.data() + w * l.word_bytes, &word, static_cast<std::size_t>(l.word_bytes));
      }
    }
  }

  if (q.params) {
    bytes.insert(bytes.end(), q.params->begin(), q.params->end());
  } else {
    const ScaleDtype sd = scale_dtype(s);
    at::Tensor grid = q.scales;
    if (s.block) grid = stored_order(grid, l);
    for (float f : floats_of(grid)) encode_scale(f, sd, bytes);
    if (auto g = global_dtype(s)) encode_scale(q.global.value_or(1.0f), *g, bytes);
  }
  ir::TensorData out;
  out.shape.assign(shape.begin(), shape.end());
  out.dtype = ir::DType::qfloat(s);
  out.bytes = ir::Bytes::from_vector(std::move(bytes));
  return out;
}

// ---- Arithmetic. ---------------------------------------------------------------------------

Result<at::Tensor> dequantize(const QTensor& q) {
  if (q.scheme.mode == QuantMode::Lookup) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: a lookup scheme maps values through a table Burn's IR does not carry",
                      describe(q.scheme));
  }
  if (q.values.is_quantized()) return at::dequantize(q.values);
  const auto shape = q.shape();
  at::Tensor scales = q.scales.to(q.values.device());
  if (q.global) scales = scales * *q.global;  // burn-flex: multiplier * block scale
  return expand_grid(scales, shape, q.scheme) * value_floats(q);
}

Result<QTensor> quantize(const at::Tensor& x, const QuantScheme& scheme, const at::Tensor& scales,
                         const std::optional<at::Tensor>& global) {
  const auto gd = global_dtype(scheme);
  if (gd && !global) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} is two-level: its quantization parameters need a per-tensor scale",
                      describe(scheme));
  }
  if (!gd && global) {
    return make_error(ErrorCode::kInvalidArgument, "{} takes no per-tensor scale over its blocks",
                      describe(scheme));
  }
  std::vector<float> s = floats_of(scales);
  for (auto& v : s) v = validated(v, scale_dtype(scheme));
  std::optional<float> g;
  if (global) {
    const auto gv = floats_of(*global);
    if (gv.size() != 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        "the per-tensor scale must hold one value, got {}", gv.size());
    }
    g = validated(gv[0], *gd);
  }
  return quantize_with(x, scheme, s, g);
}

Result<QTensor> quantize_dynamic(const at::Tensor& x, const QuantScheme& scheme) {
  if (scheme.mode == QuantMode::Lookup) return quantize_with(x, scheme, {}, std::nullopt);
  const auto shape = x.sizes().vec();
  const auto [lo, hi] = value_range(scheme.value);
  const float range = hi - lo;
  // f32::max folds ignore NaN.
  const at::Tensor mag =
      at::nan_to_num(x.to(at::kFloat).abs(), 0.0, std::numeric_limits<double>::infinity());
  const ScaleDtype sd = scale_dtype(scheme);
  if (!scheme.block) {
    const float alpha = mag.numel() ? mag.max().item<float>() : 0.0f;
    return quantize_with(x, scheme, {validated(2.0f * alpha / range, sd)}, std::nullopt);
  }
  const auto block = block_dims(scheme.block->size, shape.size());
  std::vector<std::int64_t> split;
  std::vector<std::int64_t> block_axes;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (block[d] == 0 || shape[d] % block[d] != 0) {
      return make_error(ErrorCode::kInvalidArgument, "tensor {} is not a whole number of {} blocks",
                        shape_str(shape), shape_str(block));
    }
    split.push_back(shape[d] / block[d]);
    split.push_back(block[d]);
    block_axes.push_back(static_cast<std::int64_t>(2 * d + 1));
  }
  const auto grid = grid_of(shape, scheme);
  std::vector<float> alpha(static_cast<std::size_t>(product(grid)), 0.0f);
  if (!alpha.empty() && mag.numel()) {
    alpha = floats_of(block_axes.empty() ? mag : mag.reshape(split).amax(block_axes));
  }
  std::vector<float> scales(alpha.size());
  std::optional<float> global;
  if (auto gd = global_dtype(scheme)) {
    std::vector<float> raw(alpha.size());
    float peak = 0.0f;
    for (std::size_t i = 0; i < alpha.size(); ++i) {
      raw[i] = 2.0f * alpha[i] / range;
      peak = std::fmax(peak, raw[i]);
    }
    global = validated(peak / max_representable(sd), *gd);
    for (std::size_t i = 0; i < raw.size(); ++i) scales[i] = validated(raw[i] / *global, sd);
  } else {
    for (std::size_t i = 0; i < alpha.size(); ++i)
      scales[i] = validated(2.0f * alpha[i] / range, sd);
  }
  return quantize_with(x, scheme, scales, global);
}

Result<QTensor> requantize_like(const at::Tensor& x, const QTensor& like) {
  QTensor q;
  if (const auto scale = torch_scale(like.scheme, like.scales)) {
    q = like;
    q.values = at::quantize_per_tensor(x.to(at::kFloat), *scale, 0, at::kQInt8);
  } else {
    TB_TRY_ASSIGN(q, quantize_with(x, like.scheme, floats_of(like.scales), like.global));
    q.scales = like.scales;
  }
  q.params = like.params;
  q.packing = like.packing;
  return q;
}

QTensor to_device(const QTensor& q, const at::Device& device) {
  QTensor out = q;
  if (out.values.defined() && out.values.device() != device) out.values = out.values.to(device);
  if (out.scales.defined() && out.scales.device() != device) out.scales = out.scales.to(device);
  return out;
}

// ---- Transfers. ----------------------------------------------------------------------------

Result<Transfer> prepare_transfer(const QTensor& q) {
  Transfer t;
  t.meta = q;
  if (q.scheme.mode == QuantMode::Symmetric) {
    TB_TRY_ASSIGN(t.dequantized, dequantize(q));
    // Checked here, once, rather than trusted: a zero or non-finite scale, or a NaN code, does not
    // survive x = s * q, q = round(x / s).
    auto back = requantize_like(t.dequantized, q);
    if (back && at::equal(plain_values(back.value()), plain_values(q))) {
      t.meta.values = at::Tensor();
      return t;
    }
  }
  t.dequantized = at::Tensor();
  t.raw = true;
  return t;
}

Result<QTensor> finish_transfer(const Transfer& t, const at::Device& device) {
  if (t.raw) return to_device(t.meta, device);
  QTensor meta = to_device(t.meta, device);
  return requantize_like(t.dequantized.to(device), meta);
}

}  // namespace tb::backend::libtorch::quant
