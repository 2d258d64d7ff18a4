// FloatOperationIr (except Quantize / Dequantize, see lower_quant.cpp): element-wise float math,
// casts to int, matmul, cross, random sampling and grid sampling, with burn-flex's semantics.
//
// Half-precision inputs (f16 / bf16) are widened to f32 for the computation and rounded once when
// stored (lower_families.hpp). The element-wise rows are families, registered from the table.
#include <cmath>
#include <cstdint>
#include <limits>

#include "lower/lower_families.hpp"
#include "lower/small_cpu.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::DTypeKind;
using ir::OpKind;

// ---- PowfScalar --------------------------------------------------------------------------------

// burn-flex float_powf_scalar: an integral exponent goes through powi_scalar (0 → ones, 1 → x,
// 2 → x·x, −1 → 1/x, −2 → 1/(x·x)), everything else through powf (IEEE pow). ATen's pow(x, Scalar)
// special-cases 0.5 / −0.5 / 3 as sqrt / rsqrt / x·x·x, which differ from pow at −0, −inf and in
// the last bit; a 0-dim exponent tensor takes the plain pow kernel instead.
at::Tensor powf_scalar(const at::Tensor& x, const ir::ScalarIr& e) {
  const double v = e.as_double();
  const bool integral =
      e.kind() != ir::ScalarKind::Float || (std::isfinite(v) && std::floor(v) == v);
  if (integral && std::abs(v) <= 2) {
    const auto i = static_cast<int>(v);
    switch (i) {
      case 0:
        return at::ones_like(x);
      case 1:
        return x.clone();
      case 2:
        return x * x;
      case -1:
        return at::reciprocal(x);
      case -2:
        return at::reciprocal(x * x);
      default:
        break;
    }
  }
  return at::pow(x, scalar_like(v, x));
}

// ---- IntoInt -----------------------------------------------------------------------------------

// Rust's `float as int` (what burn-flex float_into_int does, reading the float as f64):
// truncation toward zero, saturation at the type's bounds, NaN → 0. U64 is stored by bit pattern.
at::Tensor float_to_int(const at::Tensor& input, const ir::DType& out) {
  constexpr double two63 = 9223372036854775808.0;
  constexpr double two64 = 18446744073709551616.0;
  at::Tensor x = input.to(at::kDouble);
  x = at::where(at::isnan(x), at::zeros_like(x), at::trunc(x));
  auto clamp_to = [&](double lo, double hi) { return x.clamp(lo, hi).to(storage_type(out)); };
  switch (out.kind) {
    case DTypeKind::I64: {
      const at::Tensor in_range = x.lt(two63);
      at::Tensor r = at::where(in_range, x.clamp_min(-two63), at::zeros_like(x)).to(at::kLong);
      return at::where(in_range, r, scalar_like(std::numeric_limits<std::int64_t>::max(), r));
    }
    case DTypeKind::U64: {
      // [2^63, 2^64) → the negative int64 with the same bits (x − 2^64 is exact in f64 there).
      const at::Tensor y = x.clamp_min(0);
      const at::Tensor saturated = y.ge(two64);
      at::Tensor v = at::where(y.ge(two63), y - two64, y);
      v = at::where(saturated, at::zeros_like(v), v).to(at::kLong);
      return at::where(saturated, scalar_like(std::int64_t{-1}, v), v);
    }
    case DTypeKind::I32:
      return clamp_to(-2147483648.0, 2147483647.0);
    case DTypeKind::I16:
      return clamp_to(-32768.0, 32767.0);
    case DTypeKind::I8:
      return clamp_to(-128.0, 127.0);
    case DTypeKind::U32:
      return clamp_to(0.0, 4294967295.0);
    case DTypeKind::U16:
      return clamp_to(0.0, 65535.0);
    case DTypeKind::U8:
      return clamp_to(0.0, 255.0);
    default:
      return x;  // not an int dtype: out() reports nothing useful; the caller checks first
  }
}

}  // namespace

Status lower_Float_IntoInt(OpContext& ctx, const ir::CastOpIr& op) {
  if (!op.out.dtype.is_int() && !op.out.dtype.is_uint()) {
    return ctx.invalid("IntoInt to {}, which is not an integer dtype", op.out.dtype.name());
  }
  return ctx.out(op.out, float_to_int(ctx.in(op.input), op.out.dtype));
}

// ---- IsInf, IsNan: a loop on small CPU tensors, ATen's otherwise --------------------------------

// The float_test family: IsInf and IsNan.
Status float_test(OpContext& ctx, const ir::UnaryOpIr& op, small_cpu::FloatTest test) {
  const at::Tensor x = widen(ctx.in(op.input));
  if (auto result = small_cpu::float_test(x, test)) return ctx.out(op.out, *result);
  return ctx.out(op.out, test == small_cpu::FloatTest::kInf ? at::isinf(x) : at::isnan(x));
}

// ---- Matmul, Cross -----------------------------------------------------------------------------

Status lower_Float_Matmul(OpContext& ctx, const ir::MatmulOpIr& op) {
  const at::Tensor& lhs = ctx.in(op.lhs);
  const at::Tensor& rhs = ctx.in(op.rhs);
  if (lhs.dim() < 2 || lhs.dim() != rhs.dim()) {
    return ctx.invalid("matmul needs two tensors of the same rank >= 2, got ranks {} and {}",
                       lhs.dim(), rhs.dim());
  }
  at::ScalarType st = at::promote_types(lhs.scalar_type(), rhs.scalar_type());
  // Half matmul: no CPU kernel in older LibTorch; burn-flex accumulates in f32 as well.
  if (is_half(st) && ctx.device().is_cpu()) st = at::kFloat;
  if (auto outer = small_cpu::outer_product(lhs, rhs)) return ctx.out(op.out, *outer);
  return ctx.out(op.out, at::matmul(lhs.to(st), rhs.to(st)));
}

// burn-flex float_cross: c = (a1·b2 − a2·b1, a2·b0 − a0·b2, a0·b1 − a1·b0) along `dim`, the other
// dims broadcast.
Status lower_Float_Cross(OpContext& ctx, const ir::CrossOpIr& op) {
  const at::Tensor& lhs = ctx.in(op.lhs);
  const at::Tensor& rhs = ctx.in(op.rhs);
  const auto dim = static_cast<std::int64_t>(op.dim);
  if (dim >= lhs.dim() || dim >= rhs.dim() || lhs.size(dim) != 3 || rhs.size(dim) != 3) {
    return ctx.invalid("cross product needs dimension {} of size 3 in both operands, got {} and {}",
                       dim, shape_string(lhs.sizes()), shape_string(rhs.sizes()));
  }
  const at::ScalarType st = compute_type(lhs, rhs);
  const at::Tensor a = lhs.to(st), b = rhs.to(st);
  auto c = [&](const at::Tensor& t, std::int64_t i) { return t.narrow(dim, i, 1); };
  const at::Tensor c0 = c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1);
  const at::Tensor c1 = c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2);
  const at::Tensor c2 = c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0);
  return ctx.out(op.out, at::cat({c0, c1, c2}, dim));
}

// ---- Random ------------------------------------------------------------------------------------

namespace {

// The largest value of `st` below `v` (v is representable in st).
double prev_representable(double v, at::ScalarType st) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  auto step_bits = [](std::uint16_t bits) -> std::uint16_t {
    if ((bits & 0x7FFF) == 0) return 0x8001;  // ±0 → the smallest negative subnormal
    return (bits & 0x8000) ? bits + 1 : bits - 1;
  };
  switch (st) {
    case at::kDouble:
      return std::nextafter(v, -inf);
    case at::kHalf: {
      c10::Half h(static_cast<float>(v));
      h.x = step_bits(h.x);
      return static_cast<float>(h);
    }
    case at::kBFloat16: {
      c10::BFloat16 b(static_cast<float>(v));
      b.x = step_bits(b.x);
      return static_cast<float>(b);
    }
    default:
      return std::nextafter(static_cast<float>(v), -std::numeric_limits<float>::infinity());
  }
}

double round_to(double v, at::ScalarType st) {
  return at::scalar_tensor(v, at::kDouble).to(st).item<double>();
}

}  // namespace

// burn-std Distribution sampled like rand does (Default = U[0, 1), Uniform(low, high) = U[low,
// high) with both bounds first converted to the element type, Bernoulli(p) ∈ {0, 1},
// Normal(mean, std)), from the executor's generator (Executor::seed makes it reproducible).
Status lower_Float_Random(OpContext& ctx, const ir::RandomOpIr& op) {
  if (!op.out.dtype.is_float()) {
    return ctx.invalid("Random into {}, which is not a float dtype", op.out.dtype.name());
  }
  const std::vector<std::int64_t> sizes(op.out.shape.dims.begin(), op.out.shape.dims.end());
  const at::ScalarType st = storage_type(op.out.dtype);
  const at::ScalarType sample_type = st == at::kDouble ? at::kDouble : at::kFloat;
  const auto sample_options = ctx.options(op.out.dtype).dtype(sample_type);
  at::Generator& gen = ctx.generator();
  const auto& d = op.distribution;
  switch (d.kind) {
    case ir::DistributionKind::Default:
    case ir::DistributionKind::Uniform: {
      const bool uniform = d.kind == ir::DistributionKind::Uniform;
      const double low = round_to(uniform ? d.a : 0.0, st);
      const double high = round_to(uniform ? d.b : 1.0, st);
      if (!(std::isfinite(low) && std::isfinite(high) && low < high && std::isfinite(high - low))) {
        return ctx.invalid("Uniform({}, {}) needs finite bounds with low < high", d.a, d.b);
      }
      at::Tensor x = at::empty(sizes, sample_options).uniform_(low, high, gen).to(st);
      // Rounding (to the sample type, then to f16/bf16) can reach `high`: keep [low, high).
      x = at::where(x.ge(high), scalar_like(prev_representable(high, st), x), x);
      x = at::where(x.lt(low), scalar_like(low, x), x);
      return ctx.out(op.out, x);
    }
    case ir::DistributionKind::Bernoulli: {
      if (!(d.a >= 0.0 && d.a <= 1.0)) {
        return ctx.invalid("Bernoulli({}) needs a probability in [0, 1]", d.a);
      }
      return ctx.out(op.out, at::empty(sizes, sample_options).bernoulli_(d.a, gen));
    }
    case ir::DistributionKind::Normal: {
      if (!std::isfinite(d.b)) {
        return ctx.invalid("Normal({}, {}) needs a finite standard deviation", d.a, d.b);
      }
      // rand_distr accepts a negative std (mean + std·z): the same law as |std|.
      return ctx.out(op.out, at::empty(sizes, sample_options).normal_(d.a, std::abs(d.b), gen));
    }
  }
  return ctx.invalid("unknown distribution");
}

// ---- GridSample2d ------------------------------------------------------------------------------

namespace {

// Rust `f64 as i64` (saturating, NaN → 0) of an integral-valued f64 tensor.
at::Tensor saturating_to_long(const at::Tensor& x) {
  constexpr double two63 = 9223372036854775808.0;
  const at::Tensor clean = at::where(at::isnan(x), at::zeros_like(x), x);
  const at::Tensor in_range = clean.lt(two63);
  at::Tensor r = at::where(in_range, clean.clamp_min(-two63), at::zeros_like(clean)).to(at::kLong);
  return at::where(in_range, r, scalar_like(std::numeric_limits<std::int64_t>::max(), r));
}

// burn-flex reflect_coordinate: triangle wave within [min, max] ([0, size−1] with align_corners,
// [−0.5, size−0.5] without).
at::Tensor reflect(const at::Tensor& coord, std::int64_t size, bool align_corners) {
  const double size_f = static_cast<double>(size);
  const double min_val = align_corners ? 0.0 : -0.5;
  const double max_val = align_corners ? size_f - 1.0 : size_f - 0.5;
  const double span = max_val - min_val;
  if (span <= 0.0) return at::full_like(coord, min_val);
  const double period = 2.0 * span;
  const at::Tensor x = at::abs(coord - min_val);
  const at::Tensor x_mod = x - at::floor(x / period) * period;
  return span - at::abs(x_mod - span) + min_val;
}

// burn-flex grid_sample_2d for Nearest and Bilinear, computed in f64 like burn-flex (so the
// coordinate math and weights keep full precision for every dtype), including its handling of
// non-finite grid coordinates (Border: the centre; otherwise left unpadded).
at::Tensor grid_sample_flex(const at::Tensor& input, const at::Tensor& grid, bool bilinear,
                            ir::GridSamplePaddingModeIr padding, bool align) {
  using Pad = ir::GridSamplePaddingModeIr;
  const std::int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  const std::int64_t h_out = grid.size(1), w_out = grid.size(2);
  const at::Tensor tensor = input.to(at::kDouble);
  const at::Tensor g = grid.to(at::kDouble);
  const at::Tensor gx = g.select(3, 0), gy = g.select(3, 1);  // [N, Hout, Wout]
  const double wf = static_cast<double>(w), hf = static_cast<double>(h);
  at::Tensor px, py;
  if (align) {
    px = (gx + 1.0) * (wf - 1.0) / 2.0;
    py = (gy + 1.0) * (hf - 1.0) / 2.0;
  } else {
    px = (gx + 1.0) * wf / 2.0 - 0.5;
    py = (gy + 1.0) * hf / 2.0 - 0.5;
  }
  const at::Tensor finite = at::isfinite(px).logical_and(at::isfinite(py));
  if (padding == Pad::Border) {
    px = at::where(finite, px.clamp(0.0, wf - 1.0), scalar_like((wf - 1.0) / 2.0, px));
    py = at::where(finite, py.clamp(0.0, hf - 1.0), scalar_like((hf - 1.0) / 2.0, py));
  } else if (padding == Pad::Reflection) {
    px = at::where(finite, reflect(px, w, align), px);
    py = at::where(finite, reflect(py, h, align), py);
  }

  const at::Tensor flat = tensor.reshape({n, c, h * w});
  // The input value at integer coordinates (xi, yi): zero outside for Zeros, the clamped
  // index otherwise.
  auto read = [&](const at::Tensor& xi, const at::Tensor& yi) {
    const at::Tensor xc = xi.clamp(0, w - 1), yc = yi.clamp(0, h - 1);
    const at::Tensor index = (yc * w + xc).reshape({n, 1, h_out * w_out}).expand({n, c, -1});
    at::Tensor v = at::gather(flat, 2, index).reshape({n, c, h_out, w_out});
    if (padding == Pad::Zeros) {
      const at::Tensor inside =
          xi.ge(0).logical_and(xi.lt(w)).logical_and(yi.ge(0)).logical_and(yi.lt(h));
      v = at::where(inside.unsqueeze(1), v, scalar_like(0.0, v));
    }
    return v;
  };

  if (!bilinear) {
    // Ties round to even, like PyTorch's nearbyint (libm::roundeven in burn-flex).
    return read(saturating_to_long(at::round(px)), saturating_to_long(at::round(py)));
  }
  const at::Tensor fx = at::floor(px), fy = at::floor(py);
  const at::Tensor x0 = saturating_to_long(fx), y0 = saturating_to_long(fy);
  const at::Tensor x1 = x0 + 1, y1 = y0 + 1;
  const at::Tensor xf = (px - fx).unsqueeze(1), yf = (py - fy).unsqueeze(1);
  const at::Tensor w00 = (1.0 - xf) * (1.0 - yf);
  const at::Tensor w01 = (1.0 - xf) * yf;
  const at::Tensor w10 = xf * (1.0 - yf);
  const at::Tensor w11 = xf * yf;
  return read(x0, y0) * w00 + read(x0, y1) * w01 + read(x1, y0) * w10 + read(x1, y1) * w11;
}

}  // namespace

Status lower_Float_GridSample2d(OpContext& ctx, const ir::GridSample2dOpIr& op) {
  using Mode = ir::InterpolateModeIr;
  const at::Tensor& input = ctx.in(op.tensor);
  const at::Tensor& grid = ctx.in(op.grid);
  if (input.dim() != 4 || grid.dim() != 4 || grid.size(3) != 2 || grid.size(0) != input.size(0)) {
    return ctx.invalid(
        "grid_sample_2d needs an input [N, C, H, W] and a grid [N, Hout, Wout, 2], "
        "got {} and {}",
        shape_string(input.sizes()), shape_string(grid.sizes()));
  }
  const auto& o = op.options;
  const std::vector<std::int64_t> out_sizes = {input.size(0), input.size(1), grid.size(1),
                                               grid.size(2)};
  if (o.mode != Mode::Nearest && o.mode != Mode::Bilinear && o.mode != Mode::Bicubic) {
    return ctx.unsupported("grid_sample_2d has no {} mode (Nearest, Bilinear and Bicubic only)",
                           ir::enum_name(o.mode));
  }
  if (out_sizes[0] * out_sizes[1] * out_sizes[2] * out_sizes[3] == 0) {
    return ctx.out(op.out, at::empty(out_sizes, input.options()));
  }
  if (input.size(2) == 0 || input.size(3) == 0) {
    return ctx.invalid("grid_sample_2d samples an empty input {}", shape_string(input.sizes()));
  }
  if (o.mode == Mode::Bicubic) {
    // No Burn backend implements bicubic grid sampling; ATen's (A = −0.75, padding applied per
    // tap) is the natural definition.
    const at::ScalarType st = compute_type(input, grid);
    const std::int64_t padding = o.padding_mode == ir::GridSamplePaddingModeIr::Zeros    ? 0
                                 : o.padding_mode == ir::GridSamplePaddingModeIr::Border ? 1
                                                                                         : 2;
    return ctx.out(op.out,
                   at::grid_sampler_2d(input.to(st), grid.to(st), 2, padding, o.align_corners));
  }
  return ctx.out(op.out, grid_sample_flex(input, grid, o.mode == Mode::Bilinear, o.padding_mode,
                                          o.align_corners));
}

Status lower_Float_PowfScalar(OpContext& ctx, const ir::ScalarOpIr& op) {
  return ctx.out(op.out, powf_scalar(widen(ctx.in(op.lhs)), op.rhs));
}

// C fmod (the sign of the dividend), as Burn 0.23's float_fmod_scalar; the divisor is rounded to
// the tensor's dtype first, as Burn's `rhs.elem::<E>()` does.
Status lower_Float_FmodScalar(OpContext& ctx, const ir::ScalarOpIr& op) {
  const auto& x = ctx.in(op.lhs);
  const auto wide = widen(x);
  const auto divisor = at::scalar_tensor(op.rhs.as_double(), x.options()).to(wide.scalar_type());
  return ctx.out(op.out, at::fmod(wide, divisor));
}

}  // namespace tb::backend::libtorch
