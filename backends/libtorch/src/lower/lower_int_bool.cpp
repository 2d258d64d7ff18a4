// IntOperationIr and BoolOperationIr: casts, bitwise ops, shifts, exact integer matmul and logic,
// with burn-flex's semantics on every int dtype (U16/U32/U64 live in wider or same-width signed
// storage, see dtype.hpp).
#include <algorithm>
#include <cstdint>
#include <limits>

#include <ATen/ExpandUtils.h>

#include "lower/lower_families.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::DTypeKind;
using ir::OpKind;

int bit_width(const ir::DType& d) {
  switch (d.kind) {
    case DTypeKind::I64:
    case DTypeKind::U64:
      return 64;
    case DTypeKind::I32:
    case DTypeKind::U32:
      return 32;
    case DTypeKind::I16:
    case DTypeKind::U16:
      return 16;
    default:
      return 8;
  }
}

// The bits of a U64 (stored as int64) shifted right by one without sign extension.
at::Tensor logical_shift_right_1(const at::Tensor& x) {
  return at::bitwise_right_shift(x, scalar_like(std::int64_t{1}, x))
      .bitwise_and(scalar_like(std::numeric_limits<std::int64_t>::max(), x));
}

// ---- Casts -------------------------------------------------------------------------------------

// Rust `int as f32` / `as f64` (correctly rounded); f16 / bf16 round from the f32 value, as
// burn-flex does (`f16::from_f32(x as f32)`).
at::Tensor int_to_float(const at::Tensor& x, const ir::DType& in, const ir::DType& out) {
  const at::ScalarType target = out.kind == DTypeKind::F64 ? at::kDouble : at::kFloat;
  if (in.kind != DTypeKind::U64) return small_cpu::to(x, target);
  // u64 ≥ 2^63 (negative storage): halve with a sticky low bit, convert, double — the classic
  // exact u64 → float conversion (the sticky bit keeps round-to-nearest-even correct).
  const at::Tensor halved =
      logical_shift_right_1(x).bitwise_or(x.bitwise_and(scalar_like(std::int64_t{1}, x)));
  return at::where(x.lt(0), halved.to(target) * 2, x.to(target));
}

// ---- Bitwise -----------------------------------------------------------------------------------

// burn-flex int_shift: Rust wrapping_shl / wrapping_shr on the dtype's own width — the amount is
// masked to width − 1 (so negative or too-large amounts wrap around), left shifts drop the bits
// shifted out, right shifts are arithmetic for signed dtypes and logical for unsigned ones.
at::Tensor shift(const at::Tensor& lhs, const at::Tensor& amount, const ir::DType& dtype,
                 bool left) {
  const at::Tensor x = lhs.to(at::kLong);
  const at::Tensor n =
      amount.to(at::kLong).bitwise_and(scalar_like(std::int64_t{bit_width(dtype) - 1}, x));
  if (left) return at::bitwise_left_shift(x, n);  // out() truncates to the dtype's width
  at::Tensor r = at::bitwise_right_shift(x, n);   // arithmetic on int64
  if (dtype.kind == DTypeKind::U64) {
    // Clear the copies of the sign bit: keep the low 64 − n bits (all of them for n = 0).
    const at::Tensor mask =
        at::where(n.eq(0), scalar_like(std::int64_t{-1}, n),
                  at::bitwise_right_shift(scalar_like(std::numeric_limits<std::int64_t>::max(), n),
                                          (n - 1).clamp_min(0)));
    r = r.bitwise_and(mask);
  }
  // U8/U16/U32 are stored zero-extended (non-negative): the arithmetic shift is logical there.
  return r;
}

// ---- Matmul ------------------------------------------------------------------------------------

// Exact integer matmul with wrapping arithmetic, computed in int64 (whose wrap-around agrees with
// every narrower width after truncation) by chunks of the inner dimension. ATen has no integer
// matmul on CUDA, and going through float (as burn-tch does) is inexact.
at::Tensor int_matmul(const at::Tensor& lhs, const at::Tensor& rhs) {
  const std::int64_t r = lhs.dim();
  const std::vector<std::int64_t> batch =
      at::infer_size(lhs.sizes().slice(0, r - 2), rhs.sizes().slice(0, r - 2));
  const std::int64_t m = lhs.size(r - 2), k = lhs.size(r - 1), n = rhs.size(r - 1);
  std::vector<std::int64_t> a_sizes = batch, b_sizes = batch, out_sizes = batch;
  a_sizes.insert(a_sizes.end(), {m, k});
  b_sizes.insert(b_sizes.end(), {k, n});
  out_sizes.insert(out_sizes.end(), {m, n});
  const at::Tensor a = lhs.to(at::kLong).expand(a_sizes);
  const at::Tensor b = rhs.to(at::kLong).expand(b_sizes);
  at::Tensor out = at::zeros(out_sizes, a.options());
  const std::int64_t per_step = std::max<std::int64_t>(1, out.numel());
  constexpr std::int64_t kBudget = std::int64_t{1} << 22;  // elements of one partial product
  const std::int64_t chunk = std::max<std::int64_t>(1, kBudget / per_step);
  for (std::int64_t k0 = 0; k0 < k; k0 += chunk) {
    const std::int64_t len = std::min(chunk, k - k0);
    // [..., m, len, 1] * [..., 1, len, n] → [..., m, len, n], summed over len.
    const at::Tensor prod =
        a.narrow(-1, k0, len).unsqueeze(-1) * b.narrow(-2, k0, len).unsqueeze(-3);
    out.add_(prod.sum(-2));
  }
  return out;
}

}  // namespace

// ---- Int ----
Status lower_Int_IntoFloat(OpContext& ctx, const ir::CastOpIr& op) {
  if (!op.out.dtype.is_float()) {
    return ctx.invalid("IntoFloat to {}, which is not a float dtype", op.out.dtype.name());
  }
  return ctx.out(op.out, int_to_float(ctx.in(op.input), op.input.dtype, op.out.dtype));
}

// On the storage type; out() masks U16/U32 back into range (~x of a u8 in kByte is exact).
Status lower_Int_BitwiseNot(OpContext& ctx, const ir::UnaryOpIr& op) {
  return ctx.out(op.out, at::bitwise_not(ctx.in(op.input)));
}

// The shift families: BitwiseLeftShift / BitwiseRightShift (shift) and their Scalar forms
// (shift_scalar).
Status lower_shift(OpContext& ctx, const ir::BinaryOpIr& op, Shift dir) {
  return ctx.out(op.out, shift(ctx.in(op.lhs), ctx.in(op.rhs), op.out.dtype, dir == Shift::kLeft));
}

Status lower_shift_scalar(OpContext& ctx, const ir::ScalarOpIr& op, Shift dir) {
  const at::Tensor& x = ctx.in(op.lhs);
  return ctx.out(op.out, shift(x, at::scalar_tensor(op.rhs.as_int(), x.options().dtype(at::kLong)),
                               op.out.dtype, dir == Shift::kLeft));
}

Status lower_Int_Matmul(OpContext& ctx, const ir::MatmulOpIr& op) {
  const at::Tensor& lhs = ctx.in(op.lhs);
  const at::Tensor& rhs = ctx.in(op.rhs);
  if (lhs.dim() < 2 || lhs.dim() != rhs.dim() || lhs.size(-1) != rhs.size(-2)) {
    return ctx.invalid("matmul of {} and {}: needs the same rank >= 2 and matching inner dims",
                       shape_string(lhs.sizes()), shape_string(rhs.sizes()));
  }
  return ctx.out(op.out, int_matmul(lhs, rhs));
}

// ---- Bool ----
// Bool inputs are kBool whatever their store; out() gives 1 / 0 in the declared dtype.
Status lower_Bool_IntoFloat(OpContext& ctx, const ir::CastOpIr& op) {
  if (!op.out.dtype.is_float()) {
    return ctx.invalid("IntoFloat to {}, which is not a float dtype", op.out.dtype.name());
  }
  return ctx.out(op.out, ctx.in(op.input).ne(0));
}

Status lower_Bool_IntoInt(OpContext& ctx, const ir::CastOpIr& op) {
  if (!op.out.dtype.is_int() && !op.out.dtype.is_uint()) {
    return ctx.invalid("IntoInt to {}, which is not an integer dtype", op.out.dtype.name());
  }
  return ctx.out(op.out, ctx.in(op.input).ne(0));
}

Status lower_Bool_Not(OpContext& ctx, const ir::UnaryOpIr& op) {
  return ctx.out(op.out, at::logical_not(ctx.in(op.input)));
}

}  // namespace tb::backend::libtorch
