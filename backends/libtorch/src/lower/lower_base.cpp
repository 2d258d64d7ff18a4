// BaseOperationIr under BaseFloat, BaseInt and BaseBool: shape and layout ops, slicing, masking,
// equality, creation, cast and all/any (gather/scatter/select and their N-d forms are in
// lower_base_index.cpp).
//
// Semantics follow Burn 0.22.1 (burn-backend trait docs and defaults, burn-flex as the reference):
// - Slice: per leading dim, the range [start', end') is clamped to the dim; a negative step only
//   reverses the traversal of that same range (end'-1, end'-1-|step|, ...), unlike Python.
// - Scalars (MaskFill, EqualElem) convert to the tensor's dtype the way Burn does: float scalars
//   truncate toward zero for int tensors, then wrap like Rust `as`; bool is "non-zero".
// - Empty creates zeros (never uninitialised memory).
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "lower/lowering.hpp"
#include "lower/slice_region.hpp"
#include "lower/small_cpu.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::DType;
using ir::DTypeKind;

std::vector<std::int64_t> dims_of(const ir::TensorIr& t) {
  return std::vector<std::int64_t>(t.shape.dims.begin(), t.shape.dims.end());
}

// ---- Scalars -----------------------------------------------------------------------------------

// The 64-bit pattern of `s` for an int tensor of `dtype` before wrapping to its width: float
// scalars truncate toward zero (saturating), unsigned ones keep their bits.
std::int64_t int_scalar_bits(const ir::ScalarIr& s, const DType& dtype) {
  if (const auto* f = std::get_if<double>(&s.value)) {
    if (dtype.kind == DTypeKind::U64 && *f >= 9.2233720368547758e18) {
      if (*f >= 1.8446744073709552e19) return -1;  // u64::MAX
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(*f));
    }
  }
  return s.as_int();
}

bool bool_scalar(const ir::ScalarIr& s) {
  return std::visit([](auto v) { return v != decltype(v){}; }, s.value);
}

// `s` as a rank-0 tensor in the storage of `dtype` (the tensor it is combined with).
at::Tensor scalar_as(const ir::ScalarIr& s, const DType& dtype, const at::Device& device) {
  const auto opts = at::TensorOptions().device(device);
  if (dtype.is_bool()) return at::scalar_tensor(bool_scalar(s), opts.dtype(at::kBool));
  if (dtype.is_float()) {
    return at::scalar_tensor(s.as_double(), opts.dtype(at::kDouble)).to(storage_type(dtype));
  }
  return to_storage(at::scalar_tensor(int_scalar_bits(s, dtype), opts.dtype(at::kLong)), dtype);
}

// ---- Masks, comparisons, reductions ------------------------------------------------------------

// A value's truth as Burn's all/any read it: non-zero (NaN included).
at::Tensor truth(const at::Tensor& t) {
  return t.scalar_type() == at::kBool ? t : t.ne(0);
}

}  // namespace

Status lower_Base_Reshape(OpContext& ctx, const ir::ShapeOpIr& op) {
  return ctx.out(op.out, ctx.in(op.input).reshape(dims_of(op.out)));
}

Status lower_Base_SwapDims(OpContext& ctx, const ir::SwapDimsOpIr& op) {
  return ctx.out(op.out, ctx.in(op.input).transpose(static_cast<std::int64_t>(op.dim1),
                                                    static_cast<std::int64_t>(op.dim2)));
}

Status lower_Base_Permute(OpContext& ctx, const ir::PermuteOpIr& op) {
  return ctx.out(
      op.out, ctx.in(op.input).permute(std::vector<std::int64_t>(op.axes.begin(), op.axes.end())));
}

Status lower_Base_Flip(OpContext& ctx, const ir::FlipOpIr& op) {
  const at::Tensor& in = ctx.in(op.input);
  if (op.axes.empty()) return ctx.out(op.out, in);
  return ctx.out(op.out, in.flip(std::vector<std::int64_t>(op.axes.begin(), op.axes.end())));
}

Status lower_Base_Expand(OpContext& ctx, const ir::ShapeOpIr& op) {
  return ctx.out(op.out, ctx.in(op.input).expand(dims_of(op.out)));
}

Status lower_Base_Unfold(OpContext& ctx, const ir::UnfoldOpIr& op) {
  const at::Tensor& in = ctx.in(op.input);
  if (op.step == 0) return ctx.invalid("unfold step is 0");
  if (op.dim >= static_cast<std::uint64_t>(in.dim())) {
    return ctx.invalid("unfold dim {} for a tensor of rank {}", op.dim, in.dim());
  }
  // Burn: no window when the dim is shorter than one (ATen refuses); layout as ATen's.
  if (static_cast<std::uint64_t>(in.size(static_cast<std::int64_t>(op.dim))) < op.size) {
    return ctx.out(op.out, at::zeros(dims_of(op.out), in.options()));
  }
  return ctx.out(op.out,
                 in.unfold(static_cast<std::int64_t>(op.dim), static_cast<std::int64_t>(op.size),
                           static_cast<std::int64_t>(op.step)));
}

Status lower_Base_Slice(OpContext& ctx, const ir::SliceOpIr& op) {
  const at::Tensor& in = ctx.in(op.tensor);
  TB_TRY_ASSIGN(auto region, slice_region(in, op.ranges));
  return ctx.out(op.out, slice_of(in, region));
}

Status lower_Base_SliceAssign(OpContext& ctx, const ir::SliceAssignOpIr& op) {
  const at::Tensor* own = ctx.exclusive(op.tensor);
  at::Tensor result = own ? *own : ctx.in(op.tensor).clone(at::MemoryFormat::Contiguous);
  TB_TRY_ASSIGN(auto region, slice_region(result, op.ranges));
  if (DeferredValue* deferred = ctx.deferred_value) {
    // The value is `t[r] - w`, not computed yet: written into the region itself where that is
    // the region and `t` is ours to update (Burn's LU's trailing update), else computed now.
    if (own && region.flips.empty() &&
        deferred->absorb_into(result, region.sizes, region.strides, region.offset)) {
      return ctx.out(op.out, result);
    }
    deferred->compute_from(ctx.in(op.tensor));
  }
  const at::Tensor& value = ctx.in(op.value);
  // A small region is one loop, without the view and the copy's TensorIterator (Burn's LU assigns
  // a row or a column of its matrix at every step).
  if (region.flips.empty() &&
      small_cpu::copy_into(result, region.sizes, region.strides, region.offset, value)) {
    return ctx.out(op.out, result);
  }
  at::Tensor view = result.as_strided(region.sizes, region.strides, region.offset);
  if (view.numel() > 0) view.copy_(region.flips.empty() ? value : value.flip(region.flips));
  return ctx.out(op.out, result);
}

Status lower_Base_MaskWhere(OpContext& ctx, const ir::MaskWhereOpIr& op) {
  return ctx.out(op.out, at::where(ctx.in(op.mask), ctx.in(op.value), ctx.in(op.tensor)));
}

Status lower_Base_MaskFill(OpContext& ctx, const ir::MaskFillOpIr& op) {
  const at::Tensor& t = ctx.in(op.tensor);
  if (op.tensor.dtype.is_float()) {
    // A wrapped number never widens the result and is cast like the 0-dim tensor was, without
    // making one (two allocations and a cast kernel per op: fusion sends relu as a mask fill).
    return ctx.out(op.out, at::where(ctx.in(op.mask), at::Scalar(op.value.as_double()), t));
  }
  return ctx.out(op.out,
                 at::where(ctx.in(op.mask), scalar_as(op.value, op.tensor.dtype, t.device()), t));
}

Status lower_Base_Equal(OpContext& ctx, const ir::BinaryOpIr& op) {
  return ctx.out(op.out, at::eq(ctx.in(op.lhs), ctx.in(op.rhs)));
}

Status lower_Base_NotEqual(OpContext& ctx, const ir::BinaryOpIr& op) {
  return ctx.out(op.out, at::ne(ctx.in(op.lhs), ctx.in(op.rhs)));
}

namespace {

// An I32, I64 or U64 tensor (U64 by its bits) against the value scalar_as would make, as one loop
// (small_cpu::int_compare_scalar): Burn's LU compares [n, n] index tensors with a value.
std::optional<at::Tensor> int_equal(const at::Tensor& lhs, const ir::ScalarOpIr& op,
                                    small_cpu::Order order) {
  const DTypeKind k = op.lhs.dtype.kind;
  if (k != DTypeKind::I32 && k != DTypeKind::I64 && k != DTypeKind::U64) return std::nullopt;
  std::int64_t v = int_scalar_bits(op.rhs, op.lhs.dtype);
  if (storage_type(op.lhs.dtype) == at::kInt)
    v = static_cast<std::int32_t>(v);  // to_storage's wrap
  return small_cpu::int_compare_scalar(lhs, order, v);
}

}  // namespace

Status lower_Base_EqualElem(OpContext& ctx, const ir::ScalarOpIr& op) {
  const at::Tensor& lhs = ctx.in(op.lhs);
  if (auto r = int_equal(lhs, op, small_cpu::Order::kEq)) return ctx.out(op.out, *r);
  return ctx.out(op.out, at::eq(lhs, scalar_as(op.rhs, op.lhs.dtype, lhs.device())));
}

Status lower_Base_NotEqualElem(OpContext& ctx, const ir::ScalarOpIr& op) {
  const at::Tensor& lhs = ctx.in(op.lhs);
  if (auto r = int_equal(lhs, op, small_cpu::Order::kNe)) return ctx.out(op.out, *r);
  return ctx.out(op.out, at::ne(lhs, scalar_as(op.rhs, op.lhs.dtype, lhs.device())));
}

Status lower_Base_RepeatDim(OpContext& ctx, const ir::RepeatDimOpIr& op) {
  const at::Tensor& in = ctx.in(op.tensor);
  if (op.dim >= static_cast<std::uint64_t>(in.dim())) {
    return ctx.invalid("repeat dim {} for a tensor of rank {}", op.dim, in.dim());
  }
  std::vector<std::int64_t> reps(static_cast<std::size_t>(in.dim()), 1);
  std::vector<std::int64_t> sizes = in.sizes().vec();
  std::int64_t repeated = 0;
  if (op.times > static_cast<std::uint64_t>(INT64_MAX) ||
      __builtin_mul_overflow(sizes[op.dim], static_cast<std::int64_t>(op.times), &repeated)) {
    return ctx.invalid("repeat {} times overflows the size of dim {}", op.times, op.dim);
  }
  reps[op.dim] = static_cast<std::int64_t>(op.times);
  sizes[op.dim] = repeated;
  TB_TRY(ctx.declared_as(op.out, sizes));
  return ctx.out(op.out, in.repeat(reps));
}

Status lower_Base_Cat(OpContext& ctx, const ir::CatOpIr& op) {
  if (op.tensors.empty()) return ctx.invalid("cat of no tensors");
  const std::vector<at::Tensor> inputs = ctx.in(op.tensors);
  const auto dim = static_cast<std::int64_t>(op.dim);
  if (auto small = small_cpu::cat(inputs, dim)) return ctx.out(op.out, *small);
  return ctx.out(op.out, at::cat(inputs, dim));
}

// Within one kind: ctx.out casts to the declared storage (ints wrap like Rust `as`, U16/U32 are
// masked back into range, U64 keeps the bit pattern).
Status lower_Base_Cast(OpContext& ctx, const ir::CastOpIr& op) {
  return ctx.out(op.out, ctx.in(op.input));
}

Status lower_Base_Empty(OpContext& ctx, const ir::CreationOpIr& op) {
  return ctx.out(op.out, at::zeros(dims_of(op.out), ctx.options(op.out.dtype)));
}

Status lower_Base_Zeros(OpContext& ctx, const ir::CreationOpIr& op) {
  return ctx.out(op.out, small_cpu::zeros(dims_of(op.out), ctx.options(op.out.dtype)));
}

Status lower_Base_Ones(OpContext& ctx, const ir::CreationOpIr& op) {
  return ctx.out(op.out, at::ones(dims_of(op.out), ctx.options(op.out.dtype)));
}

Status lower_Base_All(OpContext& ctx, const ir::ReduceOpIr& op) {
  return ctx.out(op.out, truth(ctx.in(op.input)).all().reshape(dims_of(op.out)));
}

Status lower_Base_Any(OpContext& ctx, const ir::ReduceOpIr& op) {
  return ctx.out(op.out, truth(ctx.in(op.input)).any().reshape(dims_of(op.out)));
}

Status lower_Base_AllDim(OpContext& ctx, const ir::ReduceDimOpIr& op) {
  return ctx.out(op.out, truth(ctx.in(op.input)).all(static_cast<std::int64_t>(op.axis), true));
}

Status lower_Base_AnyDim(OpContext& ctx, const ir::ReduceDimOpIr& op) {
  return ctx.out(op.out, truth(ctx.in(op.input)).any(static_cast<std::int64_t>(op.axis), true));
}

}  // namespace tb::backend::libtorch
