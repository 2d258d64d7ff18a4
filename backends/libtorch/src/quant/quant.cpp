// The arithmetic half of quant.hpp: Burn's quantize / dequantize on ATen (QFloat bytes are
// quant_bytes.cpp's, device transfers quant_transfer.cpp's). What a scheme means
// (scale dtypes and their codecs, block grids, minifloat tables) lives in quant_scheme.cpp, shared
// through quant_internal.hpp.
#include "quant/quant.hpp"

#include <cmath>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "quant/quant_internal.hpp"

namespace tb::backend::libtorch::quant {

using ir::QuantMode;
using ir::QuantScheme;
using ir::QuantStoreKind;
using ir::QuantValue;
using ir::ScaleDtype;

using namespace detail;

namespace {

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

// Round half to even (torch's round is nearbyint), NaN as 0 (`as i8`); the values are clamped.
at::Tensor round_even_int8(const at::Tensor& clamped) {
  return at::nan_to_num(at::round(clamped), 0.0).to(at::kChar);
}

// Quantizes with the scales as given (no rounding onto the scale dtype).
Result<QTensor> quantize_with(const at::Tensor& x, const QuantScheme& scheme,
                              const std::vector<float>& scales, std::optional<float> global,
                              Encoding encoding) {
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
  // burn-flex 0.22.1: x * (1 / (multiplier * scale)); 0.23: x / (multiplier * scale), clamped,
  // then rounded half to even.
  const bool divide = encoding == Encoding::kDivideHalfEven;
  const float multiplier = global.value_or(1.0f);
  std::vector<float> factor(scales.size());
  for (std::size_t i = 0; i < scales.size(); ++i) {
    factor[i] = divide ? multiplier * scales[i] : 1.0f / (multiplier * scales[i]);
  }
  const auto dev = at::TensorOptions().dtype(at::kFloat).device(x.device());
  const at::Tensor factor_grid =
      expand_grid(at::tensor(factor, at::kFloat).reshape(grid).to(x.device()), shape, scheme);
  const at::Tensor scaled = divide ? x.to(dev) / factor_grid : x.to(dev) * factor_grid;
  const auto [lo, hi] = quant_value_range(scheme.value);

  QTensor q;
  q.scheme = scheme;
  q.scales = at::tensor(scales, at::kFloat).reshape(grid).to(x.device());
  q.global = global;
  if (is_minifloat(scheme.value)) {
    q.values = encode_codes(scaled, scheme.value, lo, hi);
  } else {
    q.values = divide ? round_even_int8(scaled.clamp(lo, hi)) : round_clamp_int8(scaled, lo, hi);
  }
  q.values = as_torch(q.values, scheme, q.scales);
  return q;
}

}  // namespace

// ---- QTensor. ------------------------------------------------------------------------------

std::int64_t detail::product(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{1}, std::multiplies<>());
}

std::string detail::shape_str(const std::vector<std::int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

std::vector<float> detail::floats_of(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

at::Tensor detail::as_torch(at::Tensor values, const QuantScheme& s, const at::Tensor& scales) {
  const auto scale = torch_scale(s, scales);
  if (!scale || values.scalar_type() != at::kChar) return values;
  return at::_make_per_tensor_quantized_tensor(values, static_cast<double>(*scale), 0);
}

at::Tensor detail::plain_values(const QTensor& q) {
  return q.values.is_quantized() ? q.values.int_repr() : q.values;
}

std::uint64_t QTensor::nbytes() const {
  std::uint64_t n = static_cast<std::uint64_t>(values.numel()) * values.element_size();
  if (scales.defined()) n += static_cast<std::uint64_t>(scales.numel()) * 4;
  return n;
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
                         const std::optional<at::Tensor>& global, Encoding encoding) {
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
  return quantize_with(x, scheme, s, g, encoding);
}

Result<QTensor> quantize_dynamic(const at::Tensor& x, const QuantScheme& scheme,
                                 Encoding encoding) {
  if (scheme.mode == QuantMode::Lookup) return quantize_with(x, scheme, {}, std::nullopt, encoding);
  const auto shape = x.sizes().vec();
  const auto [lo, hi] = quant_value_range(scheme.value);
  const float range = hi - lo;
  // f32::max folds ignore NaN.
  const at::Tensor mag =
      at::nan_to_num(x.to(at::kFloat).abs(), 0.0, std::numeric_limits<double>::infinity());
  const ScaleDtype sd = scale_dtype(scheme);
  if (!scheme.block) {
    const float alpha = mag.numel() ? mag.max().item<float>() : 0.0f;
    return quantize_with(x, scheme, {validated(2.0f * alpha / range, sd)}, std::nullopt, encoding);
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
  return quantize_with(x, scheme, scales, global, encoding);
}

Result<QTensor> requantize_like(const at::Tensor& x, const QTensor& like, Encoding encoding) {
  QTensor q;
  // torch's own quantize (a multiply by the inverse scale) stays 0.22.1's path; values that only
  // moved come back to their own codes either way.
  const auto scale = encoding == Encoding::kMulInverseHalfAway
                         ? torch_scale(like.scheme, like.scales)
                         : std::nullopt;
  if (scale) {
    q = like;
    q.values = at::quantize_per_tensor(x.to(at::kFloat), *scale, 0, at::kQInt8);
  } else {
    TB_TRY_ASSIGN(q, quantize_with(x, like.scheme, floats_of(like.scales), like.global, encoding));
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

}  // namespace tb::backend::libtorch::quant
