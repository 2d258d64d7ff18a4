// The pool families: what the {Avg,Max}Pool{1,2,3}d rows of module_ops.def and their backward
// rows expand to (lowering.cpp): avg_pool, avg_pool_backward, max_pool (with or without indices)
// and max_pool_backward, one template per family serving every rank's payload. The computations,
// with Burn's semantics, are in pool_util.hpp; the op wrappers below in pool_ops.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"

namespace tb::backend::libtorch::pool {

// The windows of one pool over the spatial dims.
struct Spec {
  Sizes kernel, stride, padding, dilation;
  bool ceil_mode = false;

  std::size_t rank() const { return kernel.size(); }
  bool undilated() const {
    return std::all_of(dilation.begin(), dilation.end(), [](std::int64_t d) { return d == 1; });
  }
};

template <std::size_t N>
Spec make_spec(const ir::Usizes<N>& k, const ir::Usizes<N>& s, const ir::Usizes<N>& p,
               const ir::Usizes<N>& d, bool ceil) {
  Spec r;
  for (std::size_t i = 0; i < N; ++i) {
    r.kernel.push_back(static_cast<std::int64_t>(k[i]));
    r.stride.push_back(static_cast<std::int64_t>(s[i]));
    r.padding.push_back(static_cast<std::int64_t>(p[i]));
    r.dilation.push_back(static_cast<std::int64_t>(d[i]));
  }
  r.ceil_mode = ceil;
  return r;
}

// ---- Op wrappers (pool_ops.cpp). `rank` is the IR tensors' rank: 3 (1-d pools, run as
// [N, C, L, 1]), 4 or 5.

// Max pool (with or without indices).
Status max_pool_op(OpContext& ctx, const ir::TensorIr& x_ir, const Spec& p, std::int64_t rank,
                   const ir::TensorIr& out, const ir::TensorIr* out_indices);
Status max_pool_backward_op(OpContext& ctx, const ir::TensorIr& x_ir, const ir::TensorIr& grad_ir,
                            const ir::TensorIr& indices_ir, std::int64_t rank,
                            const ir::TensorIr& out);
Status avg_pool_op(OpContext& ctx, const ir::TensorIr& x_ir, const Spec& p, bool cip,
                   std::int64_t rank, const ir::TensorIr& out);
Status avg_pool_backward_op(OpContext& ctx, const ir::TensorIr& x_ir, const ir::TensorIr& grad_ir,
                            const Spec& p, bool cip, std::int64_t rank, const ir::TensorIr& out);

// ---- The families -------------------------------------------------------------------------------

// A payload's windows. 1-d pools run as 2-d ones on [N, C, L, 1], as Burn's ModuleOps defaults do
// (burn-backend 0.23.0-pre.1 src/backend/ops/modules/pool.rs:7-181); the avg pools' dilation is
// Burn 0.23's (1 for 0.22.1 clients).
inline Spec spec_of(std::uint64_t k, std::uint64_t s, std::uint64_t p, std::uint64_t d, bool ceil) {
  return make_spec<2>({k, 1}, {s, 1}, {p, 0}, {d, 1}, ceil);
}
template <std::size_t N>
Spec spec_of(const ir::Usizes<N>& k, const ir::Usizes<N>& s, const ir::Usizes<N>& p,
             const ir::Usizes<N>& d, bool ceil) {
  return make_spec<N>(k, s, p, d, ceil);
}
template <class Op>
Spec spec_of(const Op& op) {
  return spec_of(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode);
}

// The rank of a payload's tensors: [N, C] and its spatial dims (one for a scalar kernel size).
template <class Op>
constexpr std::int64_t rank_of() {
  using Kernel = decltype(Op::kernel_size);
  if constexpr (std::is_integral_v<Kernel>) {
    return 3;
  } else {
    return 2 + static_cast<std::int64_t>(std::tuple_size_v<Kernel>);
  }
}

// avg_pool: AvgPool{1,2,3}d.
template <class Op>
Status lower_avg_pool(OpContext& ctx, const Op& op) {
  return avg_pool_op(ctx, op.x, spec_of(op), op.count_include_pad, rank_of<Op>(), op.out);
}

// avg_pool_backward: AvgPool{1,2,3}dBackward. burn-flex's avg_pool3d_backward ignores ceil_mode
// (module.rs:461): the windows are those of grad's sizes.
template <class Op>
Status lower_avg_pool_backward(OpContext& ctx, const Op& op) {
  return avg_pool_backward_op(ctx, op.x, op.grad, spec_of(op), op.count_include_pad, rank_of<Op>(),
                              op.out);
}

// max_pool: MaxPool{1,2,3}d, and MaxPool{1,2,3}dWithIndices (the payloads with out_indices).
template <class Op>
Status lower_max_pool(OpContext& ctx, const Op& op) {
  if constexpr (requires { op.out_indices; }) {
    return max_pool_op(ctx, op.x, spec_of(op), rank_of<Op>(), op.out, &op.out_indices);
  } else {
    return max_pool_op(ctx, op.x, spec_of(op), rank_of<Op>(), op.out, nullptr);
  }
}

// max_pool_backward: MaxPool{1,2,3}dWithIndicesBackward. The geometry is not needed: burn-flex
// scatters out_grad to the recorded indices (module.rs:738).
template <class Op>
Status lower_max_pool_backward(OpContext& ctx, const Op& op) {
  return max_pool_backward_op(ctx, op.x, op.grad, op.indices, rank_of<Op>(), op.out);
}

}  // namespace tb::backend::libtorch::pool
