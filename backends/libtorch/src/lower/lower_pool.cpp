// ModuleOperationIr adaptive pooling: AdaptiveAvgPool{1,2,3}d and their backward ops, with Burn's
// semantics (split from lower_module.cpp). The avg and max pools are rows of the pool families
// (pool_family.hpp).

#include <ATen/ATen.h>

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"
#include "lower/pool_util.hpp"

namespace tb::backend::libtorch {

namespace {

using at::Tensor;

// Adaptive average pooling: the windows [floor(o * in / out), ceil((o + 1) * in / out)) of
// PyTorch and Burn.
Tensor adaptive_avg_pool(const Tensor& x_in, const Sizes& out_spatial) {
  const auto x = cpu_wide(x_in);
  Sizes out_shape(x.sizes().begin(), x.sizes().begin() + 2);
  out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
  if (x.numel() == 0 || numel(out_shape) == 0) return at::zeros(out_shape, x.options());
  return out_spatial.size() == 2 ? at::adaptive_avg_pool2d(x, out_spatial)
                                 : at::adaptive_avg_pool3d(x, out_spatial);
}

Tensor adaptive_avg_pool_backward(const Tensor& x, const Tensor& grad_in) {
  const auto grad = cpu_wide(grad_in);
  if (x.numel() == 0 || grad.numel() == 0) return at::zeros(x.sizes(), grad.options());
  const auto xs = same_type(x, grad);
  return x.dim() == 4 ? at::_adaptive_avg_pool2d_backward(grad, xs)
                      : at::_adaptive_avg_pool3d_backward(grad, xs);
}

}  // namespace

Status lower_Module_AdaptiveAvgPool1d(OpContext& ctx, const ir::AdaptiveAvgPool1dOpIr& op) {
  TB_TRY_ASSIGN(auto x, pool::as_pool_input(ctx, ctx.in(op.x), 3));
  const auto y = adaptive_avg_pool(x, {static_cast<std::int64_t>(op.output_size), 1});
  return ctx.out(op.out, y.squeeze(3));
}

Status lower_Module_AdaptiveAvgPool2d(OpContext& ctx, const ir::AdaptiveAvgPool2dOpIr& op) {
  TB_TRY_ASSIGN(auto x, pool::as_pool_input(ctx, ctx.in(op.x), 4));
  return ctx.out(op.out, adaptive_avg_pool(x, {static_cast<std::int64_t>(op.output_size[0]),
                                               static_cast<std::int64_t>(op.output_size[1])}));
}

Status lower_Module_AdaptiveAvgPool3d(OpContext& ctx, const ir::AdaptiveAvgPool3dOpIr& op) {
  const auto& x = ctx.in(op.x);
  if (x.dim() != 5) return (ctx.invalid("adaptive_avg_pool3d needs rank 5, got {}", x.dim()));
  return ctx.out(op.out, adaptive_avg_pool(x, {static_cast<std::int64_t>(op.output_size[0]),
                                               static_cast<std::int64_t>(op.output_size[1]),
                                               static_cast<std::int64_t>(op.output_size[2])}));
}

Status lower_Module_AdaptiveAvgPool1dBackward(OpContext& ctx,
                                              const ir::AdaptiveAvgPool1dBackwardOpIr& op) {
  TB_TRY_ASSIGN(auto x, pool::as_pool_input(ctx, ctx.in(op.x), 3));
  TB_TRY_ASSIGN(auto grad, pool::as_pool_input(ctx, ctx.in(op.grad), 3));
  return ctx.out(op.out, adaptive_avg_pool_backward(x, grad).squeeze(3));
}

Status lower_Module_AdaptiveAvgPool2dBackward(OpContext& ctx,
                                              const ir::AdaptiveAvgPool2dBackwardOpIr& op) {
  TB_TRY_ASSIGN(auto x, pool::as_pool_input(ctx, ctx.in(op.x), 4));
  TB_TRY_ASSIGN(auto grad, pool::as_pool_input(ctx, ctx.in(op.grad), 4));
  return ctx.out(op.out, adaptive_avg_pool_backward(x, grad));
}

Status lower_Module_AdaptiveAvgPool3dBackward(OpContext& ctx,
                                              const ir::AdaptiveAvgPool3dBackwardOpIr& op) {
  const auto& x = ctx.in(op.x);
  const auto& grad = ctx.in(op.grad);
  if (x.dim() != 5 || grad.dim() != 5) {
    return (ctx.invalid("adaptive_avg_pool3d_backward needs rank 5"));
  }
  return ctx.out(op.out, adaptive_avg_pool_backward(x, grad));
}

}  // namespace tb::backend::libtorch
