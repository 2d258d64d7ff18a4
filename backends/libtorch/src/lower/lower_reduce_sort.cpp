// NumericOperationIr orderings, under NumericFloat and NumericInt: top-k and sorts (the other
// reductions are in lower_reduce.cpp, whose header gives Burn's semantics of both).
#include <cstdint>
#include <utility>

#include "lower/lower_families.hpp"
#include "lower/reduce_keys.hpp"

namespace tb::backend::libtorch {

namespace {

using reduce::check_axis;
using reduce::sort_key;

// Values and int64 indices of Burn's sort of `x` along `dim` (stable, see the header).
std::pair<at::Tensor, at::Tensor> burn_sort(const at::Tensor& x, const ir::DType& d,
                                            std::int64_t dim, bool descending) {
  auto sorted = at::sort(sort_key(x, d), /*stable=*/true, dim, descending);
  at::Tensor indices = std::get<1>(sorted);
  return {at::gather(x, dim, indices), indices};
}

// The first k of the descending sort along `axis`.
Result<std::pair<at::Tensor, at::Tensor>> top_k(const OpContext& ctx, const at::Tensor& x,
                                                const ir::DType& d, std::uint64_t axis,
                                                std::uint64_t k) {
  TB_TRY(check_axis(ctx, x, axis));
  const auto dim = static_cast<std::int64_t>(axis);
  if (k > static_cast<std::uint64_t>(x.size(dim))) {
    return ctx.invalid("k = {} exceeds the size {} of dimension {}", k, x.size(dim), axis);
  }
  auto [values, indices] = burn_sort(x, d, dim, /*descending=*/true);
  const auto kk = static_cast<std::int64_t>(k);
  return std::pair{values.narrow(dim, 0, kk), indices.narrow(dim, 0, kk)};
}

}  // namespace

Status lower_Numeric_TopK(OpContext& ctx, const ir::ReduceDimOpIr& p) {
  TB_TRY_ASSIGN(auto r, top_k(ctx, ctx.in(p.input), p.input.dtype, p.axis, p.accumulator_len));
  return ctx.out(p.out, r.first);
}

Status lower_Numeric_ArgTopK(OpContext& ctx, const ir::ReduceDimOpIr& p) {
  TB_TRY_ASSIGN(auto r, top_k(ctx, ctx.in(p.input), p.input.dtype, p.axis, p.accumulator_len));
  return ctx.out(p.out, r.second);
}

Status lower_Numeric_TopKWithIndices(OpContext& ctx, const ir::TopKWithIndicesOpIr& p) {
  TB_TRY_ASSIGN(auto r, top_k(ctx, ctx.in(p.tensor), p.tensor.dtype, p.dim, p.k));
  TB_TRY(ctx.out(p.out, r.first));
  return ctx.out(p.out_indices, r.second);
}

Status lower_Numeric_Sort(OpContext& ctx, const ir::SortOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.dim));
  auto r = burn_sort(x, p.input.dtype, static_cast<std::int64_t>(p.dim), p.descending);
  return ctx.out(p.out, r.first);
}

Status lower_Numeric_SortWithIndices(OpContext& ctx, const ir::SortWithIndicesOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.dim));
  auto r = burn_sort(x, p.input.dtype, static_cast<std::int64_t>(p.dim), p.descending);
  TB_TRY(ctx.out(p.out, r.first));
  return ctx.out(p.out_indices, r.second);
}

Status lower_Numeric_ArgSort(OpContext& ctx, const ir::SortOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.dim));
  auto r = burn_sort(x, p.input.dtype, static_cast<std::int64_t>(p.dim), p.descending);
  return ctx.out(p.out, r.second);
}

}  // namespace tb::backend::libtorch
