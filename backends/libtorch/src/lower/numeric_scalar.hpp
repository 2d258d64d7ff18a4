// The helpers both halves of NumericOperationIr's element-wise lowering share: scalar conversions
// (num_traits semantics) and U64 order. lower_numeric.cpp (arithmetic, comparisons, clamp, powi)
// and lower_numeric_fill.cpp (full, int random, pad) include it; nothing else should.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "lower/lower_families.hpp"

namespace tb::backend::libtorch {

inline constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
inline constexpr double kTwo63 = 9223372036854775808.0;
inline constexpr double kTwo64 = 18446744073709551616.0;

// The ATen type a float op computes in: f32 for the half types (burn-flex rounds once from f32).
inline at::ScalarType float_compute_type(const ir::DType& d) {
  return d.kind == ir::DTypeKind::F64 ? at::kDouble : at::kFloat;
}

// Float operands in the compute type.
inline at::Tensor fc(const at::Tensor& t, const ir::DType& d) {
  const auto ct = float_compute_type(d);
  return t.scalar_type() == ct ? t : t.to(ct);
}

inline bool is_u64(const ir::DType& d) {
  return d.kind == ir::DTypeKind::U64;
}

// Rust's `f64 as f32`: round to nearest, overflow to infinity (no UB for large finite values).
inline float f64_to_f32(double v) {
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

inline std::optional<std::int64_t> scalar_to_i64(const ir::ScalarIr& s) {
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

inline std::optional<std::uint64_t> scalar_to_u64(const ir::ScalarIr& s) {
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

inline std::string scalar_string(const ir::ScalarIr& s) {
  return std::visit([](auto v) { return fmt::format("{}", v); }, s.value);
}

// Narrows an i64 to a Burn integer kind as Rust's `as` does; the result is the value the storage
// holds (U64 as its bit pattern).
inline std::int64_t wrap_to(std::int64_t v, const ir::DType& d) {
  switch (d.kind) {
    case ir::DTypeKind::I32:
      return static_cast<std::int32_t>(v);
    case ir::DTypeKind::I16:
      return static_cast<std::int16_t>(v);
    case ir::DTypeKind::I8:
      return static_cast<std::int8_t>(v);
    case ir::DTypeKind::U32:
      return static_cast<std::uint32_t>(v);
    case ir::DTypeKind::U16:
      return static_cast<std::uint16_t>(v);
    case ir::DTypeKind::U8:
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
inline Result<std::int64_t> int_elem(const ir::ScalarIr& s, const ir::DType& d, IntConv conv) {
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
inline at::Tensor float_scalar_tensor(const OpContext& ctx, double v, const ir::DType& d) {
  if (d.kind == ir::DTypeKind::F64) return at::scalar_tensor(v, ctx.options(d));
  const double f = static_cast<double>(f64_to_f32(v));
  at::Tensor t = at::scalar_tensor(f, ctx.options(ir::DType(ir::DTypeKind::F32)));
  return is_half(d) ? t.to(storage_type(d)) : t;
}

inline at::Tensor int_scalar_tensor(const OpContext& ctx, std::int64_t v, const ir::DType& d) {
  return at::scalar_tensor(at::Scalar(v), ctx.options(d));
}

// ---- U64 order -------------------------------------------------------------------------------

// U64 bit patterns mapped so that signed order is unsigned order.
inline at::Tensor order_key(const at::Tensor& t) {
  return t.bitwise_xor(at::Scalar(kI64Min));
}

// Unsigned a >= b on U64 bit patterns.
inline at::Tensor uge(const at::Tensor& a, const at::Tensor& b) {
  return order_key(a).ge(order_key(b));
}

// An int value of kind `d` as an int64 key whose signed order is Burn's order.
inline std::int64_t key_of(std::int64_t v, const ir::DType& d) {
  return is_u64(d) ? (v ^ kI64Min) : v;
}

}  // namespace tb::backend::libtorch
