// The keys and checks the reduction files share (lower_reduce.cpp, lower_reduce_sort.cpp).
#pragma once

#include <cstdint>
#include <limits>

#include "lower/lower_families.hpp"

namespace tb::backend::libtorch::reduce {

inline constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();

inline Status check_axis(const OpContext& ctx, const at::Tensor& x, std::uint64_t axis) {
  if (axis >= static_cast<std::uint64_t>(x.dim())) {
    return ctx.invalid("axis {} is out of range for a tensor of rank {}", axis, x.dim());
  }
  return ok();
}

// A tensor whose natural (signed / IEEE) order is Burn's order of the values of `x`, for
// max/min/arg*: floats as they are (f16/bf16 widened), U64 mapped to signed.
inline at::Tensor order_key(const at::Tensor& x, const ir::DType& d) {
  if (d.kind == ir::DTypeKind::U64) return x.bitwise_xor(kI64Min);
  return widen(x);
}

// The inverse of order_key for integer values (floats are gathered from the input instead).
inline at::Tensor from_order_key(const at::Tensor& k, const ir::DType& d) {
  if (d.kind == ir::DTypeKind::U64) return k.bitwise_xor(kI64Min);
  return k;
}

// A signed integer key whose order is Burn's sort order: total order for floats.
inline at::Tensor sort_key(const at::Tensor& x, const ir::DType& d) {
  if (!d.is_float()) return order_key(x, d);
  const at::Tensor f = widen(x);
  const bool wide = f.scalar_type() == at::kDouble;
  const at::Tensor bits = f.contiguous().view(wide ? at::kLong : at::kInt);
  const std::int64_t mask = wide ? kI64Max : std::numeric_limits<std::int32_t>::max();
  return at::where(bits.lt(0), bits.bitwise_xor(mask), bits);
}

}  // namespace tb::backend::libtorch::reduce
