// ModuleOperationIr interpolation: Interpolate and InterpolateBackward (nearest, nearest-exact,
// bilinear, bicubic, Lanczos3), with Burn 0.22.1's semantics (split from lower_module.cpp).
#include <algorithm>
#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "lower_families.hpp"
#include "module_util.hpp"

namespace tb::backend::libtorch {

namespace {

using at::Tensor;

constexpr double kPi = 3.14159265358979323846;

// ---------------------------------------------------------------------------------------------
// Interpolate
//
// Conventions kept from Burn, where PyTorch differs:
// - Interpolate Nearest maps dst -> min(floor(dst * (in / out)), in - 1) in f64 (burn-flex);
//   NearestExact dst -> min(((2 dst + 1) in) / (2 out), in - 1) (cubek, the only Burn backend
//   implementing it); Lanczos3 (not in ATen) is a separable 6-tap sinc window that skips taps
//   outside the input and renormalises. Backward passes are the exact adjoints of the forwards.

// One axis of a separable resampling: out[o] = sum_j weight[o][j] * in[index[o][j]] over the
// valid taps (an invalid tap contributes nothing, not even 0 * inf).
struct Taps {
  std::int64_t out = 0, per = 0;  // output size, taps per output
  std::vector<std::int64_t> index;
  std::vector<double> weight;
  std::vector<std::uint8_t> valid;
  std::vector<double> weight_sum;  // sum over the valid taps of each output
  bool unit = true;                // one valid tap of weight 1 per output
};

Taps nearest_taps(std::int64_t in, std::int64_t out, bool exact) {
  Taps t;
  t.out = out;
  t.per = 1;
  const double ratio = static_cast<double>(in) / static_cast<double>(out);
  for (std::int64_t o = 0; o < out; ++o) {
    const std::int64_t src =
        exact ? ((2 * o + 1) * in) / (2 * out)
              : static_cast<std::int64_t>(std::floor(static_cast<double>(o) * ratio));
    t.index.push_back(std::min(src, in - 1));
    t.weight.push_back(1.0);
    t.valid.push_back(1);
    t.weight_sum.push_back(1.0);
  }
  return t;
}

double lanczos3(double x) {
  if (x == 0.0) return 1.0;
  if (std::abs(x) >= 3.0) return 0.0;
  const double pi_x = kPi * x;
  const double pi_x3 = pi_x / 3.0;
  return std::sin(pi_x) * std::sin(pi_x3) / (pi_x * pi_x3);
}

// burn-flex's coordinate mapping.
double map_coord(std::int64_t o, std::int64_t in, std::int64_t out, bool align_corners) {
  if (align_corners) {
    const double ratio =
        (static_cast<double>(in) - 1.0) / static_cast<double>(std::max<std::int64_t>(out - 1, 1));
    return static_cast<double>(o) * ratio;
  }
  const double ratio = static_cast<double>(in) / static_cast<double>(out);
  return (static_cast<double>(o) + 0.5) * ratio - 0.5;
}

Taps lanczos3_taps(std::int64_t in, std::int64_t out, bool align_corners) {
  Taps t;
  t.out = out;
  t.per = 6;
  t.unit = false;
  for (std::int64_t o = 0; o < out; ++o) {
    const double coord = map_coord(o, in, out, align_corners);
    const double base = std::floor(coord);
    double sum = 0;
    for (std::int64_t off = -2; off <= 3; ++off) {
      const auto index = static_cast<std::int64_t>(base) + off;
      const bool ok = index >= 0 && index < in;
      const double wgt = ok ? lanczos3(coord - (base + static_cast<double>(off))) : 0.0;
      t.index.push_back(ok ? index : 0);
      t.weight.push_back(wgt);
      t.valid.push_back(ok ? 1 : 0);
      sum += wgt;
    }
    t.weight_sum.push_back(sum);
  }
  return t;
}

// x resampled along `dim` (size in -> t.out).
Tensor apply_taps(const Tensor& x, std::int64_t dim, const Taps& t) {
  const auto index = long_tensor(t.index, x.device());
  if (t.unit) return x.index_select(dim, index);
  Sizes split(x.sizes().begin(), x.sizes().end());
  split[dim] = t.out;
  split.insert(split.begin() + dim + 1, t.per);
  Sizes wshape{t.out, t.per};
  for (std::int64_t i = dim + 1; i < x.dim(); ++i) wshape.push_back(1);
  const auto weight =
      at::tensor(t.weight, at::kDouble).to(x.device(), x.scalar_type()).view(wshape);
  const auto valid =
      at::tensor(std::vector<std::int64_t>(t.valid.begin(), t.valid.end()), at::kLong)
          .to(x.device())
          .ne(0)
          .view(wshape);
  const auto gathered = x.index_select(dim, index).view(split);
  return (at::where(valid, gathered, at::zeros({}, x.options())) * weight).sum(dim + 1);
}

// The adjoint of apply_taps: g (size t.out along dim) -> size `in` along dim.
Tensor apply_taps_adjoint(const Tensor& g, std::int64_t dim, const Taps& t, std::int64_t in) {
  Sizes shape(g.sizes().begin(), g.sizes().end());
  shape[dim] = in;
  auto result = at::zeros(shape, g.options());
  const auto index = long_tensor(t.index, g.device());
  if (t.unit) return result.index_add(dim, index, g);
  Sizes wshape{t.out, t.per};
  for (std::int64_t i = dim + 1; i < g.dim(); ++i) wshape.push_back(1);
  std::vector<double> w = t.weight;  // invalid taps already weigh 0
  const auto weight = at::tensor(w, at::kDouble).to(g.device(), g.scalar_type()).view(wshape);
  Sizes flat(g.sizes().begin(), g.sizes().end());
  flat[dim] = t.out * t.per;
  const auto spread = (g.unsqueeze(dim + 1) * weight).reshape(flat);
  return result.index_add(dim, index, spread);
}

// Lanczos3 renormalisation: the product of the two axes' weight sums where nonzero.
Tensor lanczos_norm(const Taps& ty, const Taps& tx, const Tensor& like) {
  const auto opts = at::TensorOptions().dtype(at::kDouble);
  auto d = at::tensor(ty.weight_sum, opts).view({ty.out, 1}) *
           at::tensor(tx.weight_sum, opts).view({1, tx.out});
  d = at::where(d != 0, d, at::ones({}, opts));
  return d.to(like.device(), like.scalar_type());
}

using Mode = ir::InterpolateModeIr;

Status check_interpolate(OpContext& ctx, const Tensor& x) {
  if (x.dim() != 4)
    return ctx.invalid("interpolate needs an input [N, C, H, W], got rank {}", x.dim());
  return ok();
}

}  // namespace

Status lower_Module_Interpolate(OpContext& ctx, const ir::InterpolateOpIr& op) {
  const auto& x_in = ctx.in(op.x);
  TB_TRY(check_interpolate(ctx, x_in));
  const auto oh = static_cast<std::int64_t>(op.output_size[0]);
  const auto ow = static_cast<std::int64_t>(op.output_size[1]);
  const auto n = x_in.size(0), c = x_in.size(1), h = x_in.size(2), w = x_in.size(3);
  if (n * c * oh * ow == 0) return ctx.out(op.out, at::zeros({n, c, oh, ow}, x_in.options()));
  if (h * w == 0) return ctx.invalid("interpolate: input spatial dimensions must be > 0");
  const bool ac = op.options.align_corners;
  switch (op.options.mode) {
    case Mode::Nearest:
    case Mode::NearestExact: {
      const bool exact = op.options.mode == Mode::NearestExact;
      const auto y = apply_taps(apply_taps(x_in, 2, nearest_taps(h, oh, exact)), 3,
                                nearest_taps(w, ow, exact));
      return ctx.out(op.out, y);
    }
    case Mode::Bilinear:
      return ctx.out(op.out, at::upsample_bilinear2d(cpu_wide(x_in), {oh, ow}, ac, {}, {}));
    case Mode::Bicubic:
      return ctx.out(op.out, at::upsample_bicubic2d(cpu_wide(x_in), {oh, ow}, ac, {}, {}));
    case Mode::Lanczos3: {
      const auto x = widen(x_in);
      const auto ty = lanczos3_taps(h, oh, ac), tx = lanczos3_taps(w, ow, ac);
      const auto y = apply_taps(apply_taps(x, 2, ty), 3, tx);
      return ctx.out(op.out, y / lanczos_norm(ty, tx, y));
    }
  }
  return ctx.invalid("unknown interpolate mode");
}

Status lower_Module_InterpolateBackward(OpContext& ctx, const ir::InterpolateBackwardOpIr& op) {
  const auto& x = ctx.in(op.x);
  TB_TRY(check_interpolate(ctx, x));
  const auto grad = widen(ctx.in(op.grad));
  const auto oh = static_cast<std::int64_t>(op.output_size[0]);
  const auto ow = static_cast<std::int64_t>(op.output_size[1]);
  const auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (grad.dim() != 4 || grad.size(2) != oh || grad.size(3) != ow) {
    return ctx.invalid("interpolate_backward: grad {} does not match output size [{}, {}]",
                       shape_string(grad.sizes()), oh, ow);
  }
  if (n * c * h * w == 0 || grad.numel() == 0)
    return ctx.out(op.out, at::zeros(x.sizes(), grad.options()));
  const bool ac = op.options.align_corners;
  switch (op.options.mode) {
    case Mode::Nearest:
    case Mode::NearestExact: {
      const bool exact = op.options.mode == Mode::NearestExact;
      const auto gx = apply_taps_adjoint(apply_taps_adjoint(grad, 3, nearest_taps(w, ow, exact), w),
                                         2, nearest_taps(h, oh, exact), h);
      return ctx.out(op.out, gx);
    }
    case Mode::Bilinear:
      return ctx.out(op.out,
                     at::upsample_bilinear2d_backward(grad, {oh, ow}, {n, c, h, w}, ac, {}, {}));
    case Mode::Bicubic:
      return ctx.out(op.out,
                     at::upsample_bicubic2d_backward(grad, {oh, ow}, {n, c, h, w}, ac, {}, {}));
    case Mode::Lanczos3: {
      const auto ty = lanczos3_taps(h, oh, ac), tx = lanczos3_taps(w, ow, ac);
      const auto scaled = grad / lanczos_norm(ty, tx, grad);
      return ctx.out(op.out, apply_taps_adjoint(apply_taps_adjoint(scaled, 3, tx, w), 2, ty, h));
    }
  }
  return ctx.invalid("unknown interpolate mode");
}

}  // namespace tb::backend::libtorch
