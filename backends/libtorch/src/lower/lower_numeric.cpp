// NumericOperationIr, element-wise part: arithmetic (tensor and scalar), comparisons, abs/neg/sign,
// clamps and powi, under NumericFloat and NumericInt (full, int random and pad are in
// lower_numeric_fill.cpp; the helpers both share in numeric_scalar.hpp). Float and int lowerings
// are separate functions, chosen when the lowering table is built: `split` rows and the families'
// IsFloat template argument.
//
// Semantics are burn-flex 0.22.1's (Burn's reference CPU backend), which the router interpreter
// reaches with exactly these arguments:
// - Float ops on F16/BF16 compute in f32 and round once; a scalar operand is first converted to
//   the tensor's element type (f64 -> f32 -> f16), as burn-flex's scalar_op does.
// - Integer ops behave as Rust's wrapping arithmetic on the Burn element type. A scalar is
//   converted with num_traits' `to_i64` (`to_u64` for U64) and then narrowed with `as` (wraps),
//   except Clamp*, which compares against the unnarrowed i64. Where Burn's conversion panics
//   (NaN, out of range) the op fails with a clear error instead.
// - Integer Div truncates; Rem takes the sign of the divisor (floor-mod, like Python). Division
//   or remainder by zero is an error (Burn panics; ATen would raise or trap).
// - U64 lives in int64 by bit pattern: comparisons, Div, Rem and Clamp are done unsigned.
// - Float Rem is fmod adjusted to the divisor's sign; Sign maps NaN and -0.0 to +0.0; ClampMin/
//   ClampMax let NaN inputs through and a NaN bound gives NaN; Clamp with min > max is an error
//   (Rust's clamp asserts).
// - Integer Powi is `wrapping_pow(exponent as u32)` (a negative exponent wraps to a huge one).
#include <cmath>
#include <cstdint>
#include <limits>

#include "lower/lower_families.hpp"
#include "lower/numeric_scalar.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::DType;
using ir::DTypeKind;
using ir::ScalarIr;

// Burn's unsigned kinds (their storage holds non-negative values, except U64's bit pattern).
bool is_unsigned(const DType& d) {
  return d.is_uint();
}
bool is_signed_storage(at::ScalarType st) {
  return st == at::kChar || st == at::kShort || st == at::kInt || st == at::kLong;
}

// The ATen type a float op computes in: f32 for the half types (burn-flex rounds once from f32).
at::ScalarType float_compute_type(const DType& d) {
  return d.kind == DTypeKind::F64 ? at::kDouble : at::kFloat;
}

// ---- Helpers on tensors ----------------------------------------------------------------------

// Float operands in the compute type.
at::Tensor fc(const at::Tensor& t, const DType& d) {
  const auto ct = float_compute_type(d);
  return t.scalar_type() == ct ? t : t.to(ct);
}

// The rhs in the storage type of the lhs (the client sends equal dtypes; be lenient anyway).
at::Tensor like_lhs(const at::Tensor& rhs, const at::Tensor& lhs) {
  return rhs.scalar_type() == lhs.scalar_type() ? rhs : rhs.to(lhs.scalar_type());
}

// Unsigned 64-bit division of bit patterns (d != 0), Hacker's Delight `divlu`.
at::Tensor udiv64(const at::Tensor& n, const at::Tensor& d) {
  const at::Tensor big = d.lt(0);  // d >= 2^63: the quotient is 0 or 1
  const at::Tensor q_big = uge(n, d).to(at::kLong);
  const at::Tensor ds = d.masked_fill(big, 1);
  // (n >> 1) logically, a non-negative value: signed truncating division is exact.
  const at::Tensor half = n.bitwise_right_shift(1).bitwise_and(std::numeric_limits<int64_t>::max());
  at::Tensor q = at::div(half, ds, "trunc").bitwise_left_shift(1);
  const at::Tensor r = n - q * ds;  // wrapping; r < 2 * ds as unsigned
  q = q + uge(r, ds).to(at::kLong);
  return at::where(big, q_big, q);
}

bool any_zero(const at::Tensor& t) {
  return t.numel() > 0 && t.eq(0).any().item<bool>();
}

std::int64_t numel_of(const ir::TensorIr& t) {
  return static_cast<std::int64_t>(ir::num_elements(t.shape.dims));
}

// ---- Arithmetic ------------------------------------------------------------------------------

// Add, Sub and Mul are the same for floats and for (wrapping) ints; nothing else is.
std::optional<at::Tensor> ring_arith(Arith op, const at::Tensor& a, const at::Tensor& b) {
  switch (op) {
    case Arith::kAdd:
      return a + b;
    case Arith::kSub:
      return a - b;
    case Arith::kMul:
      return a * b;
    case Arith::kDiv:
    case Arith::kRem:
      break;
  }
  return std::nullopt;
}

Result<at::Tensor> float_arith(Arith op, const at::Tensor& lhs, const at::Tensor& rhs,
                               const DType& d) {
  const at::Tensor a = fc(lhs, d);
  const at::Tensor b = fc(rhs, d);
  if (auto r = ring_arith(op, a, b)) return std::move(*r);
  if (op == Arith::kDiv) return a / b;
  // Rem: Rust `a % b` is fmod; the result then takes the divisor's sign.
  const at::Tensor r = at::fmod(a, b);
  const at::Tensor fix = r.ne(0).logical_and(r.lt(0).ne(b.lt(0)));
  return at::where(fix, r + b, r);
}

Result<at::Tensor> int_arith(Arith op, const at::Tensor& a, const at::Tensor& b, const DType& d,
                             std::int64_t out_numel) {
  if (auto r = ring_arith(op, a, b)) return std::move(*r);
  if (out_numel > 0 && any_zero(b)) {
    return make_error(ErrorCode::kInvalidArgument, "integer {} by zero",
                      op == Arith::kDiv ? "division" : "remainder");
  }
  if (out_numel == 0) return a + b;  // shape only; nothing is divided
  if (is_u64(d)) {
    const at::Tensor q = udiv64(a, b);
    return op == Arith::kDiv ? q : a - q * b;
  }
  const bool is_signed = !is_unsigned(d) && is_signed_storage(a.scalar_type());
  // x / -1 and x % -1 trap on x86 for the minimum value: divide by 1 instead and fix up.
  const at::Tensor minus_one = is_signed ? b.eq(-1) : at::Tensor();
  const at::Tensor bs = is_signed ? b.masked_fill(minus_one, 1) : b;
  if (op == Arith::kDiv) {
    const at::Tensor q = at::div(a, bs, "trunc");
    return is_signed ? at::where(minus_one, at::zeros_like(a) - a, q) : q;
  }
  const at::Tensor r = at::fmod(a, bs);  // truncated (C) remainder; x % 1 == 0 == x % -1
  if (!is_signed) return r;
  const at::Tensor fix = r.ne(0).logical_and(r.lt(0).ne(bs.lt(0)));
  return at::where(fix, r + bs, r);
}

// ---- Comparisons -----------------------------------------------------------------------------

at::Tensor compare(Cmp op, const at::Tensor& a, const at::Tensor& b) {
  switch (op) {
    case Cmp::kGt:
      return a.gt(b);
    case Cmp::kGe:
      return a.ge(b);
    case Cmp::kLt:
      return a.lt(b);
    case Cmp::kLe:
      return a.le(b);
  }
  return a.gt(b);
}

// Integer operands: U64 is compared unsigned.
at::Tensor int_compare(Cmp op, at::Tensor a, at::Tensor b, const DType& d) {
  if (is_u64(d)) {
    a = order_key(a);
    b = order_key(b);
  }
  return compare(op, a, b);
}

// The scalar operand of an integer ScalarOpIr as a 0-dim tensor of the lhs element type (a float
// lhs takes float_scalar_tensor).
Result<at::Tensor> int_operand(const OpContext& ctx, const ScalarIr& s, const DType& d,
                               IntConv conv) {
  TB_TRY_ASSIGN(const std::int64_t v, int_elem(s, d, conv));
  return int_scalar_tensor(ctx, v, d);
}

}  // namespace

// ---- Families: arith / arith_scalar / compare / compare_elem ---------------------------------
//
// IsFloat is the row's category (NumericFloat or NumericInt), fixed when the table is built.

template <bool IsFloat>
Status lower_arith(Arith arith_op, OpContext& ctx, const ir::BinaryOpIr& op) {
  const at::Tensor& a = ctx.in(op.lhs);
  const at::Tensor b = like_lhs(ctx.in(op.rhs), a);
  if constexpr (IsFloat) {
    TB_TRY_ASSIGN(at::Tensor r, float_arith(arith_op, a, b, op.lhs.dtype));
    return ctx.out(op.out, r);
  } else {
    TB_TRY_ASSIGN(at::Tensor r, int_arith(arith_op, a, b, op.lhs.dtype, numel_of(op.out)));
    return ctx.out(op.out, r);
  }
}

template <bool IsFloat>
Status lower_arith_scalar(Arith arith_op, OpContext& ctx, const ir::ScalarOpIr& op) {
  const DType& d = op.lhs.dtype;
  const at::Tensor& x = ctx.in(op.lhs);
  if constexpr (IsFloat) {
    const at::Tensor s = float_scalar_tensor(ctx, op.rhs.as_double(), d);
    TB_TRY_ASSIGN(at::Tensor r, float_arith(arith_op, x, s, d));
    return ctx.out(op.out, r);
  } else {
    const IntConv conv = (arith_op == Arith::kDiv || arith_op == Arith::kRem) ? IntConv::kStrict
                                                                              : IntConv::kWrapping;
    if (arith_op == Arith::kAdd || arith_op == Arith::kSub || arith_op == Arith::kMul) {
      // Ring ops wrap alike in any width: the scalar (wrapped to the dtype) goes in as a number,
      // without a 0-dim tensor and a cast to the lhs's storage (Burn's LU adds its pivot offset
      // to an I64-held argmax 500 times per matrix).
      TB_TRY_ASSIGN(const std::int64_t v, int_elem(op.rhs, d, conv));
      const at::Scalar sv(v);
      return ctx.out(op.out, arith_op == Arith::kAdd   ? x.add(sv)
                             : arith_op == Arith::kSub ? x.sub(sv)
                                                       : x.mul(sv));
    }
    TB_TRY_ASSIGN(at::Tensor s, int_operand(ctx, op.rhs, d, conv));
    TB_TRY_ASSIGN(at::Tensor r, int_arith(arith_op, x, like_lhs(s, x), d, numel_of(op.out)));
    return ctx.out(op.out, r);
  }
}

template <bool IsFloat>
Status lower_compare(Cmp cmp, OpContext& ctx, const ir::BinaryOpIr& op) {
  const at::Tensor& a = ctx.in(op.lhs);
  const at::Tensor b = like_lhs(ctx.in(op.rhs), a);
  if constexpr (IsFloat) {
    return ctx.out(op.out, compare(cmp, a, b));
  } else {
    return ctx.out(op.out, int_compare(cmp, a, b, op.lhs.dtype));
  }
}

template <bool IsFloat>
Status lower_compare_elem(Cmp cmp, OpContext& ctx, const ir::ScalarOpIr& op) {
  const DType& d = op.lhs.dtype;
  if constexpr (IsFloat) {
    return ctx.out(op.out,
                   compare(cmp, ctx.in(op.lhs), float_scalar_tensor(ctx, op.rhs.as_double(), d)));
  } else {
    TB_TRY_ASSIGN(at::Tensor s, int_operand(ctx, op.rhs, d, IntConv::kStrict));
    return ctx.out(op.out, int_compare(cmp, ctx.in(op.lhs), s, d));
  }
}

template Status lower_arith<true>(Arith, OpContext&, const ir::BinaryOpIr&);
template Status lower_arith<false>(Arith, OpContext&, const ir::BinaryOpIr&);
template Status lower_arith_scalar<true>(Arith, OpContext&, const ir::ScalarOpIr&);
template Status lower_arith_scalar<false>(Arith, OpContext&, const ir::ScalarOpIr&);
template Status lower_compare<true>(Cmp, OpContext&, const ir::BinaryOpIr&);
template Status lower_compare<false>(Cmp, OpContext&, const ir::BinaryOpIr&);
template Status lower_compare_elem<true>(Cmp, OpContext&, const ir::ScalarOpIr&);
template Status lower_compare_elem<false>(Cmp, OpContext&, const ir::ScalarOpIr&);

// ---- Unary -----------------------------------------------------------------------------------

Status lower_Numeric_Abs(OpContext& ctx, const ir::UnaryOpIr& op) {
  const at::Tensor& x = ctx.in(op.input);
  if (is_unsigned(op.input.dtype)) return ctx.out(op.out, x);  // identity, U64 bits included
  return ctx.out(op.out, at::abs(x));                          // wrapping for ints (MIN stays)
}

Status lower_NumericFloat_Neg(OpContext& ctx, const ir::UnaryOpIr& op) {
  return ctx.out(op.out, at::neg(ctx.in(op.input)));
}

Status lower_NumericInt_Neg(OpContext& ctx, const ir::UnaryOpIr& op) {
  const at::Tensor& x = ctx.in(op.input);
  return ctx.out(op.out, at::zeros_like(x) - x);  // wrapping_neg on every integer kind
}

Status lower_NumericFloat_Sign(OpContext& ctx, const ir::UnaryOpIr& op) {
  const at::Tensor& x = ctx.in(op.input);
  const auto ct = float_compute_type(op.input.dtype);
  // NaN, 0.0 and -0.0 give +0.0.
  return ctx.out(op.out, x.gt(0).to(ct) - x.lt(0).to(ct));
}

Status lower_NumericInt_Sign(OpContext& ctx, const ir::UnaryOpIr& op) {
  const at::Tensor& x = ctx.in(op.input);
  if (is_unsigned(op.input.dtype)) return ctx.out(op.out, x.ne(0).to(at::kLong));
  return ctx.out(op.out, x.gt(0).to(at::kLong) - x.lt(0).to(at::kLong));
}

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
template <bool Min>
Status float_clamp_one(OpContext& ctx, const ir::ScalarOpIr& op) {
  const at::Tensor& x = ctx.in(op.lhs);
  const DType& d = op.lhs.dtype;
  const double b = float_bound(op.rhs, d);
  const at::Tensor xf = fc(x, d);
  // `if x.is_nan() || x > min { x } else { min }` (and the mirror for max).
  const at::Tensor keep = xf.isnan().logical_or(Min ? xf.gt(b) : xf.lt(b));
  return ctx.out(op.out, at::where(keep, xf, bound_tensor(ctx, b, d)));
}

template <bool Min>
Status int_clamp_one(OpContext& ctx, const ir::ScalarOpIr& op) {
  const at::Tensor& x = ctx.in(op.lhs);
  const DType& d = op.lhs.dtype;
  TB_TRY_ASSIGN(const std::int64_t b, int_bound(op.rhs, d));
  const at::Tensor k = int_key(x, d);
  return ctx.out(op.out, from_key(Min ? k.clamp_min(key_of(b, d)) : k.clamp_max(key_of(b, d)), d));
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

Status lower_NumericFloat_ClampMin(OpContext& ctx, const ir::ScalarOpIr& op) {
  return float_clamp_one<true>(ctx, op);
}

Status lower_NumericInt_ClampMin(OpContext& ctx, const ir::ScalarOpIr& op) {
  return int_clamp_one<true>(ctx, op);
}

Status lower_NumericFloat_ClampMax(OpContext& ctx, const ir::ScalarOpIr& op) {
  return float_clamp_one<false>(ctx, op);
}

Status lower_NumericInt_ClampMax(OpContext& ctx, const ir::ScalarOpIr& op) {
  return int_clamp_one<false>(ctx, op);
}

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
