// The pool op wrappers the pool families call (pool_family.hpp): the input's rank and the windows
// validated, the pool computed (pool_util.hpp), the outputs stored at the IR's rank.
#include "lower/pool_util.hpp"

namespace tb::backend::libtorch::pool {

namespace {

// The pooled output sizes for x [N, C, spatial...], validated.
Result<Sizes> out_sizes(OpContext& ctx, const at::Tensor& x, const Spec& p) {
  TB_TRY(check(ctx, p));
  Sizes out;
  for (std::size_t i = 0; i < p.rank(); ++i) {
    out.push_back(out_size(p, i, x.size(static_cast<std::int64_t>(2 + i))));
    if (out.back() < 0) {
      return ctx.invalid("pool kernel larger than the padded input {}", shape_string(x.sizes()));
    }
  }
  return out;
}

// A backward op's out_grad must pool the same batch and channels as its input.
Status check_grad(OpContext& ctx, const at::Tensor& x, const at::Tensor& grad) {
  if (grad.dim() != x.dim() || grad.size(0) != x.size(0) || grad.size(1) != x.size(1)) {
    return ctx.invalid("pool gradient {} does not match the input {}", shape_string(grad.sizes()),
                       shape_string(x.sizes()));
  }
  return ok();
}

}  // namespace

Status max_pool_op(OpContext& ctx, const ir::TensorIr& x_ir, const Spec& p, std::int64_t rank,
                   const ir::TensorIr& out, const ir::TensorIr* out_indices) {
  TB_TRY_ASSIGN(auto x, as_pool_input(ctx, ctx.in(x_ir), rank));
  TB_TRY_ASSIGN(auto sizes, out_sizes(ctx, x, p));
  const auto [y, idx] = max_pool(x, p, sizes);
  TB_TRY(ctx.out(out, as_pool_output(y, rank)));
  if (out_indices) TB_TRY(ctx.out(*out_indices, as_pool_output(idx, rank)));
  return ok();
}

Status max_pool_backward_op(OpContext& ctx, const ir::TensorIr& x_ir, const ir::TensorIr& grad_ir,
                            const ir::TensorIr& indices_ir, std::int64_t rank,
                            const ir::TensorIr& out) {
  const auto& x = ctx.in(x_ir);
  const auto& grad = ctx.in(grad_ir);
  const auto& indices = ctx.in(indices_ir);
  if (x.dim() != rank) return ctx.invalid("pool input must have rank {}, got {}", rank, x.dim());
  TB_TRY(check_grad(ctx, x, grad));
  if (indices.sizes() != grad.sizes()) {
    return ctx.invalid("max pool indices {} do not match the gradient {}",
                       shape_string(indices.sizes()), shape_string(grad.sizes()));
  }
  return ctx.out(out, max_pool_backward(x, grad, indices));
}

Status avg_pool_op(OpContext& ctx, const ir::TensorIr& x_ir, const Spec& p, bool cip,
                   std::int64_t rank, const ir::TensorIr& out) {
  TB_TRY_ASSIGN(auto x, as_pool_input(ctx, ctx.in(x_ir), rank));
  TB_TRY_ASSIGN(auto sizes, out_sizes(ctx, x, p));
  return ctx.out(out, as_pool_output(avg_pool(x, p, cip, sizes), rank));
}

Status avg_pool_backward_op(OpContext& ctx, const ir::TensorIr& x_ir, const ir::TensorIr& grad_ir,
                            const Spec& p, bool cip, std::int64_t rank, const ir::TensorIr& out) {
  TB_TRY(check(ctx, p));
  TB_TRY_ASSIGN(auto x, as_pool_input(ctx, ctx.in(x_ir), rank));
  TB_TRY_ASSIGN(auto grad, as_pool_input(ctx, ctx.in(grad_ir), rank));
  TB_TRY(check_grad(ctx, x, grad));
  return ctx.out(out, as_pool_output(avg_pool_backward(x, grad, p, cip), rank));
}

}  // namespace tb::backend::libtorch::pool
