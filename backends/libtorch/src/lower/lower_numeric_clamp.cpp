// NumericOperationIr, clamps and powi: Clamp, ClampMin, ClampMax, Powi and PowiScalar under
// NumericFloat and NumericInt (the rest of the element-wise part is in lower_numeric.cpp, whose
// header gives the semantics shared with these; the helpers in numeric_scalar.hpp).
//
// - Integer Clamp* compare against the unnarrowed i64 (u64 for U64), in Burn's order (U64
//   unsigned); where Burn's conversion of a bound panics the op fails with a clear error instead.
// - Float ClampMin/ClampMax let NaN inputs through and a NaN bound gives NaN; Clamp with
//   min > max is an error (Rust's clamp asserts).
// - Integer Powi is `wrapping_pow(exponent as u32)` (a negative exponent wraps to a huge one).
#include <cmath>
#include <cstdint>
#include <limits>

#include "lower/lower_families.hpp"
#include "lower/numeric_scalar.hpp"

namespace tb::backend::libtorch {

using ir::DType;
using ir::DTypeKind;
using ir::ScalarIr;

// ---- Clamp -----------------------------------------------------------------------------------

namespace {

// The bound of an integer clamp: burn-flex compares against the unnarrowed i64 (u64 for U64).
Result<std::int64_t> int_bound(const ScalarIr& s, const DType& d) {
  if (is_u64(d)) {
    if (auto u = scalar_to_u64(s)) return static_cast<std::int64_t>(*u);
  } else if (auto i = scalar_to_i64(s)) {
    return *i;
  }
  return make_error(ErrorCode::kInvalidArgument, "clamp bound {} cannot be represented as {}",
                    scalar_string(s), d.name());
}

// An int tensor (and bounds) as int64 keys whose signed order is Burn's order.
at::Tensor int_key(const at::Tensor& x, const DType& d) {
  return is_u64(d) ? order_key(x) : x.to(at::kLong);
}
at::Tensor from_key(const at::Tensor& k, const DType& d) {
  return is_u64(d) ? order_key(k) : k;
}

// A float bound in the compute type (f32 for F32/F16/BF16, as burn-flex's `to_f32`).
double float_bound(const ScalarIr& s, const DType& d) {
  const double v = s.as_double();
  return d.kind == DTypeKind::F64 ? v : static_cast<double>(f64_to_f32(v));
}

at::Tensor bound_tensor(const OpContext& ctx, double v, const DType& d) {
  return at::scalar_tensor(v,
                           at::TensorOptions().dtype(float_compute_type(d)).device(ctx.device()));
}

// ClampMin / ClampMax.
Status float_clamp_one(OpContext& ctx, const ir::ScalarOpIr& op, bool min) {
  const at::Tensor& x = ctx.in(op.lhs);
  const DType& d = op.lhs.dtype;
  const double b = float_bound(op.rhs, d);
  const at::Tensor xf = fc(x, d);
  // `if x.is_nan() || x > min { x } else { min }` (and the mirror for max).
  const at::Tensor keep = xf.isnan().logical_or(min ? xf.gt(b) : xf.lt(b));
  return ctx.out(op.out, at::where(keep, xf, bound_tensor(ctx, b, d)));
}

Status int_clamp_one(OpContext& ctx, const ir::ScalarOpIr& op, bool min) {
  const at::Tensor& x = ctx.in(op.lhs);
  const DType& d = op.lhs.dtype;
  TB_TRY_ASSIGN(const std::int64_t b, int_bound(op.rhs, d));
  const at::Tensor k = int_key(x, d);
  return ctx.out(op.out, from_key(min ? k.clamp_min(key_of(b, d)) : k.clamp_max(key_of(b, d)), d));
}

}  // namespace

Status lower_NumericFloat_Clamp(OpContext& ctx, const ir::ClampOpIr& op) {
  const at::Tensor& x = ctx.in(op.tensor);
  const DType& d = op.tensor.dtype;
  const bool empty = x.numel() == 0;
  const double lo = float_bound(op.min, d);
  const double hi = float_bound(op.max, d);
  const at::Tensor xf = fc(x, d);
  if (std::isnan(lo) || std::isnan(hi)) {
    return ctx.out(op.out, at::full_like(xf, std::numeric_limits<double>::quiet_NaN()));
  }
  if (!empty && lo > hi) return ctx.invalid("clamp: min ({}) > max ({})", lo, hi);
  // Rust's f32::clamp: `if x < min { min }; if x > max { max }` (NaN and -0.0 kept).
  at::Tensor r = at::where(xf.lt(lo), bound_tensor(ctx, lo, d), xf);
  r = at::where(r.gt(hi), bound_tensor(ctx, hi, d), r);
  return ctx.out(op.out, r);
}

Status lower_NumericInt_Clamp(OpContext& ctx, const ir::ClampOpIr& op) {
  const at::Tensor& x = ctx.in(op.tensor);
  const DType& d = op.tensor.dtype;
  const bool empty = x.numel() == 0;
  TB_TRY_ASSIGN(const std::int64_t lo, int_bound(op.min, d));
  TB_TRY_ASSIGN(const std::int64_t hi, int_bound(op.max, d));
  if (!empty && key_of(lo, d) > key_of(hi, d)) {
    return ctx.invalid("clamp: min ({}) > max ({})", scalar_string(op.min), scalar_string(op.max));
  }
  return ctx.out(op.out, from_key(at::clamp(int_key(x, d), key_of(lo, d), key_of(hi, d)), d));
}

template <bool IsFloat>
Status clamp_bound(OpContext& ctx, const ir::ScalarOpIr& op, Bound bound) {
  if constexpr (IsFloat) {
    return float_clamp_one(ctx, op, bound == Bound::kMin);
  } else {
    return int_clamp_one(ctx, op, bound == Bound::kMin);
  }
}

template Status clamp_bound<true>(OpContext&, const ir::ScalarOpIr&, Bound);
template Status clamp_bound<false>(OpContext&, const ir::ScalarOpIr&, Bound);

// ---- Powi ------------------------------------------------------------------------------------

namespace {

// Rust's `base.wrapping_pow(exp as u32)` on i64 (exp given as int64; only its low 32 bits count).
at::Tensor wrapping_pow(const at::Tensor& base, const at::Tensor& exp) {
  at::Tensor e = exp.to(at::kLong).bitwise_and(std::int64_t{0xFFFFFFFF});
  at::Tensor b = base.to(at::kLong);
  at::Tensor r = at::ones_like(at::zeros_like(b) + at::zeros_like(e));  // broadcast shape
  if (r.numel() == 0) return r;
  std::int64_t max_e = e.max().item<std::int64_t>();
  while (max_e != 0) {
    r = at::where(e.bitwise_and(1).ne(0), r * b, r);
    e = e.bitwise_right_shift(1);
    max_e >>= 1;
    if (max_e != 0) b = b * b;
  }
  return r;
}

// A float tensor's values from an int (or float) tensor of kind `d`, U64 read as unsigned.
at::Tensor ints_as_double(const at::Tensor& t, const DType& d) {
  at::Tensor v = t.to(at::kDouble);
  if (is_u64(d)) v = at::where(t.lt(0), v + kTwo64, v);
  return v;
}

// PowiScalar's exponent: num_traits' `to_i64` (NaN and out-of-range values are an error).
Result<std::int64_t> powi_exponent(const OpContext& ctx, const ScalarIr& s) {
  if (auto n = scalar_to_i64(s)) return *n;
  return ctx.invalid("PowiScalar: exponent {} is not a valid integer", scalar_string(s));
}

}  // namespace

Status lower_NumericFloat_Powi(OpContext& ctx, const ir::BinaryOpIr& op) {
  const at::Tensor& a = ctx.in(op.lhs);
  const at::Tensor& b = ctx.in(op.rhs);
  const DType& d = op.lhs.dtype;
  // float_powf(lhs, int_into_float(rhs, lhs dtype)): the exponent is rounded to the lhs type.
  const at::Tensor e = op.rhs.dtype.is_float() ? b : ints_as_double(b, op.rhs.dtype);
  const at::Tensor ef = e.to(storage_type(d));
  return ctx.out(op.out, at::pow(fc(a, d), fc(ef, d)));
}

Status lower_NumericInt_Powi(OpContext& ctx, const ir::BinaryOpIr& op) {
  if (op.rhs.dtype.is_float()) {
    return ctx.invalid("Powi: the exponent of an integer tensor must be an integer tensor");
  }
  return ctx.out(op.out, wrapping_pow(ctx.in(op.lhs), ctx.in(op.rhs)));
}

Status lower_NumericFloat_PowiScalar(OpContext& ctx, const ir::ScalarOpIr& op) {
  const DType& d = op.lhs.dtype;
  TB_TRY_ASSIGN(const std::int64_t n, powi_exponent(ctx, op.rhs));
  const at::Tensor xf = fc(ctx.in(op.lhs), d);
  switch (n) {  // burn-flex float_powi_scalar's shortcuts
    case 0:
      return ctx.out(op.out, at::ones_like(xf));
    case 1:
      return ctx.out(op.out, xf);
    case 2:
      return ctx.out(op.out, xf * xf);
    case -1:
      return ctx.out(op.out, xf.reciprocal());
    case -2:
      return ctx.out(op.out, (xf * xf).reciprocal());
    default:
      break;
  }
  // float_powf_scalar_impl: powf with the scalar (as f64, converted to the element type).
  const at::Tensor e = fc(float_scalar_tensor(ctx, op.rhs.as_double(), d), d);
  return ctx.out(op.out, at::pow(xf, e));
}

Status lower_NumericInt_PowiScalar(OpContext& ctx, const ir::ScalarOpIr& op) {
  TB_TRY_ASSIGN(const std::int64_t n, powi_exponent(ctx, op.rhs));
  return ctx.out(op.out,
                 wrapping_pow(ctx.in(op.lhs), int_scalar_tensor(ctx, n, DType(DTypeKind::I64))));
}

}  // namespace tb::backend::libtorch
