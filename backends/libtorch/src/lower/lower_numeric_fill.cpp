// NumericOperationIr leaves that make values rather than compute on them: Full, IntRandom and Pad,
// under NumericFloat and NumericInt. Kept apart from lower_numeric.cpp (arithmetic, comparisons,
// clamp, powi), whose semantics notes (burn-flex 0.22.1) apply here too; the scalar conversions
// both use are in numeric_scalar.hpp.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "lower/lower_families.hpp"
#include "lower/numeric_scalar.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::DType;
using ir::DTypeKind;
using ir::ScalarIr;

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

std::vector<std::int64_t> sizes_of(const ir::TensorIr& t) {
  return std::vector<std::int64_t>(t.shape.dims.begin(), t.shape.dims.end());
}

// ---- Full ------------------------------------------------------------------------------------

// The fill value of Full / Pad(Constant) for an integer (or bool) `d`, as a 0-dim tensor in its
// storage.
Result<at::Tensor> int_fill_value(const OpContext& ctx, const ScalarIr& s, const DType& d) {
  if (d.is_bool()) return at::scalar_tensor(s.as_double() != 0, ctx.options(d));
  // int_full: `fill_value.to_i64().unwrap() as <type>`; U64 also keeps UInt bits above 2^63.
  TB_TRY_ASSIGN(const std::int64_t v, int_elem(s, d, IntConv::kWrapping));
  return int_scalar_tensor(ctx, v, d);
}

// The fill value of Full / Pad(Constant) in the storage of `d`, as a 0-dim tensor (Pad, one
// function for both categories, differs between them only here).
Result<at::Tensor> fill_value(const OpContext& ctx, const ScalarIr& s, const DType& d) {
  if (d.is_float()) return float_scalar_tensor(ctx, s.as_double(), d);
  return int_fill_value(ctx, s, d);
}

// A tensor of Full's declared shape and dtype holding `v`.
Status full_of(OpContext& ctx, const ir::FullOpIr& op, const at::Tensor& v) {
  return ctx.out(op.out, at::empty(sizes_of(op.out), ctx.options(op.out.dtype)).fill_(v));
}

}  // namespace

Status lower_NumericFloat_Full(OpContext& ctx, const ir::FullOpIr& op) {
  return full_of(ctx, op, float_scalar_tensor(ctx, op.value.as_double(), op.out.dtype));
}

Status lower_NumericInt_Full(OpContext& ctx, const ir::FullOpIr& op) {
  TB_TRY_ASSIGN(at::Tensor v, int_fill_value(ctx, op.value, op.out.dtype));
  return full_of(ctx, op, v);
}

// ---- IntRandom -------------------------------------------------------------------------------

namespace {

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

}  // namespace

Status lower_NumericFloat_IntRandom(OpContext& ctx, const ir::RandomOpIr& op) {
  // NumericFloat.IntRandom (never sent by Burn's client; its reference executor panics): integer
  // samples as an I64 int_random would draw them, stored in the float out dtype.
  const auto sizes = sizes_of(op.out);
  TB_TRY_ASSIGN(at::Tensor v, sample_ints(ctx, sizes, op.distribution, DType(DTypeKind::I64)));
  return ctx.out(op.out, v.to(at::kDouble));
}

Status lower_NumericInt_IntRandom(OpContext& ctx, const ir::RandomOpIr& op) {
  const auto sizes = sizes_of(op.out);
  TB_TRY_ASSIGN(at::Tensor v, sample_ints(ctx, sizes, op.distribution, op.out.dtype));
  return ctx.out(op.out, v);
}

// ---- Pad -------------------------------------------------------------------------------------

Status lower_Numeric_Pad(OpContext& ctx, const ir::PadOpIr& op) {
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

}  // namespace tb::backend::libtorch
