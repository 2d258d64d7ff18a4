// The tensor-level half of quant.hpp: QFloat bytes to and from QTensors, Burn's quantize /
// dequantize arithmetic on ATen (device transfers are quant_transfer.cpp's). What a scheme means
// (value ranges, scale dtypes and their codecs, block grids, minifloat tables) lives in
// quant_scheme.cpp, shared through quant_internal.hpp.
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

std::int64_t product(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{1}, std::multiplies<>());
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
  l.bits = quant_value_bits(s.value);
  const int word_bits = quant_store_bits(s);
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

// The stored grid order: swapped with the values when the packing axis is not innermost.
at::Tensor stored_order(const at::Tensor& logical, const ValueLayout& l) {
  if (!l.swapped || logical.dim() == 0) return logical;
  return logical.transpose(*l.swapped, logical.dim() - 1);
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

std::vector<float> floats_of(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

// ---- QTensor. ------------------------------------------------------------------------------

at::Tensor detail::plain_values(const QTensor& q) {
  return q.values.is_quantized() ? q.values.int_repr() : q.values;
}

std::uint64_t QTensor::nbytes() const {
  std::uint64_t n = static_cast<std::uint64_t>(values.numel()) * values.element_size();
  if (scales.defined()) n += static_cast<std::uint64_t>(scales.numel()) * 4;
  return n;
}

// ---- Bytes. --------------------------------------------------------------------------------

// The layout `total` bytes of a tensor of `shape` are in: the canonical one first, then the two
// others Burn writes (they coincide with it whenever every line is a whole number of words).
Result<std::pair<ValueLayout, Packing>> find_layout(const std::vector<std::int64_t>& shape,
                                                    const QuantScheme& s, std::size_t param_len,
                                                    std::size_t total) {
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
    if (l.value().bytes() + param_len == total) return std::pair{l.value(), p};
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "QFloat TensorData ({}) of shape {} needs {}, got {} bytes", describe(s),
                    shape_str(shape), expected, total);
}

Result<QTensor> from_data(const ir::TensorData& data, const at::Device& device) {
  const QuantScheme& s = data.dtype.scheme;
  const std::vector<std::int64_t> shape(data.shape.begin(), data.shape.end());
  const std::int64_t numel = product(shape);
  const auto grid = grid_of(shape, s);
  const std::size_t param_len = params_bytes(s, product(grid));
  const std::size_t total = data.bytes.size();

  TB_TRY_ASSIGN(const auto found, find_layout(shape, s, param_len, total));
  const auto& [l, packing] = found;
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

Result<ir::TensorData> to_data(const QTensor& q, bool canonical) {
  const QuantScheme& s = q.scheme;
  const auto shape = q.shape();
  // The scales region is copied only into the layout it came in; otherwise it is written from the
  // grid, in the packed order of the layout written.
  const Packing packing = canonical ? Packing::kPerLine : q.packing;
  const bool verbatim_params = q.params && packing == q.packing;
  TB_TRY_ASSIGN(const ValueLayout l, value_layout(shape, s, packing));

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

  if (verbatim_params) {
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
