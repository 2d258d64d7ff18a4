// ModuleOperationIr interpolation: Interpolate and InterpolateBackward with Burn 0.23's options
// (mode, coordinate_transform, nearest_mode, cubic_options, scale_factor), matching Burn 0.23's
// reference backend burn-flex 0.23.0-pre.1 (src/ops/interpolate.rs, cited as flex:LINE; the
// dispatch is src/ops/module.rs:760-870). A 0.22.1 client's (mode, align_corners) arrives already
// mapped onto these fields (ir::complete_interpolate_options), so it reads only them.
//
// Every mode is a separable resampling (interpolate_taps.hpp): per axis, a coordinate map and the
// mode's tap weights; the backward pass is the exact adjoint of the forward's linear part (the
// extrapolated outputs of TfCropAndResize are constants and pass no gradient).
#include <cmath>
#include <optional>

#include <ATen/ATen.h>

#include "lower/interpolate_taps.hpp"
#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"

namespace tb::backend::libtorch {

namespace {

using at::Tensor;
using Mode = ir::InterpolateModeIr;
using Kind = ir::CoordinateTransformKind;

// What flex (and Burn's interpolate) refuses, before any output is computed:
// - a rank other than 4, or a non-float input (module.rs:814-817 panics on other dtypes);
// - an empty input plane (flex:326-329, 1123-1126 assert it even when the output is empty);
// - a scale factor that is not finite and > 0 (burn-tensor 0.23.0-pre.1 src/tensor/module.rs:
//   1108-1126, interpolate_output_size, the only producer of one, panics on it);
// - a NaN TfCropAndResize ROI on an axis that has outputs (flex:254-259 asserts while mapping,
//   which flex does for every output coordinate whatever the batch size).
Status check_interpolate(OpContext& ctx, const Tensor& x, const ir::InterpolateOptionsIr& o,
                         const ir::Usizes<2>& output_size) {
  if (x.dim() != 4)
    return ctx.invalid("interpolate needs an input [N, C, H, W], got rank {}", x.dim());
  if (!at::isFloatingType(x.scalar_type()))
    return ctx.invalid("interpolate: unsupported input dtype {}", c10::toString(x.scalar_type()));
  if (x.size(2) == 0 || x.size(3) == 0)
    return ctx.invalid("interpolate: input spatial dimensions must be > 0, got {}x{}", x.size(2),
                       x.size(3));
  if (o.scale_factor) {
    for (float s : *o.scale_factor)
      if (!(s > 0.0f) || !std::isfinite(s))
        return ctx.invalid("interpolate: scale factor {} must be finite and strictly positive",
                           static_cast<double>(s));
  }
  if (o.coordinate_transform.kind == Kind::TfCropAndResize) {
    for (int axis = 0; axis < 2; ++axis) {
      const auto& roi = o.coordinate_transform.roi[static_cast<std::size_t>(axis)];
      if (output_size[axis] > 0 && (std::isnan(roi[0]) || std::isnan(roi[1])))
        return ctx.invalid(
            "interpolate: TfCropAndResize ROI coordinates must not be NaN, got [{}, {}] on the {} "
            "axis",
            static_cast<double>(roi[0]), static_cast<double>(roi[1]),
            axis == 0 ? "height" : "width");
    }
  }
  return ok();
}

interp::Axis make_axis(const ir::InterpolateOptionsIr& o, int axis, std::int64_t in,
                       std::int64_t out) {
  interp::Axis a;
  a.in = in;
  a.out = out;
  if (o.scale_factor)
    a.scale = static_cast<double>((*o.scale_factor)[static_cast<std::size_t>(axis)]);
  a.transform = o.coordinate_transform;
  a.axis = axis;
  return a;
}

// The taps of one axis for the mode; flex sends Nearest and NearestExact to the same kernel,
// told apart only by their transform and rounding (module.rs:766-777).
interp::Taps axis_taps(const ir::InterpolateOptionsIr& o, int axis, std::int64_t in,
                       std::int64_t out) {
  const auto a = make_axis(o, axis, in, out);
  switch (o.mode) {
    case Mode::Nearest:
    case Mode::NearestExact:
      return interp::nearest_taps(a, o.nearest_mode);
    case Mode::Bilinear:
      return interp::bilinear_taps(a);
    case Mode::Bicubic:
      return interp::bicubic_taps(a, o.cubic_options);
    case Mode::Lanczos3:
      return interp::lanczos3_taps(a);
  }
  return interp::nearest_taps(a, o.nearest_mode);
}

// ATen's bilinear kernels equal flex's bilinear (flex:458-478, 556-559: the same clamped low/high
// taps and the same four-term sum) for the two transforms ATen has: AlignCorners (which ignores
// the scale factor, flex:214-221) and HalfPixel from the sizes alone (flex:210). Nothing else
// takes a fast path: ATen's bicubic sums zero-weight taps that flex skips (flex:781-787), so an
// infinite input would differ.
bool aten_bilinear(const ir::InterpolateOptionsIr& o) {
  if (o.mode != Mode::Bilinear) return false;
  return o.coordinate_transform.kind == Kind::AlignCorners ||
         (o.coordinate_transform.kind == Kind::HalfPixel && !o.scale_factor);
}

}  // namespace

Status lower_Module_Interpolate(OpContext& ctx, const ir::InterpolateOpIr& op) {
  const auto& x_in = ctx.in(op.x);
  const auto& o = op.options;
  TB_TRY(check_interpolate(ctx, x_in, o, op.output_size));
  // op.output_size is the resolved size (Burn's interpolate_output_size); o.output_size is only
  // what the caller asked for, and flex never reads it.
  const auto oh = static_cast<std::int64_t>(op.output_size[0]);
  const auto ow = static_cast<std::int64_t>(op.output_size[1]);
  const auto n = x_in.size(0), c = x_in.size(1), h = x_in.size(2), w = x_in.size(3);
  TB_TRY(ctx.declared_as(op.out, {n, c, oh, ow}));
  if (n * c * oh * ow == 0) return ctx.out(op.out, at::zeros({n, c, oh, ow}, x_in.options()));
  if (aten_bilinear(o)) {
    const bool ac = o.coordinate_transform.kind == Kind::AlignCorners;
    return ctx.out(op.out, at::upsample_bilinear2d(cpu_wide(x_in), {oh, ow}, ac, {}, {}));
  }
  // Nearest gathers in the input's own type (flex:356-385); the others compute in f32 at least.
  const bool nearest = o.mode == Mode::Nearest || o.mode == Mode::NearestExact;
  const auto x = nearest ? x_in : widen(x_in);
  const auto ty = axis_taps(o, 0, h, oh), tx = axis_taps(o, 1, w, ow);
  auto y = interp::apply_taps(interp::apply_taps(x, 2, ty), 3, tx);
  if (o.mode == Mode::Lanczos3) y = y / interp::lanczos_norm(ty, tx, y);
  y = interp::extrapolate(y, ty, tx,
                          static_cast<double>(o.coordinate_transform.extrapolation_value));
  return ctx.out(op.out, y);
}

// flex has no Lanczos3 backward (module.rs:821-870 panics "unsupported mode"), but Burn 0.23's
// CubeCL backends have one (burn-cubecl 0.23.0-pre.1 src/kernel/interpolate/base.rs:147) and
// 0.22.1 clients rely on it: it is the adjoint of flex's Lanczos3 forward, like every mode here.
Status lower_Module_InterpolateBackward(OpContext& ctx, const ir::InterpolateBackwardOpIr& op) {
  const auto& x = ctx.in(op.x);
  const auto& o = op.options;
  TB_TRY(check_interpolate(ctx, x, o, op.output_size));
  const auto grad = widen(ctx.in(op.grad));
  const auto oh = static_cast<std::int64_t>(op.output_size[0]);
  const auto ow = static_cast<std::int64_t>(op.output_size[1]);
  const auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (grad.dim() != 4 || grad.size(0) != n || grad.size(1) != c || grad.size(2) != oh ||
      grad.size(3) != ow) {
    return ctx.invalid("interpolate_backward: grad {} does not match the output [{}, {}, {}, {}]",
                       shape_string(grad.sizes()), n, c, oh, ow);
  }
  if (grad.numel() == 0 || n * c == 0) return ctx.out(op.out, at::zeros(x.sizes(), grad.options()));
  if (aten_bilinear(o)) {
    const bool ac = o.coordinate_transform.kind == Kind::AlignCorners;
    return ctx.out(op.out,
                   at::upsample_bilinear2d_backward(grad, {oh, ow}, {n, c, h, w}, ac, {}, {}));
  }
  const auto ty = axis_taps(o, 0, h, oh), tx = axis_taps(o, 1, w, ow);
  auto g = interp::drop_extrapolated(grad, ty, tx);
  if (o.mode == Mode::Lanczos3) g = g / interp::lanczos_norm(ty, tx, g);
  return ctx.out(op.out, interp::apply_taps_adjoint(interp::apply_taps_adjoint(g, 3, tx), 2, ty));
}

}  // namespace tb::backend::libtorch
