// BaseOperationIr indexing under BaseFloat, BaseInt and BaseBool: Select, SelectAssign, Gather,
// Scatter and their N-d forms (the other Base ops are in lower_base.cpp).
//
// Semantics follow Burn 0.22.1 (burn-backend trait docs and defaults, burn-flex as the reference):
// - Scatter/SelectAssign/ScatterNd combine per IndexingUpdateOp; duplicates apply in index order
//   (Assign: the last one wins on CPU). Min/Max never take an incoming NaN (burn-flex compares
//   with `<`/`>`), U64 compares as unsigned. Bool tensors: Add/Max = OR, Mul/Min = AND,
//   Assign = overwrite (Burn's own interpreter only implements Add = OR).
// - Every index is checked against its dim before any kernel runs (a CUDA device-side assert
//   would poison the whole process); a bad index is an InvalidArgument error.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include <torch/version.h>

#include "lower/lowering.hpp"
#include "lower/small_cpu.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::DType;
using ir::DTypeKind;
using ir::IndexingUpdateOp;

std::vector<std::int64_t> dims_of(const ir::TensorIr& t) {
  return std::vector<std::int64_t>(t.shape.dims.begin(), t.shape.dims.end());
}

// ---- Index checks ------------------------------------------------------------------------------

// Whether ATen takes `idx` as it is. LibTorch 2's gather and index_select take int32 indices on
// CPU (converting Burn's int32 indices cost more than the gather they feed: Burn's LU gathers a
// row per pivot); its scatters do not (their expanded-index kernels want int64).
bool index_as_is(const at::Tensor& idx, bool scatter) {
  if (idx.scalar_type() == at::kLong) return true;
#if TORCH_VERSION_MAJOR >= 2
  return !scatter && idx.scalar_type() == at::kInt && idx.device().is_cpu();
#else
  (void)scatter;
  return false;
#endif
}

// An index tensor ATen takes (int64, or int32 where index_as_is) for a gather or select, or for
// a `scatter`, with every value checked to lie in [0, size).
Result<at::Tensor> checked_index(OpContext& ctx, const at::Tensor& indices, std::int64_t size,
                                 std::uint64_t dim, bool scatter) {
  at::Tensor idx = index_as_is(indices, scatter) ? indices : small_cpu::to(indices, at::kLong);
  if (idx.numel() == 0) return idx;
  std::int64_t lo = 0, hi = 0;
  if (idx.device().is_cpu()) {
    // A loop over the values: the reductions, the stack and two item() calls cost more than the
    // gather or scatter they guard.
    std::tie(lo, hi) = small_cpu::value_range(idx);
  } else {
    const at::Tensor range = at::stack({idx.min(), idx.max()}).cpu();
    lo = range[0].item<std::int64_t>();
    hi = range[1].item<std::int64_t>();
  }
  if (lo < 0 || hi >= size) {
    return ctx.invalid("index {} is out of bounds for dim {} of size {}", lo < 0 ? lo : hi, dim,
                       size);
  }
  return idx;
}

// ---- Update ops --------------------------------------------------------------------------------

// `self` with `src` combined in at `index` along `dim` (torch.scatter layout), per `op`.
// `dtype` is the declared dtype of self/src (decides bool and unsigned handling). `in_place`:
// self is the op's exclusive input (OpContext::exclusive) and assignments, sums and products
// update it rather than a copy.
at::Tensor scatter_update(const at::Tensor& self, std::int64_t dim, const at::Tensor& index,
                          const at::Tensor& src, IndexingUpdateOp op, const DType& dtype,
                          bool in_place) {
  if (in_place && op == IndexingUpdateOp::Assign) return self.scatter_(dim, index, src);
  if (dtype.is_bool()) {
    if (op == IndexingUpdateOp::Assign) return self.scatter(dim, index, src);
    // OR (Add, Max) / AND (Mul, Min) as max / min over 0/1 in int32 (atomics exist everywhere).
    const bool is_or = op == IndexingUpdateOp::Add || op == IndexingUpdateOp::Max;
    return self.to(at::kInt)
        .scatter_reduce(dim, index, src.to(at::kInt), is_or ? "amax" : "amin", true)
        .ne(0);
  }
  switch (op) {
    case IndexingUpdateOp::Assign:
      return self.scatter(dim, index, src);
    case IndexingUpdateOp::Add: {
      if (!in_place) return self.scatter_add(dim, index, src);
      at::Tensor out = self;
      if (small_cpu::scatter_add_(out, dim, index, src)) return out;
      return out.scatter_add_(dim, index, src);
    }
    case IndexingUpdateOp::Mul:
      return in_place ? self.scatter_reduce_(dim, index, src, "prod", true)
                      : self.scatter_reduce(dim, index, src, "prod", true);
    case IndexingUpdateOp::Min:
    case IndexingUpdateOp::Max: {
      const bool is_min = op == IndexingUpdateOp::Min;
      const char* reduce = is_min ? "amin" : "amax";
      if (dtype.is_float()) {
        // Burn never takes an incoming NaN: make such a value neutral ...
        const double neutral = is_min ? std::numeric_limits<double>::infinity()
                                      : -std::numeric_limits<double>::infinity();
        const at::Tensor clean =
            at::where(src.isnan(), at::scalar_tensor(neutral, src.options()), src);
        // ... and a NaN already there stays (every comparison with it is false).
        const at::Tensor reduced = self.scatter_reduce(dim, index, clean, reduce, true);
        return at::where(self.isnan(), self, reduced);
      }
      if (dtype.kind == DTypeKind::U64) {
        // Unsigned order on the int64 bit pattern: flip the sign bit around a signed reduction.
        const auto flip =
            at::scalar_tensor(std::numeric_limits<std::int64_t>::min(), self.options());
        return self.bitwise_xor(flip)
            .scatter_reduce(dim, index, src.bitwise_xor(flip), reduce, true)
            .bitwise_xor(flip);
      }
      return self.scatter_reduce(dim, index, src, reduce, true);
    }
  }
  return self;
}

// ---- Indexing ----------------------------------------------------------------------------------

// ONNX-style N-d indexing: `indices` [..., K] addresses data[i0, ..., iK-1], a slice of shape
// data.shape[K:]. Returns the flat row index into data viewed as [prod(shape[:K]), rest].
struct NdIndex {
  at::Tensor rows;                   // [N] int64
  std::int64_t n = 0, p = 1, s = 1;  // index tuples, rows, row length
};

Result<NdIndex> nd_index(OpContext& ctx, const at::Tensor& data, const at::Tensor& indices) {
  if (indices.dim() == 0) return ctx.invalid("N-d indices must have at least one dim");
  const std::int64_t k = indices.size(-1);
  if (k > data.dim()) {
    return ctx.invalid("index tuples of length {} for a tensor of rank {}", k, data.dim());
  }
  NdIndex r;
  for (std::int64_t j = 0; j < data.dim(); ++j) (j < k ? r.p : r.s) *= data.size(j);
  r.n = 1;
  for (std::int64_t j = 0; j + 1 < indices.dim(); ++j) r.n *= indices.size(j);
  at::Tensor idx = indices.to(at::kLong).reshape({r.n, k});
  r.rows = at::zeros({r.n}, idx.options());
  for (std::int64_t j = 0; j < k; ++j) {
    const at::Tensor col = idx.select(1, j);
    TB_TRY(checked_index(ctx, col, data.size(j), static_cast<std::uint64_t>(j), false));
    r.rows = r.rows * data.size(j) + col;
  }
  return r;
}

}  // namespace

Status lower_Base_Select(OpContext& ctx, const ir::SelectOpIr& op) {
  const at::Tensor& t = ctx.in(op.tensor);
  const auto dim = static_cast<std::int64_t>(op.dim);
  TB_TRY_ASSIGN(auto idx, checked_index(ctx, ctx.in(op.indices), t.size(dim), op.dim, false));
  return ctx.out(op.out, at::index_select(t, dim, idx.reshape({-1})));
}

Status lower_Base_SelectAssign(OpContext& ctx, const ir::SelectAssignOpIr& op) {
  const at::Tensor& t = ctx.in(op.tensor);
  const at::Tensor& value = ctx.in(op.value);
  const auto dim = static_cast<std::int64_t>(op.dim);
  TB_TRY_ASSIGN(auto idx, checked_index(ctx, ctx.in(op.indices), t.size(dim), op.dim, true));
  idx = idx.reshape({-1});
  if (value.dim() != t.dim() || value.size(dim) != idx.numel()) {
    return ctx.invalid("select_assign value of shape {} does not fit {} indices along dim {}",
                       shape_string(value.sizes()), idx.numel(), op.dim);
  }
  // Row i of `value` along `dim` lands at indices[i]: a scatter with the index broadcast.
  std::vector<std::int64_t> view(static_cast<std::size_t>(t.dim()), 1);
  view[op.dim] = idx.numel();
  const at::Tensor index = idx.view(view).expand(value.sizes());
  return ctx.out(op.out, scatter_update(t, dim, index, value, op.update, op.tensor.dtype,
                                        ctx.exclusive(op.tensor) != nullptr));
}

Status lower_Base_Gather(OpContext& ctx, const ir::GatherOpIr& op) {
  const at::Tensor& t = ctx.in(op.tensor);
  const auto dim = static_cast<std::int64_t>(op.dim);
  TB_TRY_ASSIGN(auto idx, checked_index(ctx, ctx.in(op.indices), t.size(dim), op.dim, false));
  if (auto r = small_cpu::gather(t, dim, idx)) return ctx.out(op.out, *r);
  return ctx.out(op.out, at::gather(t, dim, idx));
}

Status lower_Base_Scatter(OpContext& ctx, const ir::ScatterOpIr& op) {
  const at::Tensor& t = ctx.in(op.tensor);
  const auto dim = static_cast<std::int64_t>(op.dim);
  TB_TRY_ASSIGN(auto idx, checked_index(ctx, ctx.in(op.indices), t.size(dim), op.dim, true));
  const at::Tensor& value = ctx.in(op.value);
  if (idx.sizes() != value.sizes()) {
    return ctx.invalid("scatter indices of shape {} do not match the value shape {}",
                       shape_string(idx.sizes()), shape_string(value.sizes()));
  }
  return ctx.out(op.out, scatter_update(t, dim, idx, value, op.update, op.tensor.dtype,
                                        ctx.exclusive(op.tensor) != nullptr));
}

Status lower_Base_ScatterNd(OpContext& ctx, const ir::ScatterNdOpIr& op) {
  const at::Tensor& data = ctx.in(op.data);
  const at::Tensor& values = ctx.in(op.values);
  TB_TRY_ASSIGN(auto nd, nd_index(ctx, data, ctx.in(op.indices)));
  if (values.numel() != nd.n * nd.s) {
    return ctx.invalid("scatter_nd values of shape {} do not fit {} slices of {} elements",
                       shape_string(values.sizes()), nd.n, nd.s);
  }
  const at::Tensor index = nd.rows.view({nd.n, 1}).expand({nd.n, nd.s});
  // In place, the reshape is a view of data where data is contiguous, and a copy otherwise: the
  // result is the updated reshape either way.
  const at::Tensor flat =
      scatter_update(data.reshape({nd.p, nd.s}), 0, index, values.reshape({nd.n, nd.s}),
                     op.reduction, op.data.dtype, ctx.exclusive(op.data) != nullptr);
  return ctx.out(op.out, flat.reshape(data.sizes()));
}

Status lower_Base_GatherNd(OpContext& ctx, const ir::GatherNdOpIr& op) {
  const at::Tensor& data = ctx.in(op.data);
  TB_TRY_ASSIGN(auto nd, nd_index(ctx, data, ctx.in(op.indices)));
  const at::Tensor rows = data.reshape({nd.p, nd.s}).index_select(0, nd.rows);
  return ctx.out(op.out, rows.reshape(dims_of(op.out)));
}

}  // namespace tb::backend::libtorch
