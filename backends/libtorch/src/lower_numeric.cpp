// NumericOperationIr, element-wise part: arithmetic (tensor and scalar), comparisons, abs/neg/sign,
// clamps, powi, full, int random and pad, under NumericFloat and NumericInt.
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
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "lower_families.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::DType;
using ir::DTypeKind;
using ir::ScalarIr;

constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
constexpr double kTwo63 = 9223372036854775808.0;
constexpr double kTwo64 = 18446744073709551616.0;

bool is_u64(const DType& d) {
  return d.kind == DTypeKind::U64;
}
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

// Rust's `f64 as f32`: round to nearest, overflow to infinity (no UB for large finite values).
float f64_to_f32(double v) {
  constexpr double kMax = static_cast<double>(std::numeric_limits<float>::max());
  // FLT_MAX plus half an ulp (2^103): from there on the value rounds to infinity.
  constexpr double kOverflow = kMax + 10141204801825835211973625643008.0;
  if (std::isfinite(v) && std::fabs(v) > kMax) {
    if (std::fabs(v) >= kOverflow) return std::copysign(std::numeric_limits<float>::infinity(), v);
    return static_cast<float>(std::copysign(kMax, v));
  }
  return static_cast<float>(v);
}

// ---- Scalar conversions (num_traits ToPrimitive on burn_backend::Scalar) ----------------------

std::optional<std::int64_t> scalar_to_i64(const ScalarIr& s) {
  return std::visit(
      [](auto v) -> std::optional<std::int64_t> {
        using V = decltype(v);
        if constexpr (std::is_same_v<V, double>) {
          if (v >= -kTwo63 && v < kTwo63) return static_cast<std::int64_t>(v);  // truncates
          return std::nullopt;                                                  // NaN too
        } else if constexpr (std::is_same_v<V, std::uint64_t>) {
          if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return std::nullopt;
          return static_cast<std::int64_t>(v);
        } else {
          return static_cast<std::int64_t>(v);
        }
      },
      s.value);
}

std::optional<std::uint64_t> scalar_to_u64(const ScalarIr& s) {
  return std::visit(
      [](auto v) -> std::optional<std::uint64_t> {
        using V = decltype(v);
        if constexpr (std::is_same_v<V, double>) {
          if (v > -1.0 && v < kTwo64) return static_cast<std::uint64_t>(v);  // truncates
          return std::nullopt;
        } else if constexpr (std::is_same_v<V, std::int64_t>) {
          if (v < 0) return std::nullopt;
          return static_cast<std::uint64_t>(v);
        } else {
          return static_cast<std::uint64_t>(v);
        }
      },
      s.value);
}

// burn-ir `ScalarIr::elem::<f32>()` (PadModeIr::Constant goes through an f32).
float scalar_to_f32(const ScalarIr& s) {
  return std::visit(
      [](auto v) -> float {
        using V = decltype(v);
        if constexpr (std::is_same_v<V, double>) {
          return f64_to_f32(v);
        } else {
          return static_cast<float>(v);
        }
      },
      s.value);
}

std::string scalar_string(const ScalarIr& s) {
  return std::visit([](auto v) { return fmt::format("{}", v); }, s.value);
}

// Narrows an i64 to a Burn integer kind as Rust's `as` does; the result is the value the storage
// holds (U64 as its bit pattern).
std::int64_t wrap_to(std::int64_t v, const DType& d) {
  switch (d.kind) {
    case DTypeKind::I32:
      return static_cast<std::int32_t>(v);
    case DTypeKind::I16:
      return static_cast<std::int16_t>(v);
    case DTypeKind::I8:
      return static_cast<std::int8_t>(v);
    case DTypeKind::U32:
      return static_cast<std::uint32_t>(v);
    case DTypeKind::U16:
      return static_cast<std::uint16_t>(v);
    case DTypeKind::U8:
      return static_cast<std::uint8_t>(v);
    default:
      return v;  // I64, U64
  }
}

enum class IntConv {
  kStrict,   // burn-flex's to_i64()/to_u64() + `as`: unrepresentable values are an error
  kWrapping  // additionally accept any integer by its bit pattern (add/sub/mul, full, pad)
};

// A scalar as the element value of an integer tensor of kind `d` (storage form).
Result<std::int64_t> int_elem(const ScalarIr& s, const DType& d, IntConv conv) {
  if (is_u64(d)) {
    if (auto u = scalar_to_u64(s)) return static_cast<std::int64_t>(*u);
    if (conv == IntConv::kWrapping) {
      if (auto i = scalar_to_i64(s)) return *i;
    }
  } else {
    if (auto i = scalar_to_i64(s)) return wrap_to(*i, d);
    if (conv == IntConv::kWrapping) {
      if (auto u = scalar_to_u64(s)) return wrap_to(static_cast<std::int64_t>(*u), d);
    }
  }
  return make_error(ErrorCode::kInvalidArgument, "scalar {} cannot be represented as {}",
                    scalar_string(s), d.name());
}

// A float scalar converted to the element type `d` (f64 -> f32 -> f16/bf16), as a 0-dim tensor
// in the storage type of `d`.
at::Tensor float_scalar_tensor(const OpContext& ctx, double v, const DType& d) {
  if (d.kind == DTypeKind::F64) return at::scalar_tensor(v, ctx.options(d));
  const double f = static_cast<double>(f64_to_f32(v));
  at::Tensor t = at::scalar_tensor(f, ctx.options(DType(DTypeKind::F32)));
  return is_half(d) ? t.to(storage_type(d)) : t;
}

at::Tensor int_scalar_tensor(const OpContext& ctx, std::int64_t v, const DType& d) {
  return at::scalar_tensor(at::Scalar(v), ctx.options(d));
}

// The scalar operand of a ScalarOpIr as a 0-dim tensor of the lhs element type.
Result<at::Tensor> scalar_operand(const OpContext& ctx, const ScalarIr& s, const DType& d,
                                  IntConv conv) {
  if (d.is_float()) return float_scalar_tensor(ctx, s.as_double(), d);
  TB_TRY_ASSIGN(const std::int64_t v, int_elem(s, d, conv));
  return int_scalar_tensor(ctx, v, d);
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

// U64 bit patterns mapped so that signed order is unsigned order.
at::Tensor order_key(const at::Tensor& t) {
  return t.bitwise_xor(at::Scalar(kI64Min));
}

// Unsigned a >= b on U64 bit patterns.
at::Tensor uge(const at::Tensor& a, const at::Tensor& b) {
  return order_key(a).ge(order_key(b));
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

std::vector<std::int64_t> sizes_of(const ir::TensorIr& t) {
  return std::vector<std::int64_t>(t.shape.dims.begin(), t.shape.dims.end());
}

// ---- Arithmetic ------------------------------------------------------------------------------

Result<at::Tensor> float_arith(Arith op, const at::Tensor& lhs, const at::Tensor& rhs,
                               const DType& d) {
  const at::Tensor a = fc(lhs, d);
  const at::Tensor b = fc(rhs, d);
  switch (op) {
    case Arith::kAdd:
      return a + b;
    case Arith::kSub:
      return a - b;
    case Arith::kMul:
      return a * b;
    case Arith::kDiv:
      return a / b;
    case Arith::kRem: {
      // Rust `a % b` is fmod; the result then takes the divisor's sign.
      const at::Tensor r = at::fmod(a, b);
      const at::Tensor fix = r.ne(0).logical_and(r.lt(0).ne(b.lt(0)));
      return at::where(fix, r + b, r);
    }
  }
  return lhs;
}

Result<at::Tensor> int_arith(Arith op, const at::Tensor& a, const at::Tensor& b, const DType& d,
                             std::int64_t out_numel) {
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

Result<at::Tensor> arith(Arith op, const at::Tensor& a, const at::Tensor& b, const DType& d,
                         std::int64_t out_numel) {
  if (d.is_float()) return float_arith(op, a, b, d);
  return int_arith(op, a, like_lhs(b, a), d, out_numel);
}

// ---- Comparisons -----------------------------------------------------------------------------

at::Tensor compare(Cmp op, at::Tensor a, at::Tensor b, const DType& d) {
  if (is_u64(d)) {
    a = order_key(a);
    b = order_key(b);
  }
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

// ---- Unary -----------------------------------------------------------------------------------

Status lower_abs(OpContext& ctx, const ir::UnaryOpIr& op) {
  const at::Tensor& x = ctx.in(op.input);
  if (is_unsigned(op.input.dtype)) return ctx.out(op.out, x);  // identity, U64 bits included
  return ctx.out(op.out, at::abs(x));                          // wrapping for ints (MIN stays)
}

Status lower_neg(OpContext& ctx, const ir::UnaryOpIr& op) {
  const at::Tensor& x = ctx.in(op.input);
  if (op.input.dtype.is_float()) return ctx.out(op.out, at::neg(x));
  return ctx.out(op.out, at::zeros_like(x) - x);  // wrapping_neg on every integer kind
}

Status lower_sign(OpContext& ctx, const ir::UnaryOpIr& op) {
  const at::Tensor& x = ctx.in(op.input);
  const DType& d = op.input.dtype;
  if (d.is_float()) {
    const auto ct = float_compute_type(d);
    // NaN, 0.0 and -0.0 give +0.0.
    return ctx.out(op.out, x.gt(0).to(ct) - x.lt(0).to(ct));
  }
  if (is_unsigned(d)) return ctx.out(op.out, x.ne(0).to(at::kLong));
  return ctx.out(op.out, x.gt(0).to(at::kLong) - x.lt(0).to(at::kLong));
}

// ---- Clamp -----------------------------------------------------------------------------------

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
std::int64_t key_of(std::int64_t v, const DType& d) {
  return is_u64(d) ? (v ^ kI64Min) : v;
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

Status lower_clamp(OpContext& ctx, const ir::ClampOpIr& op) {
  const at::Tensor& x = ctx.in(op.tensor);
  const DType& d = op.tensor.dtype;
  const bool empty = x.numel() == 0;
  if (d.is_float()) {
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
  TB_TRY_ASSIGN(const std::int64_t lo, int_bound(op.min, d));
  TB_TRY_ASSIGN(const std::int64_t hi, int_bound(op.max, d));
  if (!empty && key_of(lo, d) > key_of(hi, d)) {
    return ctx.invalid("clamp: min ({}) > max ({})", scalar_string(op.min), scalar_string(op.max));
  }
  return ctx.out(op.out, from_key(at::clamp(int_key(x, d), key_of(lo, d), key_of(hi, d)), d));
}

template <bool Min>
Status lower_clamp_one(OpContext& ctx, const ir::ScalarOpIr& op) {
  const at::Tensor& x = ctx.in(op.lhs);
  const DType& d = op.lhs.dtype;
  if (d.is_float()) {
    const double b = float_bound(op.rhs, d);
    const at::Tensor xf = fc(x, d);
    // `if x.is_nan() || x > min { x } else { min }` (and the mirror for max).
    const at::Tensor keep = xf.isnan().logical_or(Min ? xf.gt(b) : xf.lt(b));
    return ctx.out(op.out, at::where(keep, xf, bound_tensor(ctx, b, d)));
  }
  TB_TRY_ASSIGN(const std::int64_t b, int_bound(op.rhs, d));
  const at::Tensor k = int_key(x, d);
  return ctx.out(op.out, from_key(Min ? k.clamp_min(key_of(b, d)) : k.clamp_max(key_of(b, d)), d));
}

// ---- Powi ------------------------------------------------------------------------------------

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

Status lower_powi(OpContext& ctx, const ir::BinaryOpIr& op) {
  const at::Tensor& a = ctx.in(op.lhs);
  const at::Tensor& b = ctx.in(op.rhs);
  const DType& d = op.lhs.dtype;
  if (d.is_float()) {
    // float_powf(lhs, int_into_float(rhs, lhs dtype)): the exponent is rounded to the lhs type.
    const at::Tensor e = op.rhs.dtype.is_float() ? b : ints_as_double(b, op.rhs.dtype);
    const at::Tensor ef = e.to(storage_type(d));
    return ctx.out(op.out, at::pow(fc(a, d), fc(ef, d)));
  }
  if (op.rhs.dtype.is_float()) {
    return ctx.invalid("Powi: the exponent of an integer tensor must be an integer tensor");
  }
  return ctx.out(op.out, wrapping_pow(a, b));
}

Status lower_powi_scalar(OpContext& ctx, const ir::ScalarOpIr& op) {
  const at::Tensor& x = ctx.in(op.lhs);
  const DType& d = op.lhs.dtype;
  const auto n = scalar_to_i64(op.rhs);
  if (!n) {
    return ctx.invalid("PowiScalar: exponent {} is not a valid integer", scalar_string(op.rhs));
  }
  if (!d.is_float()) {
    return ctx.out(op.out, wrapping_pow(x, int_scalar_tensor(ctx, *n, DType(DTypeKind::I64))));
  }
  const at::Tensor xf = fc(x, d);
  switch (*n) {  // burn-flex float_powi_scalar's shortcuts
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

// ---- Full ------------------------------------------------------------------------------------

// The fill value of Full / Pad(Constant) in the storage of `d`, as a 0-dim tensor.
Result<at::Tensor> fill_value(const OpContext& ctx, const ScalarIr& s, const DType& d) {
  if (d.is_float()) return float_scalar_tensor(ctx, s.as_double(), d);
  if (d.is_bool()) return at::scalar_tensor(s.as_double() != 0, ctx.options(d));
  // int_full: `fill_value.to_i64().unwrap() as <type>`; U64 also keeps UInt bits above 2^63.
  TB_TRY_ASSIGN(const std::int64_t v, int_elem(s, d, IntConv::kWrapping));
  return int_scalar_tensor(ctx, v, d);
}

Status lower_full(OpContext& ctx, const ir::FullOpIr& op) {
  TB_TRY_ASSIGN(at::Tensor v, fill_value(ctx, op.value, op.out.dtype));
  return ctx.out(op.out, at::empty(sizes_of(op.out), ctx.options(op.out.dtype)).fill_(v));
}

// ---- IntRandom -------------------------------------------------------------------------------

// Uniform 64-bit patterns.
at::Tensor random_bits(OpContext& ctx, const std::vector<std::int64_t>& sizes) {
  const auto opts = at::TensorOptions().dtype(at::kLong).device(ctx.device());
  const at::Tensor hi = at::empty(sizes, opts).random_(0, std::int64_t{1} << 32, ctx.generator());
  const at::Tensor lo = at::empty(sizes, opts).random_(0, std::int64_t{1} << 32, ctx.generator());
  return hi.bitwise_left_shift(32).bitwise_or(lo);
}

// Uniform integers in [0, range) (range as unsigned, > 0), as int64 bit patterns.
at::Tensor random_below(OpContext& ctx, const std::vector<std::int64_t>& sizes,
                        std::uint64_t range) {
  const auto opts = at::TensorOptions().dtype(at::kLong).device(ctx.device());
  if (range <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return at::empty(sizes, opts).random_(0, static_cast<std::int64_t>(range), ctx.generator());
  }
  // Over 2^63: draw 64-bit patterns and redraw those >= range (each is kept with p > 1/2).
  const at::Tensor limit = at::scalar_tensor(at::Scalar(static_cast<std::int64_t>(range)), opts);
  at::Tensor r = random_bits(ctx, sizes);
  for (int i = 0; i < 200; ++i) {
    const at::Tensor bad = uge(r, limit);
    if (!bad.any().item<bool>()) break;
    r = at::where(bad, random_bits(ctx, sizes), r);
  }
  return r;
}

// The range of a Burn integer kind as doubles: [lo, hi_exclusive).
std::pair<double, double> int_range(const DType& d) {
  switch (d.kind) {
    case DTypeKind::I32:
      return {-2147483648.0, 2147483648.0};
    case DTypeKind::I16:
      return {-32768.0, 32768.0};
    case DTypeKind::I8:
      return {-128.0, 128.0};
    case DTypeKind::U64:
      return {0.0, kTwo64};
    case DTypeKind::U32:
      return {0.0, 4294967296.0};
    case DTypeKind::U16:
      return {0.0, 65536.0};
    case DTypeKind::U8:
      return {0.0, 256.0};
    default:
      return {-kTwo63, kTwo63};
  }
}

// `f64.elem::<E>()`: truncation toward zero, unrepresentable values are an error.
Result<std::int64_t> f64_elem(double v, const DType& d) {
  const auto [lo, hi] = int_range(d);
  const double t = std::trunc(v);
  if (!(t >= lo && t < hi)) {
    return make_error(ErrorCode::kInvalidArgument, "{} cannot be represented as {}", v, d.name());
  }
  if (t >= kTwo63) return static_cast<std::int64_t>(t - kTwo63) + kI64Min;
  return static_cast<std::int64_t>(t);
}

// Random integers of kind `d` (storage values as int64) for burn-flex's `TensorData::random`.
Result<at::Tensor> sample_ints(OpContext& ctx, const std::vector<std::int64_t>& sizes,
                               const ir::Distribution& dist, const DType& d) {
  using ir::DistributionKind;
  const auto dopts = at::TensorOptions().dtype(at::kDouble).device(ctx.device());
  switch (dist.kind) {
    case DistributionKind::Default:
      // rand's StandardUniform over the whole type: the low bits of a 64-bit draw (out() narrows).
      return random_bits(ctx, sizes);
    case DistributionKind::Uniform: {
      TB_TRY_ASSIGN(const std::int64_t lo, f64_elem(dist.a, d));
      TB_TRY_ASSIGN(const std::int64_t hi, f64_elem(dist.b, d));
      if (key_of(lo, d) >= key_of(hi, d)) {
        return make_error(ErrorCode::kInvalidArgument, "Uniform({}, {}): the range of {} is empty",
                          dist.a, dist.b, d.name());
      }
      const std::uint64_t range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
      return random_below(ctx, sizes, range) + lo;  // wrapping
    }
    case DistributionKind::Bernoulli:
      if (!(dist.a >= 0.0 && dist.a <= 1.0)) {
        return make_error(ErrorCode::kInvalidArgument, "Bernoulli({}): p must be in [0, 1]",
                          dist.a);
      }
      return at::empty(sizes, dopts).bernoulli_(dist.a, ctx.generator()).to(at::kLong);
    case DistributionKind::Normal: {
      if (!(std::isfinite(dist.b) && dist.b >= 0.0)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "Normal({}, {}): std must be finite and non-negative", dist.a, dist.b);
      }
      const at::Tensor v = at::empty(sizes, dopts).normal_(dist.a, dist.b, ctx.generator()).trunc();
      const auto [lo, hi] = int_range(d);
      if (v.numel() > 0 && !v.ge(lo).logical_and(v.lt(hi)).all().item<bool>()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "Normal({}, {}): a sample cannot be represented as {}", dist.a, dist.b,
                          d.name());
      }
      if (!is_u64(d)) return v.to(at::kLong);
      const at::Tensor big = v.ge(kTwo63);
      const at::Tensor k = at::where(big, v - kTwo63, v).to(at::kLong);
      return at::where(big, k + kI64Min, k);
    }
  }
  return make_error(ErrorCode::kInvalidArgument, "unknown distribution");
}

Status lower_int_random(OpContext& ctx, const ir::RandomOpIr& op) {
  // NumericFloat.IntRandom (never sent by Burn's client; its reference executor panics): integer
  // samples as an I64 int_random would draw them, stored in the float out dtype.
  const DType sample_kind = op.out.dtype.is_float() ? DType(DTypeKind::I64) : op.out.dtype;
  const auto sizes = sizes_of(op.out);
  TB_TRY_ASSIGN(at::Tensor v, sample_ints(ctx, sizes, op.distribution, sample_kind));
  if (op.out.dtype.is_float()) v = v.to(at::kDouble);
  return ctx.out(op.out, v);
}

// ---- Pad -------------------------------------------------------------------------------------

Status lower_pad(OpContext& ctx, const ir::PadOpIr& op) {
  const at::Tensor& x = ctx.in(op.input);
  const auto rank = static_cast<std::size_t>(x.dim());
  if (op.padding.size() != rank) {
    return ctx.invalid("Pad: {} padding pairs for a tensor of rank {}", op.padding.size(), rank);
  }
  const DType& d = op.input.dtype;
  if (op.mode.kind == ir::PadModeKind::Constant) {
    // PadMode::Constant holds an f32; the backend then fills with Scalar::Float(value).
    const ScalarIr value = ScalarIr::f(static_cast<double>(scalar_to_f32(op.mode.value)));
    TB_TRY_ASSIGN(at::Tensor v, fill_value(ctx, value, d));
    std::vector<std::int64_t> sizes(rank);
    for (std::size_t i = 0; i < rank; ++i) {
      sizes[i] = x.size(static_cast<std::int64_t>(i)) +
                 static_cast<std::int64_t>(op.padding[i].first + op.padding[i].second);
    }
    at::Tensor out = at::empty(sizes, ctx.options(d));
    out.fill_(v);
    at::Tensor center = out;
    for (std::size_t i = 0; i < rank; ++i) {
      center = center.narrow(static_cast<std::int64_t>(i),
                             static_cast<std::int64_t>(op.padding[i].first), x.size(i));
    }
    center.copy_(x);
    return ctx.out(op.out, out);
  }
  const bool reflect = op.mode.kind == ir::PadModeKind::Reflect;
  for (std::size_t i = 0; i < rank; ++i) {
    const auto [before, after] = op.padding[i];
    const auto size = static_cast<std::uint64_t>(x.size(i));
    if (reflect && !(before < size && after < size)) {
      return ctx.invalid("Pad: reflect padding ({}, {}) must be less than dimension {}'s size {}",
                         before, after, i, size);
    }
    if (!reflect && (before != 0 || after != 0) && size == 0) {
      return ctx.invalid("Pad: cannot apply edge padding to empty dimension {}", i);
    }
  }
  // Reflect / Edge: gather along each padded dimension with computed source indices.
  at::Tensor r = x;
  const auto lopts = at::TensorOptions().dtype(at::kLong).device(ctx.device());
  for (std::size_t i = 0; i < rank; ++i) {
    const auto [before, after] = op.padding[i];
    if (before == 0 && after == 0) continue;
    const auto n = x.size(static_cast<std::int64_t>(i));
    const auto b = static_cast<std::int64_t>(before);
    const auto total = n + b + static_cast<std::int64_t>(after);
    at::Tensor src = at::arange(total, lopts) - b;
    if (reflect) {
      src = src.abs();                                     // before: index -k -> k
      src = at::where(src.ge(n), 2 * (n - 1) - src, src);  // after: n-1+k -> n-1-k
    } else {
      src = src.clamp(0, n - 1);
    }
    r = r.index_select(static_cast<std::int64_t>(i), src);
  }
  return ctx.out(op.out, r);
}

}  // namespace

Status lower_arith(Arith arith_op, OpContext& ctx, const ir::BinaryOpIr& op) {
  const at::Tensor& a = ctx.in(op.lhs);
  TB_TRY_ASSIGN(at::Tensor r,
                arith(arith_op, a, like_lhs(ctx.in(op.rhs), a), op.lhs.dtype, numel_of(op.out)));
  return ctx.out(op.out, r);
}

Status lower_arith_scalar(Arith arith_op, OpContext& ctx, const ir::ScalarOpIr& op) {
  const DType& d = op.lhs.dtype;
  const IntConv conv =
      (arith_op == Arith::kDiv || arith_op == Arith::kRem) ? IntConv::kStrict : IntConv::kWrapping;
  TB_TRY_ASSIGN(at::Tensor s, scalar_operand(ctx, op.rhs, d, conv));
  TB_TRY_ASSIGN(at::Tensor r, arith(arith_op, ctx.in(op.lhs), s, d, numel_of(op.out)));
  return ctx.out(op.out, r);
}

Status lower_compare(Cmp cmp, OpContext& ctx, const ir::BinaryOpIr& op) {
  const at::Tensor& a = ctx.in(op.lhs);
  return ctx.out(op.out, compare(cmp, a, like_lhs(ctx.in(op.rhs), a), op.lhs.dtype));
}

Status lower_compare_elem(Cmp cmp, OpContext& ctx, const ir::ScalarOpIr& op) {
  const DType& d = op.lhs.dtype;
  TB_TRY_ASSIGN(at::Tensor s, scalar_operand(ctx, op.rhs, d, IntConv::kStrict));
  return ctx.out(op.out, compare(cmp, ctx.in(op.lhs), s, d));
}

Status lower_Numeric_Abs(OpContext& ctx, const ir::UnaryOpIr& op) {
  return lower_abs(ctx, op);
}

Status lower_Numeric_Neg(OpContext& ctx, const ir::UnaryOpIr& op) {
  return lower_neg(ctx, op);
}

Status lower_Numeric_Sign(OpContext& ctx, const ir::UnaryOpIr& op) {
  return lower_sign(ctx, op);
}

Status lower_Numeric_Clamp(OpContext& ctx, const ir::ClampOpIr& op) {
  return lower_clamp(ctx, op);
}

Status lower_Numeric_ClampMin(OpContext& ctx, const ir::ScalarOpIr& op) {
  return lower_clamp_one<true>(ctx, op);
}

Status lower_Numeric_ClampMax(OpContext& ctx, const ir::ScalarOpIr& op) {
  return lower_clamp_one<false>(ctx, op);
}

Status lower_Numeric_Powi(OpContext& ctx, const ir::BinaryOpIr& op) {
  return lower_powi(ctx, op);
}

Status lower_Numeric_PowiScalar(OpContext& ctx, const ir::ScalarOpIr& op) {
  return lower_powi_scalar(ctx, op);
}

Status lower_Numeric_Full(OpContext& ctx, const ir::FullOpIr& op) {
  return lower_full(ctx, op);
}

Status lower_Numeric_IntRandom(OpContext& ctx, const ir::RandomOpIr& op) {
  return lower_int_random(ctx, op);
}

Status lower_Numeric_Pad(OpContext& ctx, const ir::PadOpIr& op) {
  return lower_pad(ctx, op);
}

}  // namespace tb::backend::libtorch
