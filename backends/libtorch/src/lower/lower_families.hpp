// The lowering families: what the regular rows of the op tables expand to (lowering.cpp), and the
// helpers every lowering file shares. A row `TB_X(TB_CAT, Exp, UnaryOpIr, float_unary, exp, all)`
// becomes `unary_float(ctx, op, at::exp)`; an `own` row names a function of its own, declared in
// lowering.hpp. The module families (convolutions, pools) are in conv_family.hpp and
// pool_family.hpp.
#pragma once

#include <cstdint>
#include <utility>

#include "lower/lowering.hpp"
#include "lower/small_cpu.hpp"

namespace tb::backend::libtorch {

// ---- Helpers ------------------------------------------------------------------------------------

inline bool is_half(at::ScalarType st) {
  return st == at::kHalf || st == at::kBFloat16;
}
inline bool is_half(const at::Tensor& t) {
  return is_half(t.scalar_type());
}
inline bool is_half(const ir::DType& d) {
  return d.kind == ir::DTypeKind::F16 || d.kind == ir::DTypeKind::BF16;
}

// f16 / bf16 are computed in f32 and rounded once by ctx.out(), as burn-flex's kernels do (ATen
// lacks several half kernels on CPU anyway).
inline at::Tensor widen(const at::Tensor& t) {
  return is_half(t.scalar_type()) ? t.to(at::kFloat) : t;
}

// The type two float operands are computed in (f64 if either is f64, f32 otherwise).
inline at::ScalarType compute_type(const at::Tensor& a, const at::Tensor& b) {
  const at::ScalarType st = at::promote_types(a.scalar_type(), b.scalar_type());
  return is_half(st) || !at::isFloatingType(st) ? at::kFloat : st;
}

// A 0-dim tensor holding `v` with t's dtype and device (avoids relying on where()'s promotion
// of Scalar operands, which differs between LibTorch versions).
inline at::Tensor scalar_like(const at::Scalar& v, const at::Tensor& t) {
  return at::scalar_tensor(v, t.options());
}

// ---- Families -----------------------------------------------------------------------------------

// float_unary / Activation: f(x) computed in f32 for halves.
template <class F>
Status unary_float(OpContext& ctx, const ir::UnaryOpIr& op, F f) {
  return ctx.out(op.out, f(widen(ctx.in(op.input))));
}

// float_binary / Activation: both operands in one compute type.
template <class F>
Status binary_float(OpContext& ctx, const ir::BinaryOpIr& op, F f) {
  const at::Tensor& lhs = ctx.in(op.lhs);
  const at::Tensor& rhs = ctx.in(op.rhs);
  const at::ScalarType st = compute_type(lhs, rhs);
  return ctx.out(op.out, f(lhs.to(st), rhs.to(st)));
}

// along_dim: f(x, dim) for a valid axis.
template <class F>
Status along_dim(OpContext& ctx, const ir::DimOpIr& op, F f) {
  const at::Tensor x = widen(ctx.in(op.input));
  const auto dim = static_cast<std::int64_t>(op.axis);
  if (dim >= x.dim()) {
    return ctx.invalid("axis {} is out of range for a tensor of rank {}", dim, x.dim());
  }
  return ctx.out(op.out, f(x, dim));
}

// bitwise: int64 holds every int dtype's bits (sign- or zero-extended); out() truncates / masks
// back.
template <class F>
Status bitwise_binary(OpContext& ctx, const ir::BinaryOpIr& op, F f) {
  return ctx.out(op.out, f(ctx.in(op.lhs).to(at::kLong), ctx.in(op.rhs).to(at::kLong)));
}

// bitwise_scalar: burn-flex widens to i64 and casts back (U64: the scalar's u64 bits, which
// as_int keeps).
template <class F>
Status bitwise_scalar(OpContext& ctx, const ir::ScalarOpIr& op, F f) {
  const at::Tensor x = ctx.in(op.lhs).to(at::kLong);
  return ctx.out(op.out, f(x, scalar_like(op.rhs.as_int(), x)));
}

// logical: Bool inputs are kBool whatever their store.
template <class F>
Status logical(OpContext& ctx, const ir::BinaryOpIr& op, F f) {
  return ctx.out(op.out, f(ctx.in(op.lhs), ctx.in(op.rhs)));
}

// arith / arith_scalar / compare / compare_elem: Numeric rows under both NumericFloat and
// NumericInt (lower_numeric.cpp has burn-flex's integer semantics: wrapping, floor division, u64
// order). IsFloat is the row's category, TB_LOWER_IS_FLOAT(Cat); lower_numeric.cpp defines and
// explicitly instantiates both.
enum class Arith { kAdd, kSub, kMul, kDiv, kRem };
enum class Cmp { kGt, kGe, kLt, kLe };
template <bool IsFloat>
Status lower_arith(Arith arith, OpContext& ctx, const ir::BinaryOpIr& op);
template <bool IsFloat>
Status lower_arith_scalar(Arith arith, OpContext& ctx, const ir::ScalarOpIr& op);
template <bool IsFloat>
Status lower_compare(Cmp cmp, OpContext& ctx, const ir::BinaryOpIr& op);
template <bool IsFloat>
Status lower_compare_elem(Cmp cmp, OpContext& ctx, const ir::ScalarOpIr& op);

// float_test: IsInf / IsNan, a loop on small CPU tensors (small_cpu.hpp), ATen's otherwise
// (lower_float.cpp).
Status float_test(OpContext& ctx, const ir::UnaryOpIr& op, small_cpu::FloatTest test);

// shift / shift_scalar: burn-flex's wrapping shifts on the dtype's own width (lower_int_bool.cpp).
enum class Shift { kLeft, kRight };
Status lower_shift(OpContext& ctx, const ir::BinaryOpIr& op, Shift dir);
Status lower_shift_scalar(OpContext& ctx, const ir::ScalarOpIr& op, Shift dir);

// extremum / arg_extremum: max and min with Burn's NaN and signed-zero rules, for both Numeric
// categories; the payload picks the form: over all (Max), along a dim (MaxDim), with indices
// (MaxDimWithIndices), running (CumMax); arg_extremum the index along a dim (ArgMax)
// (lower_reduce.cpp).
enum class Extreme { kMax, kMin };
Status extremum(OpContext& ctx, const ir::ReduceOpIr& op, Extreme e);
Status extremum(OpContext& ctx, const ir::ReduceDimOpIr& op, Extreme e);
Status extremum(OpContext& ctx, const ir::ReduceDimWithIndicesOpIr& op, Extreme e);
Status extremum(OpContext& ctx, const ir::DimOpIr& op, Extreme e);
Status arg_extremum(OpContext& ctx, const ir::ReduceDimOpIr& op, Extreme e);

// clamp_bound: ClampMin / ClampMax, one bound with burn-flex's semantics per category
// (lower_numeric_clamp.cpp defines and instantiates both).
enum class Bound { kMin, kMax };
template <bool IsFloat>
Status clamp_bound(OpContext& ctx, const ir::ScalarOpIr& op, Bound bound);

}  // namespace tb::backend::libtorch
