// ModuleOperationIr pooling: {Avg,Max}Pool{1,2}d (max with indices), AdaptiveAvgPool{1,2,3}d and
// their backward ops, with Burn's semantics (split from lower_module.cpp); the avg pools' dilation
// is Burn 0.23's (1 for 0.22.1 clients). The 3-d avg and max pools are in lower_pool3d.cpp.

#include <ATen/ATen.h>

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"
#include "lower/pool_util.hpp"

namespace tb::backend::libtorch {

namespace {

using at::Tensor;

// Avg and max pools (pool_util.hpp); 1-d pools run as 2-d ones on [N, C, L, 1], as Burn's
// ModuleOps defaults do (burn-backend 0.23.0-pre.1 src/backend/ops/modules/pool.rs:7-181).
pool::Spec pool1d(std::uint64_t k, std::uint64_t s, std::uint64_t p, std::uint64_t d, bool ceil) {
  return pool::make_spec<2>({k, 1}, {s, 1}, {p, 0}, {d, 1}, ceil);
}
pool::Spec pool2d(const ir::Usizes<2>& k, const ir::Usizes<2>& s, const ir::Usizes<2>& p,
                  const ir::Usizes<2>& d, bool ceil) {
  return pool::make_spec<2>(k, s, p, d, ceil);
}

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

Status lower_Module_AvgPool1d(OpContext& ctx, const ir::AvgPool1dOpIr& op) {
  return pool::avg_pool_op(ctx, op.x,
                           pool1d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
                           op.count_include_pad, 3, op.out);
}

Status lower_Module_AvgPool2d(OpContext& ctx, const ir::AvgPool2dOpIr& op) {
  return pool::avg_pool_op(ctx, op.x,
                           pool2d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
                           op.count_include_pad, 4, op.out);
}

Status lower_Module_AvgPool1dBackward(OpContext& ctx, const ir::AvgPool1dBackwardOpIr& op) {
  return pool::avg_pool_backward_op(
      ctx, op.x, op.grad, pool1d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
      op.count_include_pad, 3, op.out);
}

Status lower_Module_AvgPool2dBackward(OpContext& ctx, const ir::AvgPool2dBackwardOpIr& op) {
  return pool::avg_pool_backward_op(
      ctx, op.x, op.grad, pool2d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
      op.count_include_pad, 4, op.out);
}

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

Status lower_Module_MaxPool1d(OpContext& ctx, const ir::MaxPool1dOpIr& op) {
  return pool::max_pool_op(ctx, op.x,
                           pool1d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
                           3, op.out, nullptr);
}

Status lower_Module_MaxPool1dWithIndices(OpContext& ctx, const ir::MaxPool1dWithIndicesOpIr& op) {
  return pool::max_pool_op(ctx, op.x,
                           pool1d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
                           3, op.out, &op.out_indices);
}

Status lower_Module_MaxPool1dWithIndicesBackward(OpContext& ctx,
                                                 const ir::MaxPool1dWithIndicesBackwardOpIr& op) {
  return pool::max_pool_backward_op(ctx, op.x, op.grad, op.indices, 3, op.out);
}

Status lower_Module_MaxPool2d(OpContext& ctx, const ir::MaxPool2dOpIr& op) {
  return pool::max_pool_op(ctx, op.x,
                           pool2d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
                           4, op.out, nullptr);
}

Status lower_Module_MaxPool2dWithIndices(OpContext& ctx, const ir::MaxPool2dWithIndicesOpIr& op) {
  return pool::max_pool_op(ctx, op.x,
                           pool2d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
                           4, op.out, &op.out_indices);
}

Status lower_Module_MaxPool2dWithIndicesBackward(OpContext& ctx,
                                                 const ir::MaxPool2dWithIndicesBackwardOpIr& op) {
  return pool::max_pool_backward_op(ctx, op.x, op.grad, op.indices, 4, op.out);
}

}  // namespace tb::backend::libtorch
