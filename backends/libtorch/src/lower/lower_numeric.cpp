// NumericOperationIr, element-wise part: arithmetic (tensor and scalar), comparisons, abs/neg/sign,
// under NumericFloat and NumericInt (clamps and powi are in lower_numeric_clamp.cpp; full, int
// random and pad in lower_numeric_fill.cpp; the helpers they share in numeric_scalar.hpp). Float
// and int lowerings are separate functions, chosen when the lowering table is built: `split` rows
// and the families' IsFloat template argument.
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

// ---- Helpers on tensors ----------------------------------------------------------------------

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
  if (op == Arith::kDiv) {
    if (auto r = small_cpu::divide_by_one(a, b)) return std::move(*r);
    return a / b;
  }
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
      const auto ring = arith_op == Arith::kAdd   ? small_cpu::Ring::kAdd
                        : arith_op == Arith::kSub ? small_cpu::Ring::kSub
                                                  : small_cpu::Ring::kMul;
      if (auto r = small_cpu::int_ring_scalar(x, ring, v)) return ctx.out(op.out, *r);
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
    TB_TRY_ASSIGN(const std::int64_t v, int_elem(op.rhs, d, IntConv::kStrict));
    if (!is_u64(d)) {
      const auto order = cmp == Cmp::kGt   ? small_cpu::Order::kGt
                         : cmp == Cmp::kGe ? small_cpu::Order::kGe
                         : cmp == Cmp::kLt ? small_cpu::Order::kLt
                                           : small_cpu::Order::kLe;
      if (auto r = small_cpu::int_compare_scalar(ctx.in(op.lhs), order, v)) {
        return ctx.out(op.out, *r);
      }
    }
    return ctx.out(op.out, int_compare(cmp, ctx.in(op.lhs), int_scalar_tensor(ctx, v, d), d));
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
  if (auto r = small_cpu::float_abs(x)) return ctx.out(op.out, *r);
  return ctx.out(op.out, at::abs(x));  // wrapping for ints (MIN stays)
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

}  // namespace tb::backend::libtorch
