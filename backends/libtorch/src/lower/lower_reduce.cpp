// NumericOperationIr reductions and orderings, under NumericFloat and NumericInt: sum, mean,
// prod, max/min (and arg*, *WithIndices, MaxAbs), top-k, cumulative ops and sorts (top-k and the
// sorts in lower_reduce_sort.cpp).
//
// Burn's semantics (burn-flex 0.22.1 and the burn-backend trait defaults), where they differ
// from a plain ATen call:
// - Integer sums/products wrap in the tensor's dtype (ATen promotes to int64: cast back).
//   Integer means divide the wrapped sum by the count, truncating toward zero; an integer mean
//   of nothing is an error (Burn panics).
// - f16/bf16 reductions and cumulative ops accumulate in f32 and round once.
// - Max/min (all forms) propagate NaN; arg forms return the first NaN, else the first extremum.
//   Max/min of nothing is an error (Burn panics).
// - Sorts order floats by IEEE total order (f32::total_cmp: -NaN < -inf < ... < -0 < +0 < ... <
//   +inf < +NaN); equal elements keep their input order (Burn's sort is unstable, but it is
//   insertion-stable on short rows and the trait documents "lowest index first" for top-k).
//   Top-k is the first k of the descending sort.
// - Integer MaxAbs uses wrapping abs: the most negative value stays negative.
// - Cumulative max/min keep the first of equal values (+0/-0 matter), NaN sticks.
// - U64 is stored as the int64 bit pattern: orderings work on x ^ INT64_MIN (an order-preserving
//   map to signed), and means divide as unsigned.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "lower/lower_families.hpp"
#include "lower/reduce_keys.hpp"
#include "lower/small_cpu.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::DTypeKind;
using reduce::check_axis;
using reduce::from_order_key;
using reduce::kI64Max;
using reduce::kI64Min;
using reduce::order_key;

std::vector<std::int64_t> sizes_of(const ir::TensorIr& t) {
  return std::vector<std::int64_t>(t.shape.dims.begin(), t.shape.dims.end());
}

// Index (keepdim) of the first maximum / minimum along `dim`; NaN counts as the extremum. Int64,
// or `wanted` where a small CPU tensor's loop can give that type at once.
Result<at::Tensor> arg_extremum(const OpContext& ctx, const at::Tensor& x, const ir::DType& d,
                                std::uint64_t axis, bool max, at::ScalarType wanted = at::kLong) {
  TB_TRY(check_axis(ctx, x, axis));
  const auto dim = static_cast<std::int64_t>(axis);
  if (x.size(dim) == 0) {
    return ctx.invalid("cannot take the {} of an empty dimension {}", max ? "max" : "min", axis);
  }
  if (auto index = small_cpu::arg_extremum(x, dim, max, wanted)) return *std::move(index);
  const at::Tensor key = order_key(x, d);
  return max ? at::argmax(key, dim, /*keepdim=*/true) : at::argmin(key, dim, /*keepdim=*/true);
}

// Values and indices of the max / min along `axis` (keepdim), as Burn's gather of the arg.
Result<std::pair<at::Tensor, at::Tensor>> extremum_dim(const OpContext& ctx, const at::Tensor& x,
                                                       const ir::DType& d, std::uint64_t axis,
                                                       bool max) {
  TB_TRY_ASSIGN(auto index, arg_extremum(ctx, x, d, axis, max));
  return std::pair{at::gather(x, static_cast<std::int64_t>(axis), index), index};
}

// The max / min of every element, shape [1].
Result<at::Tensor> extremum_all(const OpContext& ctx, const at::Tensor& x, const ir::DType& d,
                                bool max) {
  if (x.numel() == 0)
    return ctx.invalid("cannot take the {} of an empty tensor", max ? "max" : "min");
  TB_TRY_ASSIGN(auto r, extremum_dim(ctx, x.reshape({-1}), d, 0, max));
  return r.first;
}

// Burn's abs before MaxAbs: wrapping for signed ints (the minimum stays negative), the identity
// for unsigned ones.
at::Tensor burn_abs(const at::Tensor& x, const ir::DType& d) {
  if (d.is_float()) return widen(x).abs();
  if (d.is_uint()) return x;
  std::int64_t min = kI64Min;
  switch (d.kind) {
    case DTypeKind::I32:
      min = std::numeric_limits<std::int32_t>::min();
      break;
    case DTypeKind::I16:
      min = std::numeric_limits<std::int16_t>::min();
      break;
    case DTypeKind::I8:
      min = std::numeric_limits<std::int8_t>::min();
      break;
    default:
      break;
  }
  return at::where(x.eq(min), x, x.abs());
}

// An integer value (int64) wrapped into dtype `d` and read back as int64 (U64: the bit pattern).
at::Tensor wrap_int(const at::Tensor& v, const ir::DType& d) {
  switch (d.kind) {
    case DTypeKind::I32:
      return v.to(at::kInt).to(at::kLong);
    case DTypeKind::I16:
      return v.to(at::kShort).to(at::kLong);
    case DTypeKind::I8:
      return v.to(at::kChar).to(at::kLong);
    case DTypeKind::U8:
      return v.to(at::kByte).to(at::kLong);
    case DTypeKind::U16:
      return v.bitwise_and(0xFFFF);
    case DTypeKind::U32:
      return v.bitwise_and(std::int64_t{0xFFFFFFFF});
    default:
      return v.to(at::kLong);
  }
}

// u64 division of bit patterns `w` (int64) by 0 < n < 2^62.
at::Tensor udiv64(const at::Tensor& w, std::int64_t n) {
  const at::Tensor half = at::bitwise_right_shift(w, 1).bitwise_and(kI64Max);
  at::Tensor q = at::div(half, n, "trunc").mul(2);
  const at::Tensor r = w.sub(q.mul(n));  // in [0, 2n), exact modulo 2^64
  q = q.add(r.ge(n).to(at::kLong));
  return at::where(w.ge(0), at::div(w, n, "trunc"), q);
}

// Burn's integer mean: the sum wrapped in the dtype, divided by n toward zero.
at::Tensor int_mean_of_sum(const at::Tensor& sum, const ir::DType& d, std::int64_t n) {
  const at::Tensor s = wrap_int(sum, d);
  if (d.kind == DTypeKind::U64) return udiv64(s, n);
  return at::div(s, n, "trunc");
}

// Cumulative max/min, Burn's way: first of equal values, NaN sticks.
at::Tensor cum_extremum(const at::Tensor& x, const ir::DType& d, std::int64_t dim, bool max) {
  if (!d.is_float()) {
    const at::Tensor key = order_key(x, d);
    return from_order_key(std::get<0>(max ? at::cummax(key, dim) : at::cummin(key, dim)), d);
  }
  const at::Tensor f = widen(x);
  const at::Tensor v = std::get<0>(max ? at::cummax(f, dim) : at::cummin(f, dim));
  // ATen keeps the last of equal values, Burn the first: only the sign of a zero can differ.
  // A running max (min) of zero was set by the first zero of the prefix (all before it are
  // negative (positive)), so take that zero's sign.
  const at::Tensor zero = f.eq(0);
  const at::Tensor first_zero = zero.logical_and(zero.cumsum(dim).eq(1));
  const at::Tensor first_negative = first_zero.logical_and(at::signbit(f)).cumsum(dim).gt(0);
  const at::Tensor zeros = at::zeros_like(v);
  return at::where(v.eq(0), at::where(first_negative, zeros.neg(), zeros), v);
}

}  // namespace

// ---- The extremum families (lower_families.hpp) -----------------------------------------------

Status arg_extremum(OpContext& ctx, const ir::ReduceDimOpIr& p, Extreme e) {
  const bool max = e == Extreme::kMax;
  const at::ScalarType wanted =
      p.input.dtype.is_float() ? storage_type(p.out.dtype) : at::ScalarType::Long;
  TB_TRY_ASSIGN(auto index, arg_extremum(ctx, ctx.in(p.input), p.input.dtype, p.axis, max, wanted));
  // Burn's int_argmax/int_argmin declare the input's dtype for the indices (burn-router's
  // ReduceDimOpIr::create), but every Burn backend answers I64 (burn-flex reduce::argmax,
  // burn-tch's Long), so Burn's host and programs see I64: answer that. The float forms name
  // their out dtype and are honoured.
  if (!p.input.dtype.is_float()) return ctx.out(p.out, index, ir::DType(ir::DTypeKind::I64));
  return ctx.out(p.out, index);
}

Status extremum(OpContext& ctx, const ir::ReduceOpIr& p, Extreme e) {
  const bool max = e == Extreme::kMax;
  TB_TRY_ASSIGN(auto v, extremum_all(ctx, ctx.in(p.input), p.input.dtype, max));
  return ctx.out(p.out, v.reshape(sizes_of(p.out)));
}

Status extremum(OpContext& ctx, const ir::ReduceDimOpIr& p, Extreme e) {
  const bool max = e == Extreme::kMax;
  TB_TRY_ASSIGN(auto r, extremum_dim(ctx, ctx.in(p.input), p.input.dtype, p.axis, max));
  return ctx.out(p.out, r.first);
}

Status extremum(OpContext& ctx, const ir::ReduceDimWithIndicesOpIr& p, Extreme e) {
  const bool max = e == Extreme::kMax;
  TB_TRY_ASSIGN(auto r, extremum_dim(ctx, ctx.in(p.tensor), p.tensor.dtype, p.dim, max));
  TB_TRY(ctx.out(p.out, r.first));
  return ctx.out(p.out_indices, r.second);
}

Status extremum(OpContext& ctx, const ir::DimOpIr& p, Extreme e) {
  const bool max = e == Extreme::kMax;
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.axis));
  return ctx.out(p.out, cum_extremum(x, p.input.dtype, static_cast<std::int64_t>(p.axis), max));
}

Status lower_Numeric_Sum(OpContext& ctx, const ir::ReduceOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  return ctx.out(p.out, at::sum(widen(x)).reshape(sizes_of(p.out)));
}

Status lower_Numeric_SumDim(OpContext& ctx, const ir::ReduceDimOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.axis));
  return ctx.out(p.out, at::sum(widen(x), {static_cast<std::int64_t>(p.axis)}, true));
}

Status lower_Numeric_SumDims(OpContext& ctx, const ir::ReduceDimsOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  std::vector<std::int64_t> axes;
  for (auto a : p.axes) {
    TB_TRY(check_axis(ctx, x, a));
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(a)) == axes.end())
      axes.push_back(static_cast<std::int64_t>(a));
  }
  // ATen sums everything over an empty list; Burn's fold over no axis is the identity.
  if (axes.empty()) return ctx.out(p.out, x);
  return ctx.out(p.out, at::sum(widen(x), axes, true));
}

Status lower_Numeric_Prod(OpContext& ctx, const ir::ReduceOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  return ctx.out(p.out, at::prod(widen(x)).reshape(sizes_of(p.out)));
}

Status lower_Numeric_ProdDim(OpContext& ctx, const ir::ReduceDimOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.axis));
  return ctx.out(p.out, at::prod(widen(x), static_cast<std::int64_t>(p.axis), true));
}

Status lower_NumericFloat_Mean(OpContext& ctx, const ir::ReduceOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  return ctx.out(p.out, at::mean(widen(x)).reshape(sizes_of(p.out)));
}

Status lower_NumericFloat_MeanDim(OpContext& ctx, const ir::ReduceDimOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.axis));
  return ctx.out(p.out, at::mean(widen(x), {static_cast<std::int64_t>(p.axis)}, true));
}

Status lower_NumericInt_Mean(OpContext& ctx, const ir::ReduceOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  if (x.numel() == 0) return ctx.invalid("cannot take the integer mean of an empty tensor");
  const at::Tensor mean = int_mean_of_sum(at::sum(x, at::kLong), p.input.dtype, x.numel());
  return ctx.out(p.out, mean.reshape(sizes_of(p.out)));
}

Status lower_NumericInt_MeanDim(OpContext& ctx, const ir::ReduceDimOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.axis));
  const auto dim = static_cast<std::int64_t>(p.axis);
  if (x.size(dim) == 0) {
    return ctx.invalid("cannot take the integer mean of an empty dimension {}", p.axis);
  }
  const at::Tensor sum = at::sum(x, {dim}, true, at::kLong);
  return ctx.out(p.out, int_mean_of_sum(sum, p.input.dtype, x.size(dim)));
}

Status lower_Numeric_MaxAbs(OpContext& ctx, const ir::ReduceOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY_ASSIGN(auto v, extremum_all(ctx, burn_abs(x, p.input.dtype), p.input.dtype, true));
  return ctx.out(p.out, v.reshape(sizes_of(p.out)));
}

Status lower_Numeric_MaxAbsDim(OpContext& ctx, const ir::ReduceDimOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY_ASSIGN(auto r, extremum_dim(ctx, burn_abs(x, p.input.dtype), p.input.dtype, p.axis, true));
  return ctx.out(p.out, r.first);
}

Status lower_Numeric_CumSum(OpContext& ctx, const ir::DimOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.axis));
  return ctx.out(p.out, at::cumsum(widen(x), static_cast<std::int64_t>(p.axis)));
}

Status lower_Numeric_CumProd(OpContext& ctx, const ir::DimOpIr& p) {
  const at::Tensor x = ctx.in(p.input);
  TB_TRY(check_axis(ctx, x, p.axis));
  return ctx.out(p.out, at::cumprod(widen(x), static_cast<std::int64_t>(p.axis)));
}

}  // namespace tb::backend::libtorch
