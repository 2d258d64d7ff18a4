// ModuleOperationIr deformable convolution: DeformableConv2d and its backward, which have no ATen
// kernel and are composed of ATen ops here (split from lower_conv.cpp).
#include <array>
#include <utility>

#include <ATen/ATen.h>

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"

namespace tb::backend::libtorch {

namespace {

// ---------------------------------------------------------------------------------------------
// Deformable convolution (burn-flex deform_conv.rs, composed of ATen ops).
//
// x [N, C, H, W]; offset [N, 2·G·kh·kw, Ho, Wo] holding (dy, dx) per kernel position, channel
// g·kh·kw·2 + k·2 + {0: y, 1: x}; mask [N, G·kh·kw, Ho, Wo], channel g·kh·kw + k; weight
// [C_out, C/weight_groups, kh, kw]; G = offset_groups, input channel c uses offset group c / (C/G).
// Sample point for output (oh, ow), kernel tap (i, j): (oh·s0 + i·d0 − p0 + dy, ow·s1 + j·d1 − p1
// + dx), bilinearly interpolated with zero outside the image; a point with y <= −1, y >= H,
// x <= −1 or x >= W samples 0 (and passes no gradient).
//
// - DeformableConv2d has no ATen kernel: it is composed here (bilinear sampling with gather,
//   modulation mask, grouped matmul) after burn-flex's deform_conv.rs, and its backward is the
//   analytic gradient of that composition (what burn-flex's backward kernel computes).
// - f16/bf16: the deformable convolution always runs in f32 for them (on every device, not only
//   on CPU like the other convolutions), as burn-flex does.

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

}  // namespace

Status lower_Module_DeformableConv2d(OpContext& ctx, const ir::DeformConv2dOpIr& op) {
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

Status lower_Module_DeformableConv2dBackward(OpContext& ctx,
                                             const ir::DeformConv2dBackwardOpIr& op) {
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

}  // namespace tb::backend::libtorch
