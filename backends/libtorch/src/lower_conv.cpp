// Module ops, convolution part: Conv{1,2,3}d and their x/weight/bias backward ops,
// ConvTranspose{1,2,3}d and their weight/bias backward ops, DeformableConv2d (+ backward).
//
// Semantics are burn-backend 0.22.1's ModuleOps (the default backward implementations in
// ops/modules/conv.rs) and burn-flex's kernels:
// - Conv1d/Conv2d padding is per side, (begin, end). ATen's convolution only pads symmetrically:
//   we pass min(begin, end) to ATen and pad the input explicitly with zeros by the remainder, as
//   Burn's pad_asymmetric_conv_input does; the x-gradient is the gradient of the padded input,
//   cropped back to x.
// - The backward ops are exact gradients of the forward (at::convolution_backward); x's declared
//   shape decides the input size where stride makes it ambiguous (Burn: padding_out).
// - Weight layouts are PyTorch's: [C_out, C_in/groups, k...] for conv, [C_in, C_out/groups, k...]
//   for the transposed conv.
// - ConvTranspose padding_out may be any size in Burn (burn-flex scatters into the extra output
//   positions); ATen requires output_padding < stride, so larger ones go through a full transposed
//   convolution (no padding) cropped/zero-extended to the declared output.
// - DeformableConv2d has no ATen kernel: it is composed here (bilinear sampling with gather,
//   modulation mask, grouped matmul) after burn-flex's deform_conv.rs, and its backward is the
//   analytic gradient of that composition (what burn-flex's backward kernel computes).
// - f16/bf16 convolutions run in f32 on CPU (no CPU half kernels in LibTorch 1.13); the
//   deformable convolution always runs in f32 for them, as burn-flex does.
#include <ATen/ATen.h>

#include "lower_families.hpp"

namespace tb::backend::libtorch {

namespace {

using Ints = std::vector<std::int64_t>;

template <std::size_t N>
Ints to_ints(const std::array<std::uint64_t, N>& a) {
  Ints v(N);
  for (std::size_t i = 0; i < N; ++i) v[i] = static_cast<std::int64_t>(a[i]);
  return v;
}

// The type a convolution of these tensors is computed in: their promoted float type, with f16 and
// bf16 widened to f32 on CPU (or everywhere when `widen_half`).
at::ScalarType compute_type(std::initializer_list<const at::Tensor*> ts, const at::Device& device,
                            bool widen_half = false) {
  at::ScalarType t = at::ScalarType::Undefined;
  for (const at::Tensor* p : ts) {
    if (!p || !p->defined()) continue;
    t = t == at::ScalarType::Undefined ? p->scalar_type() : at::promote_types(t, p->scalar_type());
  }
  if (t == at::ScalarType::Undefined || !c10::isFloatingType(t)) t = at::kFloat;
  if (is_half(t) && (widen_half || device.is_cpu())) t = at::kFloat;
  return t;
}

at::Tensor as_type(const at::Tensor& t, at::ScalarType type) {
  return t.scalar_type() == type ? t : t.to(type);
}
std::optional<at::Tensor> as_type(const std::optional<at::Tensor>& t, at::ScalarType type) {
  if (!t) return std::nullopt;
  return as_type(*t, type);
}

// [1, C, 1, ...] view of a bias for a rank-`rank` output.
at::Tensor bias_view(const at::Tensor& bias, std::int64_t rank) {
  Ints shape(static_cast<std::size_t>(rank), 1);
  shape[1] = -1;
  return bias.reshape(shape);
}

// ---------------------------------------------------------------------------------------------
// Convolution.

struct ConvParams {
  Ints stride, pad_begin, pad_end, dilation;
  std::int64_t groups = 1;

  std::size_t dims() const { return stride.size(); }
  // The symmetric part given to ATen.
  Ints symmetric() const {
    Ints p(dims());
    for (std::size_t i = 0; i < dims(); ++i) p[i] = std::min(pad_begin[i], pad_end[i]);
    return p;
  }
  bool asymmetric() const { return pad_begin != pad_end; }
};

template <std::size_t N>
ConvParams conv_params(const std::array<std::uint64_t, N>& stride,
                       const std::array<ir::UsizePair, N>& padding,
                       const std::array<std::uint64_t, N>& dilation, std::uint64_t groups) {
  ConvParams p;
  p.stride = to_ints(stride);
  p.dilation = to_ints(dilation);
  for (const auto& [b, e] : padding) {
    p.pad_begin.push_back(static_cast<std::int64_t>(b));
    p.pad_end.push_back(static_cast<std::int64_t>(e));
  }
  p.groups = static_cast<std::int64_t>(groups);
  return p;
}
ConvParams params_of(const ir::Conv1dOptionsIr& o) {
  return conv_params<1>(o.stride, o.padding, o.dilation, o.groups);
}
ConvParams params_of(const ir::Conv2dOptionsIr& o) {
  return conv_params<2>(o.stride, o.padding, o.dilation, o.groups);
}
ConvParams params_of(const ir::Conv3dOptionsIr& o) {
  std::array<ir::UsizePair, 3> padding;
  for (std::size_t i = 0; i < 3; ++i) padding[i] = {o.padding[i], o.padding[i]};
  return conv_params<3>(o.stride, padding, o.dilation, o.groups);
}

// x zero-padded by the asymmetric remainder of the padding (what ATen's symmetric padding lacks).
at::Tensor pad_asymmetric(const at::Tensor& x, const ConvParams& p) {
  if (!p.asymmetric()) return x;
  const Ints sym = p.symmetric();
  Ints pads;  // constant_pad_nd: last dim first, (begin, end) per dim
  for (std::size_t i = p.dims(); i-- > 0;) {
    pads.push_back(p.pad_begin[i] - sym[i]);
    pads.push_back(p.pad_end[i] - sym[i]);
  }
  return at::constant_pad_nd(x, pads, 0);
}

at::Tensor conv_forward(const at::Tensor& x, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const ConvParams& p) {
  const at::Tensor b = bias ? *bias : at::Tensor();
  return at::convolution(pad_asymmetric(x, p), weight, b, p.stride, p.symmetric(), p.dilation,
                         /*transposed=*/false, Ints(p.dims(), 0), p.groups);
}

// Gradient of conv_forward w.r.t. x (which = 0) or weight (which = 1).
at::Tensor conv_backward(const at::Tensor& x, const at::Tensor& weight,
                         const at::Tensor& output_grad, const ConvParams& p, int which) {
  const at::Tensor padded = pad_asymmetric(x, p);
  const std::array<bool, 3> mask = {which == 0, which == 1, false};
  auto grads = at::convolution_backward(output_grad, padded, weight, at::OptionalIntArrayRef{},
                                        p.stride, p.symmetric(), p.dilation,
                                        /*transposed=*/false, Ints(p.dims(), 0), p.groups, mask);
  if (which == 1) return std::get<1>(grads);
  at::Tensor grad = std::get<0>(grads);
  if (p.asymmetric()) {
    const Ints sym = p.symmetric();
    for (std::size_t i = 0; i < p.dims(); ++i) {
      const auto d = static_cast<std::int64_t>(i) + 2;
      grad = grad.narrow(d, p.pad_begin[i] - sym[i], x.size(d));
    }
  }
  return grad;
}

// Burn's conv*_bias_backward: output_grad summed over every dim but the channels.
at::Tensor bias_backward(const at::Tensor& output_grad) {
  Ints dims;
  for (std::int64_t d = 0; d < output_grad.dim(); ++d)
    if (d != 1) dims.push_back(d);
  const auto acc = is_half(output_grad.scalar_type()) ? at::kFloat : output_grad.scalar_type();
  return at::sum(output_grad, dims, /*keepdim=*/false, acc);
}

// ---------------------------------------------------------------------------------------------
// Transposed convolution.

struct ConvTransposeParams {
  Ints stride, padding, padding_out, dilation;
  std::int64_t groups = 1;

  std::size_t dims() const { return stride.size(); }
  // ATen accepts output_padding < stride (the only form cuDNN and every CPU kernel take).
  bool native() const {
    for (std::size_t i = 0; i < dims(); ++i)
      if (padding_out[i] >= stride[i]) return false;
    return true;
  }
  // The declared output from the full (unpadded) transposed convolution: crop `padding` at the
  // start, and at the end crop `padding` then extend by `padding_out` (constant_pad_nd form).
  Ints full_to_output_pads() const {
    Ints pads;
    for (std::size_t i = dims(); i-- > 0;) {
      pads.push_back(-padding[i]);
      pads.push_back(padding_out[i] - padding[i]);
    }
    return pads;
  }
  Ints output_to_full_pads() const {
    Ints pads = full_to_output_pads();
    for (auto& v : pads) v = -v;
    return pads;
  }
};

template <class O>
ConvTransposeParams transpose_params_of(const O& o) {
  return {to_ints(o.stride), to_ints(o.padding), to_ints(o.padding_out), to_ints(o.dilation),
          static_cast<std::int64_t>(o.groups)};
}

at::Tensor conv_transpose_forward(const at::Tensor& x, const at::Tensor& weight,
                                  const std::optional<at::Tensor>& bias,
                                  const ConvTransposeParams& p) {
  const Ints zeros(p.dims(), 0);
  if (p.native()) {
    const at::Tensor b = bias ? *bias : at::Tensor();
    return at::convolution(x, weight, b, p.stride, p.padding, p.dilation, /*transposed=*/true,
                           p.padding_out, p.groups);
  }
  at::Tensor full = at::convolution(x, weight, at::Tensor(), p.stride, zeros, p.dilation,
                                    /*transposed=*/true, zeros, p.groups);
  at::Tensor out = at::constant_pad_nd(full, p.full_to_output_pads(), 0);
  if (bias) out = out + bias_view(*bias, out.dim());
  return out;
}

at::Tensor conv_transpose_weight_backward(const at::Tensor& x, const at::Tensor& weight,
                                          const at::Tensor& output_grad,
                                          const ConvTransposeParams& p) {
  const std::array<bool, 3> mask = {false, true, false};
  if (p.native()) {
    return std::get<1>(at::convolution_backward(
        output_grad, x, weight, at::OptionalIntArrayRef{}, p.stride, p.padding, p.dilation,
        /*transposed=*/true, p.padding_out, p.groups, mask));
  }
  // Adjoint of the crop/extend in conv_transpose_forward, then the full transposed convolution.
  const Ints zeros(p.dims(), 0);
  const at::Tensor full_grad = at::constant_pad_nd(output_grad, p.output_to_full_pads(), 0);
  return std::get<1>(at::convolution_backward(full_grad, x, weight, at::OptionalIntArrayRef{},
                                              p.stride, zeros, p.dilation, /*transposed=*/true,
                                              zeros, p.groups, mask));
}

// ---------------------------------------------------------------------------------------------
// Deformable convolution (burn-flex deform_conv.rs, composed of ATen ops).
//
// x [N, C, H, W]; offset [N, 2·G·kh·kw, Ho, Wo] holding (dy, dx) per kernel position, channel
// g·kh·kw·2 + k·2 + {0: y, 1: x}; mask [N, G·kh·kw, Ho, Wo], channel g·kh·kw + k; weight
// [C_out, C/weight_groups, kh, kw]; G = offset_groups, input channel c uses offset group c / (C/G).
// Sample point for output (oh, ow), kernel tap (i, j): (oh·s0 + i·d0 − p0 + dy, ow·s1 + j·d1 − p1
// + dx), bilinearly interpolated with zero outside the image; a point with y <= −1, y >= H,
// x <= −1 or x >= W samples 0 (and passes no gradient).

struct DeformSampling {
  std::int64_t n = 0, c = 0, h = 0, w = 0, groups = 1, cg = 0, k = 0, ho = 0, wo = 0;
  at::Tensor inside;                // [N, G, 1, K·L] bool: the point samples the image
  at::Tensor lh, lw, hh, hw;        // [N, G, 1, K·L] bilinear fractions
  std::array<at::Tensor, 4> index;  // [N, G, Cg, K·L] long flat h·W + w (clamped)
  std::array<at::Tensor, 4> valid;  // [N, G, 1, K·L] bool: this corner is inside
  std::array<at::Tensor, 4> value;  // [N, G, Cg, K·L] the corner's pixel, 0 when not valid
                                    // (kept only for the backward)
  std::array<at::Tensor, 4> coef;   // [N, G, 1, K·L] the corner's weight (0 outside)
  at::Tensor sampled;               // [N, G, Cg, K·L] interpolated samples
};

DeformSampling deform_sample(const at::Tensor& x, const at::Tensor& offset, std::int64_t kh,
                             std::int64_t kw, std::int64_t groups,
                             const ir::DeformableConv2dOptionsIr& o, bool keep_values) {
  DeformSampling s;
  s.n = x.size(0);
  s.c = x.size(1);
  s.h = x.size(2);
  s.w = x.size(3);
  s.groups = groups;
  s.cg = s.c / groups;
  s.k = kh * kw;
  s.ho = offset.size(2);
  s.wo = offset.size(3);
  const std::int64_t kl = s.k * s.ho * s.wo;
  const auto opts = x.options();

  const auto s0 = static_cast<std::int64_t>(o.stride[0]),
             s1 = static_cast<std::int64_t>(o.stride[1]);
  const auto p0 = static_cast<std::int64_t>(o.padding[0]),
             p1 = static_cast<std::int64_t>(o.padding[1]);
  const auto d0 = static_cast<std::int64_t>(o.dilation[0]),
             d1 = static_cast<std::int64_t>(o.dilation[1]);
  // Base positions [K, Ho, Wo] (exact small integers in the compute type).
  const at::Tensor base_h =
      (at::arange(kh, opts) * static_cast<double>(d0)).view({kh, 1, 1, 1}) +
      (at::arange(s.ho, opts) * static_cast<double>(s0) - static_cast<double>(p0))
          .view({1, 1, s.ho, 1});
  const at::Tensor base_w =
      (at::arange(kw, opts) * static_cast<double>(d1)).view({1, kw, 1, 1}) +
      (at::arange(s.wo, opts) * static_cast<double>(s1) - static_cast<double>(p1))
          .view({1, 1, 1, s.wo});
  const at::Tensor bh = base_h.expand({kh, kw, s.ho, s.wo}).reshape({s.k, s.ho, s.wo});
  const at::Tensor bw = base_w.expand({kh, kw, s.ho, s.wo}).reshape({s.k, s.ho, s.wo});

  const at::Tensor off = offset.reshape({s.n, groups, s.k, 2, s.ho, s.wo});
  const at::Tensor ph = (off.select(3, 0) + bh).reshape({s.n, groups, 1, kl});
  const at::Tensor pw = (off.select(3, 1) + bw).reshape({s.n, groups, 1, kl});

  const auto hf = static_cast<double>(s.h), wf = static_cast<double>(s.w);
  // Written as "not outside" so that a NaN coordinate propagates NaN, as in burn-flex.
  s.inside = ((ph <= -1) | (ph >= hf) | (pw <= -1) | (pw >= wf)).logical_not();
  const at::Tensor zero = at::zeros({}, opts);
  const at::Tensor y = at::where(s.inside, ph, zero);
  const at::Tensor xx = at::where(s.inside, pw, zero);
  const at::Tensor y0 = at::floor(y), x0 = at::floor(xx);
  s.lh = y - y0;
  s.lw = xx - x0;
  s.hh = 1 - s.lh;
  s.hw = 1 - s.lw;
  const at::Tensor iy0 = at::nan_to_num(y0, 0.0, 0.0, 0.0).to(at::kLong);
  const at::Tensor ix0 = at::nan_to_num(x0, 0.0, 0.0, 0.0).to(at::kLong);
  const at::Tensor iy1 = iy0 + 1, ix1 = ix0 + 1;
  const std::array<std::pair<const at::Tensor*, const at::Tensor*>, 4> corners = {
      {{&iy0, &ix0}, {&iy0, &ix1}, {&iy1, &ix0}, {&iy1, &ix1}}};
  const std::array<at::Tensor, 4> weights = {s.hh * s.hw, s.hh * s.lw, s.lh * s.hw, s.lh * s.lw};

  const bool has_pixels = s.h > 0 && s.w > 0;
  const at::Tensor xg = x.reshape({s.n, groups, s.cg, s.h * s.w});
  s.sampled = at::zeros({s.n, groups, s.cg, kl}, opts);
  for (std::size_t i = 0; i < 4; ++i) {
    const at::Tensor& cy = *corners[i].first;
    const at::Tensor& cx = *corners[i].second;
    s.valid[i] = s.inside & (cy >= 0) & (cy < s.h) & (cx >= 0) & (cx < s.w);
    s.coef[i] = at::where(s.inside, weights[i], zero);
    at::Tensor value;
    if (has_pixels) {
      const at::Tensor flat = cy.clamp(0, s.h - 1) * s.w + cx.clamp(0, s.w - 1);
      s.index[i] = flat.expand({s.n, groups, s.cg, kl});
      value = at::where(s.valid[i], at::gather(xg, 3, s.index[i]), zero);
    } else {
      value = at::zeros({s.n, groups, s.cg, kl}, opts);
    }
    s.sampled = s.sampled + s.coef[i] * value;
    if (keep_values) s.value[i] = std::move(value);
  }
  return s;
}

struct DeformShapes {
  std::int64_t c_out, cw, kh, kw, weight_groups, offset_groups;
};

Result<DeformShapes> deform_shapes(const OpContext& ctx, const at::Tensor& x,
                                   const at::Tensor& offset, const at::Tensor& weight,
                                   const ir::DeformableConv2dOptionsIr& o) {
  if (x.dim() != 4 || offset.dim() != 4 || weight.dim() != 4)
    return ctx.invalid("deform_conv2d expects rank-4 x, offset and weight");
  DeformShapes d{weight.size(0),
                 weight.size(1),
                 weight.size(2),
                 weight.size(3),
                 static_cast<std::int64_t>(o.weight_groups),
                 static_cast<std::int64_t>(o.offset_groups)};
  const std::int64_t c = x.size(1);
  if (d.weight_groups <= 0 || d.offset_groups <= 0 || c % d.offset_groups != 0 ||
      d.cw * d.weight_groups != c || d.c_out % d.weight_groups != 0) {
    return ctx.invalid(
        "deform_conv2d: {} input channels do not fit weight {} with weight_groups {} and "
        "offset_groups {}",
        c, shape_string(weight.sizes()), d.weight_groups, d.offset_groups);
  }
  if (offset.size(1) != 2 * d.offset_groups * d.kh * d.kw || offset.size(0) != x.size(0)) {
    return ctx.invalid("deform_conv2d: offset {} does not fit {} offset groups of {}x{} taps",
                       shape_string(offset.sizes()), d.offset_groups, d.kh, d.kw);
  }
  return d;
}

// [N, G, 1, K·L] view of the modulation mask.
at::Tensor mask_view(const at::Tensor& mask, const DeformSampling& s) {
  return mask.reshape({s.n, s.groups, 1, s.k * s.ho * s.wo});
}

// Columns [N, Gw, Cw·K, L] from samples [N, G, Cg, K·L] (channel-major, then tap).
at::Tensor columns(const at::Tensor& samples, const DeformSampling& s, std::int64_t wg) {
  return samples.reshape({s.n, wg, (s.c / wg) * s.k, s.ho * s.wo});
}

Status lower_deform_conv2d(OpContext& ctx, const ir::DeformConv2dOpIr& op) {
  const at::Tensor& x0 = ctx.in(op.x);
  const at::Tensor& offset0 = ctx.in(op.offset);
  const at::Tensor& weight0 = ctx.in(op.weight);
  const auto mask0 = ctx.in(op.mask);
  const auto bias0 = ctx.in(op.bias);
  const auto type =
      compute_type({&x0, &offset0, &weight0, mask0 ? &*mask0 : nullptr, bias0 ? &*bias0 : nullptr},
                   ctx.device(), /*widen_half=*/true);
  const at::Tensor x = as_type(x0, type), offset = as_type(offset0, type),
                   weight = as_type(weight0, type);
  TB_TRY_ASSIGN(const DeformShapes d, deform_shapes(ctx, x, offset, weight, op.options));

  const DeformSampling s = deform_sample(x, offset, d.kh, d.kw, d.offset_groups, op.options,
                                         /*keep_values=*/false);
  at::Tensor val = s.sampled;
  if (mask0) val = val * mask_view(as_type(*mask0, type), s);
  const at::Tensor cols = columns(val, s, d.weight_groups);
  const at::Tensor w = weight.reshape({1, d.weight_groups, d.c_out / d.weight_groups, d.cw * s.k});
  at::Tensor out = at::matmul(w, cols).reshape({s.n, d.c_out, s.ho, s.wo});
  if (bias0) out = out + bias_view(as_type(*bias0, type), 4);
  return ctx.out(op.out, out);
}

Status lower_deform_conv2d_backward(OpContext& ctx, const ir::DeformConv2dBackwardOpIr& op) {
  if (op.mask.has_value() != op.mask_grad.has_value() ||
      op.bias.has_value() != op.bias_grad.has_value()) {
    return ctx.invalid(
        "deform_conv2d_backward: mask_grad/bias_grad must be declared iff "
        "mask/bias are given");
  }
  const at::Tensor& x0 = ctx.in(op.x);
  const at::Tensor& offset0 = ctx.in(op.offset);
  const at::Tensor& weight0 = ctx.in(op.weight);
  const at::Tensor& grad0 = ctx.in(op.out_grad);
  const auto mask0 = ctx.in(op.mask);
  const auto type = compute_type({&x0, &offset0, &weight0, &grad0, mask0 ? &*mask0 : nullptr},
                                 ctx.device(), /*widen_half=*/true);
  const at::Tensor x = as_type(x0, type), offset = as_type(offset0, type),
                   weight = as_type(weight0, type), out_grad = as_type(grad0, type);
  TB_TRY_ASSIGN(const DeformShapes d, deform_shapes(ctx, x, offset, weight, op.options));

  const DeformSampling s = deform_sample(x, offset, d.kh, d.kw, d.offset_groups, op.options,
                                         /*keep_values=*/true);
  const std::int64_t wg = d.weight_groups, cog = d.c_out / wg, l = s.ho * s.wo;
  const at::Tensor mask = mask0 ? mask_view(as_type(*mask0, type), s) : at::Tensor();
  const at::Tensor val = mask0 ? s.sampled * mask : s.sampled;
  const at::Tensor cols = columns(val, s, wg);                 // [N, Gw, Cw·K, L]
  const at::Tensor gy = out_grad.reshape({s.n, wg, cog, l});   // [N, Gw, Cog, L]
  const at::Tensor w = weight.reshape({wg, cog, d.cw * s.k});  // [Gw, Cog, Cw·K]

  // weight: Σ_n gy · colsᵀ
  const at::Tensor weight_grad =
      at::matmul(gy, cols.transpose(-1, -2)).sum(0).reshape(weight.sizes());
  // d out / d samples, back in sample layout [N, G, Cg, K·L]
  const at::Tensor grad_val =
      at::matmul(w.transpose(-1, -2).unsqueeze(0), gy).reshape({s.n, s.groups, s.cg, s.k * l});
  const at::Tensor grad_sampled = mask0 ? grad_val * mask : grad_val;

  // x: scatter each corner's share back to its pixel.
  at::Tensor x_grad = at::zeros({s.n, s.groups, s.cg, s.h * s.w}, x.options());
  const at::Tensor zero = at::zeros({}, x.options());
  if (s.h > 0 && s.w > 0) {
    for (std::size_t i = 0; i < 4; ++i) {
      const at::Tensor src = at::where(s.valid[i], grad_sampled * s.coef[i], zero);
      x_grad = at::scatter_add(x_grad, 3, s.index[i], src);
    }
  }
  x_grad = x_grad.reshape(x.sizes());

  // offset: derivative of the bilinear interpolation w.r.t. the sampling coordinates.
  const auto& v = s.value;
  const at::Tensor dy = s.hw * (v[2] - v[0]) + s.lw * (v[3] - v[1]);
  const at::Tensor dx = s.hh * (v[1] - v[0]) + s.lh * (v[3] - v[2]);
  const at::Tensor gh = at::where(s.inside, (grad_sampled * dy).sum(2, true), zero);
  const at::Tensor gw = at::where(s.inside, (grad_sampled * dx).sum(2, true), zero);
  const at::Tensor offset_grad =
      at::stack({gh.reshape({s.n, s.groups, s.k, l}), gw.reshape({s.n, s.groups, s.k, l})}, 3)
          .reshape(offset.sizes());

  TB_TRY(ctx.out(op.input_grad, x_grad));
  TB_TRY(ctx.out(op.offset_grad, offset_grad));
  TB_TRY(ctx.out(op.weight_grad, weight_grad));
  if (op.mask_grad) {
    const at::Tensor mask_grad = (grad_val * s.sampled).sum(2).reshape(mask0->sizes());
    TB_TRY(ctx.out(*op.mask_grad, mask_grad));
  }
  if (op.bias_grad) TB_TRY(ctx.out(*op.bias_grad, bias_backward(out_grad)));
  return ok();
}

// ---------------------------------------------------------------------------------------------
// Lowerings.

template <class Op>
Status lower_conv(OpContext& ctx, const Op& op) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const auto bias = ctx.in(op.bias);
  const auto type = compute_type({&x, &weight, bias ? &*bias : nullptr}, ctx.device());
  return ctx.out(op.out, conv_forward(as_type(x, type), as_type(weight, type), as_type(bias, type),
                                      params_of(op.options)));
}

template <class Op>
Status lower_conv_backward(OpContext& ctx, const Op& op, int which) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const at::Tensor& grad = ctx.in(op.output_grad);
  const auto type = compute_type({&x, &weight, &grad}, ctx.device());
  return ctx.out(op.out, conv_backward(as_type(x, type), as_type(weight, type), as_type(grad, type),
                                       params_of(op.options), which));
}

template <class Op>
Status lower_bias_backward(OpContext& ctx, const Op& op) {
  return ctx.out(op.out, bias_backward(ctx.in(op.output_grad)).reshape(ctx.in(op.bias).sizes()));
}

template <class Op>
Status lower_conv_transpose(OpContext& ctx, const Op& op) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const auto bias = ctx.in(op.bias);
  const auto type = compute_type({&x, &weight, bias ? &*bias : nullptr}, ctx.device());
  return ctx.out(
      op.out, conv_transpose_forward(as_type(x, type), as_type(weight, type), as_type(bias, type),
                                     transpose_params_of(op.options)));
}

template <class Op>
Status lower_conv_transpose_weight_backward(OpContext& ctx, const Op& op) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const at::Tensor& grad = ctx.in(op.output_grad);
  const auto type = compute_type({&x, &weight, &grad}, ctx.device());
  return ctx.out(
      op.out, conv_transpose_weight_backward(as_type(x, type), as_type(weight, type),
                                             as_type(grad, type), transpose_params_of(op.options)));
}

}  // namespace

Status lower_Module_Conv1d(OpContext& ctx, const ir::Conv1dOpIr& op) {
  return lower_conv(ctx, op);
}

Status lower_Module_Conv1dXBackward(OpContext& ctx, const ir::Conv1dXBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 0);
}

Status lower_Module_Conv1dWeightBackward(OpContext& ctx, const ir::Conv1dWeightBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 1);
}

Status lower_Module_Conv1dBiasBackward(OpContext& ctx, const ir::Conv1dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_Conv2d(OpContext& ctx, const ir::Conv2dOpIr& op) {
  return lower_conv(ctx, op);
}

Status lower_Module_Conv2dXBackward(OpContext& ctx, const ir::Conv2dXBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 0);
}

Status lower_Module_Conv2dWeightBackward(OpContext& ctx, const ir::Conv2dWeightBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 1);
}

Status lower_Module_Conv2dBiasBackward(OpContext& ctx, const ir::Conv2dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_Conv3d(OpContext& ctx, const ir::Conv3dOpIr& op) {
  return lower_conv(ctx, op);
}

Status lower_Module_Conv3dXBackward(OpContext& ctx, const ir::Conv3dXBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 0);
}

Status lower_Module_Conv3dWeightBackward(OpContext& ctx, const ir::Conv3dWeightBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 1);
}

Status lower_Module_Conv3dBiasBackward(OpContext& ctx, const ir::Conv3dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_DeformableConv2d(OpContext& ctx, const ir::DeformConv2dOpIr& op) {
  return lower_deform_conv2d(ctx, op);
}

Status lower_Module_DeformableConv2dBackward(OpContext& ctx,
                                             const ir::DeformConv2dBackwardOpIr& op) {
  return lower_deform_conv2d_backward(ctx, op);
}

Status lower_Module_ConvTranspose1d(OpContext& ctx, const ir::ConvTranspose1dOpIr& op) {
  return lower_conv_transpose(ctx, op);
}

Status lower_Module_ConvTranspose2d(OpContext& ctx, const ir::ConvTranspose2dOpIr& op) {
  return lower_conv_transpose(ctx, op);
}

Status lower_Module_ConvTranspose3d(OpContext& ctx, const ir::ConvTranspose3dOpIr& op) {
  return lower_conv_transpose(ctx, op);
}

Status lower_Module_ConvTranspose1dWeightBackward(OpContext& ctx,
                                                  const ir::ConvTranspose1dWeightBackwardOpIr& op) {
  return lower_conv_transpose_weight_backward(ctx, op);
}

Status lower_Module_ConvTranspose1dBiasBackward(OpContext& ctx,
                                                const ir::ConvTranspose1dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_ConvTranspose2dWeightBackward(OpContext& ctx,
                                                  const ir::ConvTranspose2dWeightBackwardOpIr& op) {
  return lower_conv_transpose_weight_backward(ctx, op);
}

Status lower_Module_ConvTranspose2dBiasBackward(OpContext& ctx,
                                                const ir::ConvTranspose2dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_ConvTranspose3dWeightBackward(OpContext& ctx,
                                                  const ir::ConvTranspose3dWeightBackwardOpIr& op) {
  return lower_conv_transpose_weight_backward(ctx, op);
}

Status lower_Module_ConvTranspose3dBiasBackward(OpContext& ctx,
                                                const ir::ConvTranspose3dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

}  // namespace tb::backend::libtorch
