// ModuleOperationIr 3-d pools, new in Burn 0.23: AvgPool3d, MaxPool3d (with indices) and their
// backward ops, with the semantics of burn-flex 0.23.0-pre.1 src/ops/pool.rs (its native 3-d
// implementation, of which its 1-d and 2-d pools are special cases). The computations are those
// of the 1-d and 2-d pools (pool_util.hpp), on [N, C, D, H, W].
#include <ATen/ATen.h>

#include "lower/lower_families.hpp"
#include "lower/pool_util.hpp"

namespace tb::backend::libtorch {

namespace {

constexpr std::int64_t kRank = 5;

pool::Spec pool3d(const ir::Usizes<3>& k, const ir::Usizes<3>& s, const ir::Usizes<3>& p,
                  const ir::Usizes<3>& d, bool ceil) {
  return pool::make_spec<3>(k, s, p, d, ceil);
}

}  // namespace

Status lower_Module_AvgPool3d(OpContext& ctx, const ir::AvgPool3dOpIr& op) {
  return pool::avg_pool_op(ctx, op.x,
                           pool3d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
                           op.count_include_pad, kRank, op.out);
}

// burn-flex's avg_pool3d_backward ignores ceil_mode (module.rs:461): the windows are those of
// grad's sizes.
Status lower_Module_AvgPool3dBackward(OpContext& ctx, const ir::AvgPool3dBackwardOpIr& op) {
  return pool::avg_pool_backward_op(
      ctx, op.x, op.grad, pool3d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
      op.count_include_pad, kRank, op.out);
}

Status lower_Module_MaxPool3d(OpContext& ctx, const ir::MaxPool3dOpIr& op) {
  return pool::max_pool_op(ctx, op.x,
                           pool3d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
                           kRank, op.out, nullptr);
}

Status lower_Module_MaxPool3dWithIndices(OpContext& ctx, const ir::MaxPool3dWithIndicesOpIr& op) {
  return pool::max_pool_op(ctx, op.x,
                           pool3d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode),
                           kRank, op.out, &op.out_indices);
}

// The geometry is not needed: burn-flex scatters out_grad to the recorded indices (module.rs:738).
Status lower_Module_MaxPool3dWithIndicesBackward(OpContext& ctx,
                                                 const ir::MaxPool3dWithIndicesBackwardOpIr& op) {
  return pool::max_pool_backward_op(ctx, op.x, op.grad, op.indices, kRank, op.out);
}

}  // namespace tb::backend::libtorch
