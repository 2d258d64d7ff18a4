// Separable resampling "taps" for Interpolate / InterpolateBackward (lower_interpolate.cpp):
// a per-axis coordinate map and per-mode tap weights that follow Burn 0.23's reference backend,
// burn-flex 0.23.0-pre.1 src/ops/interpolate.rs (cited as flex:LINE below). Private to this
// backend.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"

namespace tb::backend::libtorch::interp {

using Kind = ir::CoordinateTransformKind;
using Rounding = ir::NearestRoundingModeIr;

// Rust's `f64 as isize` (64-bit): saturating, NaN -> 0. flex casts unbounded coordinates this way
// (a tiny scale factor maps far outside the input), where a C++ cast would be undefined.
inline std::int64_t as_isize(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<std::int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}
// `base + offset` for a tap index, kept in range: an index beyond the input is clamped or
// skipped by every caller, and its weight is 0 (the distance is huge) wherever this saturates.
inline std::int64_t add_offset(std::int64_t base, std::int64_t off) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  if (off > 0 && base > kMax - off) return kMax;
  if (off < 0 && base < kMin - off) return kMin;
  return base + off;
}

// One spatial axis of the resampling: sizes, the axis's scale factor (as f64, flex:198) and the
// coordinate transform (axis 0 = height, 1 = width; TfCropAndResize reads roi[axis]).
struct Axis {
  std::int64_t in = 0, out = 0;
  std::optional<double> scale;
  ir::CoordinateTransformModeIr transform;
  int axis = 0;
};

// flex map_coordinate (flex:189-274): the input coordinate of output `o`, or nullopt where
// TfCropAndResize extrapolates (the output takes the extrapolation value).
inline std::optional<double> map_coordinate(const Axis& a, std::int64_t o) {
  const double l_in = static_cast<double>(a.in), l_out = static_cast<double>(a.out);
  const double x = static_cast<double>(o);
  const double s = a.scale ? *a.scale : l_out / l_in;
  // HalfPixel, PytorchHalfPixel (l_out > 1) and HalfPixelSymmetric without a scale factor
  // (flex:208-211, 231-234, 245: explicit sizes make the centring offset zero).
  const auto half_pixel = [&] {
    return a.scale ? (x + 0.5) / s - 0.5 : (x + 0.5) * l_in / l_out - 0.5;
  };
  switch (a.transform.kind) {
    case Kind::HalfPixel:
      return half_pixel();
    case Kind::AlignCorners:  // flex:214-221; ignores the scale factor
      return a.out == 1 ? 0.0 : x * (l_in - 1.0) / (l_out - 1.0);
    case Kind::Asymmetric:  // flex:222-228
      return a.scale ? x / s : x * l_in / l_out;
    case Kind::PytorchHalfPixel:  // flex:229-239
      return l_out > 1.0 ? half_pixel() : 0.0;
    case Kind::HalfPixelSymmetric:  // flex:240-248
      return a.scale ? (x + 0.5 + (l_in * s - l_out) / 2.0) / s - 0.5 : half_pixel();
    case Kind::TfCropAndResize: {  // flex:249-272; ignores the scale factor
      const auto& roi = a.transform.roi[static_cast<std::size_t>(a.axis)];
      const double r0 = roi[0], r1 = roi[1];
      const double c = a.out == 1
                           ? 0.5 * (r0 + r1) * (l_in - 1.0)
                           : r0 * (l_in - 1.0) + x * (r1 - r0) * (l_in - 1.0) / (l_out - 1.0);
      if (c < 0.0 || c > l_in - 1.0) return std::nullopt;
      return c;
    }
  }
  return half_pixel();
}

// One axis of a separable resampling: out[o] = sum_j weight[o][j] * in[index[o][j]] over the
// valid taps (an invalid tap contributes nothing, not even 0 * inf). An extrapolated output has
// no valid tap; the caller writes the extrapolation value there (forward) or drops its gradient
// (backward), as flex does per axis (flex:367-381, 533, 774, 1016, 1164-1167, 1281, 1395).
struct Taps {
  std::int64_t in = 0, out = 0, per = 0;  // input size, output size, taps per output
  std::vector<std::int64_t> index;        // out * per
  std::vector<double> weight;
  std::vector<std::uint8_t> valid;
  std::vector<std::uint8_t> extrapolated;  // per output
  bool unit = true;       // every tap valid with weight 1 (nearest): a plain gather
  bool all_valid = true;  // no tap (of a mapped output) is skipped
  bool any_extrapolated = false;

  void push(std::int64_t i, double w, bool ok) {
    index.push_back(ok ? i : 0);
    weight.push_back(ok ? w : 0.0);
    valid.push_back(ok ? 1 : 0);
    unit = unit && ok && w == 1.0;
    all_valid = all_valid && ok;
  }
  // Sum over the valid taps of each output (Lanczos3's renormalisation).
  std::vector<double> weight_sum() const {
    std::vector<double> s(static_cast<std::size_t>(out), 0.0);
    for (std::int64_t o = 0; o < out; ++o)
      for (std::int64_t j = 0; j < per; ++j) s[o] += weight[o * per + j];
    return s;
  }
};

// Builds the taps of every output: `fill(coord, taps)` pushes `per` taps for a mapped output.
template <class Fill>
Taps build(const Axis& a, std::int64_t per, Fill fill) {
  Taps t;
  t.in = a.in;
  t.out = a.out;
  t.per = per;
  t.unit = per == 1;  // an axis whose every output extrapolates pushes no tap to clear it
  for (std::int64_t o = 0; o < a.out; ++o) {
    const auto coord = map_coordinate(a, o);
    t.extrapolated.push_back(coord ? 0 : 1);
    if (coord) {
      fill(*coord, t);
      continue;
    }
    t.any_extrapolated = true;
    for (std::int64_t j = 0; j < per; ++j) {  // placeholders: not a skipped tap of a mapped output
      t.index.push_back(0);
      t.weight.push_back(0.0);
      t.valid.push_back(0);
    }
  }
  return t;
}

// flex nearest_axis_map (flex:282-307): round as nearest_mode says, clamp into the input.
inline Taps nearest_taps(const Axis& a, Rounding mode) {
  return build(a, 1, [&](double x, Taps& t) {
    double r = std::floor(x);
    if (mode == Rounding::RoundPreferFloor) r = std::ceil(x - 0.5);
    if (mode == Rounding::RoundPreferCeil) r = std::floor(x + 0.5);
    if (mode == Rounding::Ceil) r = std::ceil(x);
    t.push(std::clamp<std::int64_t>(as_isize(r), 0, a.in - 1), 1.0, true);
  });
}

// flex bilinear_axis_taps (flex:458-478): low/high clamped into the input, the weight of `high`
// not clamped above (low == high there). Every tap counts, as flex's four-term sum (flex:556).
inline Taps bilinear_taps(const Axis& a) {
  return build(a, 2, [&](double x, Taps& t) {
    // Rust's f64::max ignores a NaN operand, like fmax; `as usize` saturates.
    const std::int64_t low = std::min(as_isize(std::fmax(std::floor(x), 0.0)), a.in - 1);
    const std::int64_t high = std::min(low + 1, a.in - 1);
    const double w = std::fmax(x - static_cast<double>(low), 0.0);
    t.push(low, 1.0 - w, true);
    t.push(high, w, true);
  });
}

// flex cubic_weight (flex:882-894), the Keys kernel with parameter a.
inline double cubic_weight(double t, double a) {
  const double x = std::abs(t);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

// flex bicubic_axis_taps (flex:644-717): taps floor(c) - 1 .. floor(c) + 2, clamped into the input,
// or with exclude_outside the in-bounds ones renormalised (all gone: the nearest edge sample).
// A zero-weight tap is skipped, as flex's sums skip it (flex:781-787, 1404-1410).
inline Taps bicubic_taps(const Axis& a, const ir::CubicOptionsIr& opt) {
  const double ca = static_cast<double>(opt.a);
  return build(a, 4, [&](double c, Taps& t) {
    const std::int64_t base = as_isize(std::floor(c));
    std::int64_t idx[4];
    double w[4];
    double sum = 0.0;
    for (std::int64_t k = 0; k < 4; ++k) {
      const std::int64_t raw = add_offset(base, k - 1);
      const double distance = (c - static_cast<double>(base)) - static_cast<double>(k - 1);
      if (!opt.exclude_outside) {
        idx[k] = std::clamp<std::int64_t>(raw, 0, a.in - 1);
        w[k] = cubic_weight(distance, ca);
      } else if (raw >= 0 && raw < a.in) {
        idx[k] = raw;
        w[k] = cubic_weight(distance, ca);
        sum += w[k];
      } else {
        idx[k] = 0;
        w[k] = 0.0;
      }
    }
    if (opt.exclude_outside) {
      if (sum != 0.0 && std::isfinite(sum)) {
        for (double& v : w) v /= sum;
      } else {  // flex:690-699
        idx[0] = c < 0.0 ? 0 : a.in - 1;
        w[0] = 1.0;
        w[1] = w[2] = w[3] = 0.0;
      }
    }
    for (int k = 0; k < 4; ++k) t.push(idx[k], w[k], w[k] != 0.0);
  });
}

// flex lanczos3_weight (flex:896-911).
inline double lanczos3_weight(double x) {
  if (x == 0.0) return 1.0;
  if (std::abs(x) >= 3.0) return 0.0;
  constexpr double kPi = 3.14159265358979323846;
  const double pi_x = kPi * x, pi_x3 = pi_x / 3.0;
  return std::sin(pi_x) * std::sin(pi_x3) / (pi_x * pi_x3);
}

// flex lanczos3_axis_taps (flex:920-957): taps floor(c) - 2 .. floor(c) + 3, those outside the
// input skipped; the caller renormalises by the weight sums (flex:1033-1035).
inline Taps lanczos3_taps(const Axis& a) {
  return build(a, 6, [&](double c, Taps& t) {
    const double base = std::floor(c);
    for (std::int64_t off = -2; off <= 3; ++off) {
      const std::int64_t i = add_offset(as_isize(base), off);
      const bool ok = i >= 0 && i < a.in;
      t.push(i, ok ? lanczos3_weight(c - (base + static_cast<double>(off))) : 0.0, ok);
    }
  });
}

inline at::Tensor bool_tensor(const std::vector<std::uint8_t>& v, const at::Device& device) {
  std::vector<std::int64_t> wide(v.begin(), v.end());
  return long_tensor(wide, device).ne(0);
}
// [out, per, 1, ...] view of a per-tap table for resampling dim `dim` of a rank-`rank` tensor.
inline Sizes tap_shape(const Taps& t, std::int64_t dim, std::int64_t rank) {
  Sizes s{t.out, t.per};
  for (std::int64_t i = dim + 1; i < rank; ++i) s.push_back(1);
  return s;
}

// x resampled along `dim` (size t.in -> t.out). Extrapolated outputs hold junk (their
// placeholder taps are read unmasked): extrapolate() overwrites them, and only they read them.
inline at::Tensor apply_taps(const at::Tensor& x, std::int64_t dim, const Taps& t) {
  const auto index = long_tensor(t.index, x.device());
  if (t.unit) return x.index_select(dim, index);
  Sizes split(x.sizes().begin(), x.sizes().end());
  split[dim] = t.out;
  split.insert(split.begin() + dim + 1, t.per);
  const auto wshape = tap_shape(t, dim, x.dim());
  const auto weight =
      at::tensor(t.weight, at::kDouble).to(x.device(), x.scalar_type()).view(wshape);
  auto gathered = x.index_select(dim, index).view(split);
  if (!t.all_valid)
    gathered = at::where(bool_tensor(t.valid, x.device()).view(wshape), gathered,
                         scalar_like(0, gathered));
  return (gathered * weight).sum(dim + 1);
}

// The adjoint of apply_taps: g (size t.out along dim) -> size t.in along dim. Extrapolated
// outputs must already carry no gradient (drop_extrapolated).
inline at::Tensor apply_taps_adjoint(const at::Tensor& g, std::int64_t dim, const Taps& t) {
  Sizes shape(g.sizes().begin(), g.sizes().end());
  shape[dim] = t.in;
  auto result = at::zeros(shape, g.options());
  const auto index = long_tensor(t.index, g.device());
  if (t.unit) return result.index_add(dim, index, g);
  const auto wshape = tap_shape(t, dim, g.dim());
  const auto weight =
      at::tensor(t.weight, at::kDouble).to(g.device(), g.scalar_type()).view(wshape);
  auto spread = g.unsqueeze(dim + 1) * weight;
  if (!t.all_valid)
    spread =
        at::where(bool_tensor(t.valid, g.device()).view(wshape), spread, scalar_like(0, spread));
  Sizes flat(g.sizes().begin(), g.sizes().end());
  flat[dim] = t.out * t.per;
  return result.index_add(dim, index, spread.reshape(flat));
}

// [oh, ow] mask of the outputs extrapolated along either axis (flex:533, 774, 1016).
inline at::Tensor extrapolated_mask(const Taps& ty, const Taps& tx, const at::Device& device) {
  return bool_tensor(ty.extrapolated, device).view({ty.out, 1}) |
         bool_tensor(tx.extrapolated, device).view({1, tx.out});
}
// Forward: the extrapolation value wherever either axis extrapolates.
inline at::Tensor extrapolate(const at::Tensor& y, const Taps& ty, const Taps& tx, double value) {
  if (!ty.any_extrapolated && !tx.any_extrapolated) return y;
  return at::where(extrapolated_mask(ty, tx, y.device()), scalar_like(value, y), y);
}
// Backward: no gradient flows from an extrapolated output (flex:1164-1167, 1281-1295, 1395-1397).
inline at::Tensor drop_extrapolated(const at::Tensor& g, const Taps& ty, const Taps& tx) {
  if (!ty.any_extrapolated && !tx.any_extrapolated) return g;
  return at::where(extrapolated_mask(ty, tx, g.device()), scalar_like(0, g), g);
}

// Lanczos3 renormalisation: the product of the two axes' weight sums where nonzero (flex's sum
// over the 2-D taps, flex:1021-1035, factored per axis).
inline at::Tensor lanczos_norm(const Taps& ty, const Taps& tx, const at::Tensor& like) {
  const auto opts = at::TensorOptions().dtype(at::kDouble);
  auto d = at::tensor(ty.weight_sum(), opts).view({ty.out, 1}) *
           at::tensor(tx.weight_sum(), opts).view({1, tx.out});
  d = at::where(d != 0, d, at::ones({}, opts));
  return d.to(like.device(), like.scalar_type());
}

}  // namespace tb::backend::libtorch::interp
