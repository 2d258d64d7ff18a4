// Interpolate / InterpolateBackward with Burn 0.23's options: every coordinate transform, nearest
// rounding, cubic option and scale factor. Expected values come from hand computations and from
// a plain 2-D reference written from burn-flex 0.23.0-pre.1 src/ops/interpolate.rs (map_coordinate,
// the per-mode axis taps, and the sample loops), independently of the lowering's separable taps.
// 0.22.1-style options are covered by Module_Interpolate* in lower_module_test.cpp.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;
using K = OpKind;
using Vec = std::vector<double>;
using I64 = std::int64_t;
using Mode = InterpolateModeIr;
using Kind = CoordinateTransformKind;
using Round = NearestRoundingModeIr;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Usizes<2> u2(I64 a, I64 b) {
  return {static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(b)};
}
Dims dims4(I64 n, I64 c, I64 h, I64 w) {
  return {static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(c),
          static_cast<std::uint64_t>(h), static_cast<std::uint64_t>(w)};
}

CoordinateTransformModeIr transform(Kind k) {
  CoordinateTransformModeIr t;
  t.kind = k;
  if (k == Kind::TfCropAndResize) {
    // The width range pokes out of the input on both sides: some outputs extrapolate.
    t.roi = {F32s<2>{0.125f, 0.75f}, F32s<2>{-0.25f, 1.125f}};
    t.extrapolation_value = 7.5f;
  }
  return t;
}
// 0.23 options as the decoder leaves them (align_corners follows the transform).
InterpolateOptionsIr opts(Mode mode, CoordinateTransformModeIr t, Round r = Round::Floor,
                          CubicOptionsIr cubic = {-0.75f, false},
                          std::optional<F32s<2>> scale = std::nullopt) {
  InterpolateOptionsIr o;
  o.mode = mode;
  o.coordinate_transform = t;
  o.align_corners = t.kind == Kind::AlignCorners;
  o.nearest_mode = r;
  o.cubic_options = cubic;
  o.scale_factor = scale;
  return o;
}
InterpolateOptionsIr opts(Mode mode, Kind k, Round r = Round::Floor,
                          CubicOptionsIr cubic = {-0.75f, false},
                          std::optional<F32s<2>> scale = std::nullopt) {
  return opts(mode, transform(k), r, cubic, scale);
}

// ---------------------------------------------------------------------------------------------
// The reference: flex's formulas, one output sample at a time.

// map_coordinate: nullopt where TfCropAndResize extrapolates.
std::optional<double> ref_coord(I64 o, I64 in, I64 out, std::optional<float> scale,
                                const CoordinateTransformModeIr& t, int axis) {
  const double xo = static_cast<double>(o), li = static_cast<double>(in),
               lo = static_cast<double>(out);
  const double s = scale ? static_cast<double>(*scale) : lo / li;
  const double half = scale ? (xo + 0.5) / s - 0.5 : (xo + 0.5) * li / lo - 0.5;
  switch (t.kind) {
    case Kind::HalfPixel:
      return half;
    case Kind::AlignCorners:
      return out == 1 ? 0.0 : xo * (li - 1.0) / (lo - 1.0);
    case Kind::Asymmetric:
      return scale ? xo / s : xo * li / lo;
    case Kind::PytorchHalfPixel:
      return out > 1 ? half : 0.0;
    case Kind::HalfPixelSymmetric:
      return scale ? (xo + 0.5 + (li * s - lo) / 2.0) / s - 0.5 : half;
    case Kind::TfCropAndResize: {
      const double a = t.roi[axis][0], b = t.roi[axis][1];
      const double c = out == 1 ? 0.5 * (a + b) * (li - 1.0)
                                : a * (li - 1.0) + xo * (b - a) * (li - 1.0) / (lo - 1.0);
      if (c < 0.0 || c > li - 1.0) return std::nullopt;
      return c;
    }
  }
  return half;
}

double ref_cubic(double t, double a) {
  const double x = std::abs(t);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}
double ref_lanczos(double x) {
  if (x == 0.0) return 1.0;
  if (std::abs(x) >= 3.0) return 0.0;
  const double p = 3.14159265358979323846 * x;
  return std::sin(p) * std::sin(p / 3.0) / (p * (p / 3.0));
}

using Taps1 = std::vector<std::pair<I64, double>>;
// One axis's taps for coordinate c (flex's *_axis_taps, in flex's tap order).
Taps1 ref_taps(const InterpolateOptionsIr& o, double c, I64 in) {
  Taps1 t;
  const auto clampi = [&](I64 i) { return std::max<I64>(0, std::min(i, in - 1)); };
  switch (o.mode) {
    case Mode::Nearest:
    case Mode::NearestExact: {
      double r = 0;
      switch (o.nearest_mode) {
        case Round::RoundPreferFloor:
          r = std::ceil(c - 0.5);
          break;
        case Round::RoundPreferCeil:
          r = std::floor(c + 0.5);
          break;
        case Round::Floor:
          r = std::floor(c);
          break;
        case Round::Ceil:
          r = std::ceil(c);
          break;
      }
      t.emplace_back(clampi(static_cast<I64>(r)), 1.0);
      break;
    }
    case Mode::Bilinear: {
      const I64 lo = std::min(static_cast<I64>(std::max(std::floor(c), 0.0)), in - 1);
      const double f = std::max(c - static_cast<double>(lo), 0.0);
      t.emplace_back(lo, 1.0 - f);
      t.emplace_back(std::min(lo + 1, in - 1), f);
      break;
    }
    case Mode::Bicubic: {
      const double a = o.cubic_options.a;
      const I64 base = static_cast<I64>(std::floor(c));
      double sum = 0;
      for (I64 off = -1; off <= 2; ++off) {
        const I64 i = base + off;
        const double wt = ref_cubic((c - static_cast<double>(base)) - static_cast<double>(off), a);
        if (!o.cubic_options.exclude_outside) {
          t.emplace_back(clampi(i), wt);
        } else if (i >= 0 && i < in) {
          t.emplace_back(i, wt);
          sum += wt;
        }
      }
      if (o.cubic_options.exclude_outside) {
        if (sum != 0.0 && std::isfinite(sum)) {
          for (auto& e : t) e.second /= sum;
        } else {
          t = {{c < 0.0 ? 0 : in - 1, 1.0}};
        }
      }
      break;
    }
    case Mode::Lanczos3: {
      const double base = std::floor(c);
      for (I64 off = -2; off <= 3; ++off) {
        const I64 i = static_cast<I64>(base) + off;
        if (i >= 0 && i < in) t.emplace_back(i, ref_lanczos(c - (base + static_cast<double>(off))));
      }
      break;
    }
  }
  return t;
}

// Per output: nullopt (extrapolated) or its (input index, weight) terms, as flex's samplers sum
// them: bicubic skips zero-weight taps, Lanczos3 divides by the sum of its weights.
struct Plane {
  std::vector<std::optional<std::vector<std::pair<I64, double>>>> rows;
  double fill = 0;  // the extrapolation value
};
Plane ref_plane(const InterpolateOptionsIr& o, I64 h, I64 w, I64 oh, I64 ow) {
  Plane p;
  p.fill = o.coordinate_transform.extrapolation_value;
  const auto sy = o.scale_factor ? std::optional<float>((*o.scale_factor)[0]) : std::nullopt;
  const auto sx = o.scale_factor ? std::optional<float>((*o.scale_factor)[1]) : std::nullopt;
  for (I64 oy = 0; oy < oh; ++oy)
    for (I64 ox = 0; ox < ow; ++ox) {
      const auto cy = ref_coord(oy, h, oh, sy, o.coordinate_transform, 0);
      const auto cx = ref_coord(ox, w, ow, sx, o.coordinate_transform, 1);
      if (!cy || !cx) {
        p.rows.emplace_back(std::nullopt);
        continue;
      }
      std::vector<std::pair<I64, double>> row;
      double sum = 0;
      for (auto [iy, wy] : ref_taps(o, *cy, h))
        for (auto [ix, wx] : ref_taps(o, *cx, w)) {
          if (o.mode == Mode::Bicubic && (wy == 0.0 || wx == 0.0)) continue;
          row.emplace_back(iy * w + ix, wy * wx);
          sum += wy * wx;
        }
      if (o.mode == Mode::Lanczos3 && sum != 0.0)
        for (auto& e : row) e.second /= sum;
      p.rows.emplace_back(row);
    }
  return p;
}
Vec ref_forward(const Plane& p, const Vec& x, I64 nc, I64 plane_in) {
  Vec y;
  for (I64 b = 0; b < nc; ++b)
    for (const auto& row : p.rows) {
      if (!row) {
        y.push_back(p.fill);
        continue;
      }
      double s = 0;
      for (auto [i, wt] : *row) s += x[b * plane_in + i] * wt;
      y.push_back(s);
    }
  return y;
}
Vec ref_backward(const Plane& p, const Vec& g, I64 nc, I64 plane_in) {
  Vec gx(static_cast<std::size_t>(nc * plane_in), 0.0);
  const I64 per = static_cast<I64>(p.rows.size());
  for (I64 b = 0; b < nc; ++b)
    for (I64 o = 0; o < per; ++o)
      if (p.rows[o])
        for (auto [i, wt] : *p.rows[o]) gx[b * plane_in + i] += wt * g[b * per + o];
  return gx;
}

// ---------------------------------------------------------------------------------------------
// Fixture

class InterpV6 : public OpTest {
 protected:
  TensorIr input(const Dims& d, DTypeKind dt, const Vec& v) {
    const auto t = tir(next_++, d, dt);
    put(t, v);
    return t;
  }
  Vec forward(const Vec& xv, const Dims& xd, I64 oh, I64 ow, const InterpolateOptionsIr& o,
              DTypeKind dt = DTypeKind::F32) {
    const auto x = input(xd, dt, xv);
    const Dims od{xd[0], xd[1], static_cast<std::uint64_t>(oh), static_cast<std::uint64_t>(ow)};
    const auto id = next_++;
    run(make_op<K::Module_Interpolate>(InterpolateOpIr{rw(x), u2(oh, ow), o, out(id, od, dt)}));
    return get(rw(tir(id, od, dt)));
  }
  Vec backward(const Dims& xd, const Vec& gv, I64 oh, I64 ow, const InterpolateOptionsIr& o,
               DTypeKind dt = DTypeKind::F32) {
    const Dims od{xd[0], xd[1], static_cast<std::uint64_t>(oh), static_cast<std::uint64_t>(ow)};
    const auto x = input(xd, dt, Vec(num_elements(xd), 0.0));
    const auto g = input(od, dt, gv);
    const auto id = next_++;
    run(make_op<K::Module_InterpolateBackward>(
        InterpolateBackwardOpIr{rw(x), rw(g), u2(oh, ow), o, out(id, xd, dt)}));
    return get(rw(tir(id, xd, dt)));
  }
  std::string forward_error(const Dims& xd, I64 oh, I64 ow, const InterpolateOptionsIr& o) {
    const auto x = input(xd, DTypeKind::F32, Vec(num_elements(xd), 1.0));
    const Dims od{xd[0], xd[1], static_cast<std::uint64_t>(oh), static_cast<std::uint64_t>(ow)};
    return run_error(make_op<K::Module_Interpolate>(
        InterpolateOpIr{x, u2(oh, ow), o, out(next_++, od, DTypeKind::F32)}));
  }
  std::uint64_t next_ = 1;
};

#define INTERP_SUITE(name) \
  class name : public InterpV6 {}

std::string describe(const InterpolateOptionsIr& o, I64 h, I64 w, I64 oh, I64 ow, DTypeKind dt) {
  std::string s = "mode " + std::to_string(static_cast<int>(o.mode)) + " transform " +
                  std::to_string(static_cast<int>(o.coordinate_transform.kind)) + " rounding " +
                  std::to_string(static_cast<int>(o.nearest_mode)) + " cubic a " +
                  std::to_string(o.cubic_options.a) + " exclude " +
                  std::to_string(o.cubic_options.exclude_outside) + " scale " +
                  (o.scale_factor ? std::to_string((*o.scale_factor)[0]) + "," +
                                        std::to_string((*o.scale_factor)[1])
                                  : std::string("none")) +
                  " " + std::to_string(h) + "x" + std::to_string(w) + " -> " + std::to_string(oh) +
                  "x" + std::to_string(ow) + " dtype " + std::to_string(static_cast<int>(dt));
  return s;
}

const Kind kTransforms[] = {Kind::HalfPixel,          Kind::AlignCorners,
                            Kind::Asymmetric,         Kind::PytorchHalfPixel,
                            Kind::HalfPixelSymmetric, Kind::TfCropAndResize};
const Round kRoundings[] = {Round::RoundPreferFloor, Round::RoundPreferCeil, Round::Floor,
                            Round::Ceil};
// Input planes (with size 1 on either axis) and outputs (up, down, mixed, 1).
const std::pair<I64, I64> kInputs[] = {{5, 6}, {1, 4}, {4, 1}};
const std::pair<I64, I64> kOutputs[] = {{7, 9}, {2, 3}, {1, 1}, {3, 11}, {1, 5}};

// A scale factor that yields the same output size, floor(in * s) = out, but differs from out / in,
// so that the transforms reading it visibly do.
F32s<2> scale_for(I64 h, I64 w, I64 oh, I64 ow) {
  return {static_cast<float>((oh + 0.5) / h), static_cast<float>((ow + 0.5) / w)};
}

// Every option set the sweeps run: nearest x every rounding, the filters x cubic options, each x
// every transform; with and without a scale factor is the caller's.
std::vector<InterpolateOptionsIr> sweep_options() {
  std::vector<InterpolateOptionsIr> v;
  const CubicOptionsIr cubics[] = {{-0.75f, false}, {-0.5f, false}, {-0.5f, true}, {-0.75f, true}};
  for (Kind k : kTransforms) {
    for (Round r : kRoundings) v.push_back(opts(Mode::Nearest, k, r));
    v.push_back(opts(Mode::Bilinear, k));
    for (const auto& c : cubics) v.push_back(opts(Mode::Bicubic, k, Round::RoundPreferFloor, c));
    v.push_back(opts(Mode::Lanczos3, k));
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Forward

INTERP_SUITE(Module_InterpolateV6);

TEST_F(Module_InterpolateV6, NearestRoundingModesHandComputed) {
  // Asymmetric 3 -> 4: coordinates 0, 0.75, 1.5, 2.25; 2 -> 5: 0, 0.4, 0.8, 1.2, 1.6.
  const std::pair<Round, Vec> three_to_four[] = {{Round::RoundPreferFloor, {10, 20, 20, 30}},
                                                 {Round::RoundPreferCeil, {10, 20, 30, 30}},
                                                 {Round::Floor, {10, 10, 20, 30}},
                                                 {Round::Ceil, {10, 20, 30, 30}}};
  for (const auto& [r, expected] : three_to_four)
    EXPECT_EQ(
        forward({10, 20, 30}, dims4(1, 1, 1, 3), 1, 4, opts(Mode::Nearest, Kind::Asymmetric, r)),
        expected)
        << static_cast<int>(r);
  const std::pair<Round, Vec> two_to_five[] = {{Round::RoundPreferFloor, {10, 10, 20, 20, 20}},
                                               {Round::RoundPreferCeil, {10, 10, 20, 20, 20}},
                                               {Round::Floor, {10, 10, 10, 20, 20}},
                                               {Round::Ceil, {10, 20, 20, 20, 20}}};
  for (const auto& [r, expected] : two_to_five)
    EXPECT_EQ(forward({10, 20}, dims4(1, 1, 1, 2), 1, 5, opts(Mode::Nearest, Kind::Asymmetric, r)),
              expected)
        << static_cast<int>(r);
  // flex runs Nearest and NearestExact through one kernel: only the options tell them apart.
  EXPECT_EQ(forward({10, 20, 30}, dims4(1, 1, 1, 3), 1, 4,
                    opts(Mode::NearestExact, Kind::Asymmetric, Round::Floor)),
            (Vec{10, 10, 20, 30}));
  // PytorchHalfPixel maps a single output to 0, HalfPixel to the centre: 4 -> 1 picks 10 / 30.
  EXPECT_EQ(forward({10, 20, 30, 40}, dims4(1, 1, 1, 4), 1, 1,
                    opts(Mode::Nearest, Kind::PytorchHalfPixel, Round::RoundPreferCeil)),
            (Vec{10}));
  EXPECT_EQ(forward({10, 20, 30, 40}, dims4(1, 1, 1, 4), 1, 1,
                    opts(Mode::Nearest, Kind::HalfPixel, Round::RoundPreferCeil)),
            (Vec{30}));
}

// Issue 39, finding 7's class: the resolved output size sizes the work, the declared output is what
// the host's limits check; a size of 2^20 x 2^20 declared as [1, 1, 2, 2] is refused before work.
TEST_F(Module_InterpolateV6, AnOutputSizeLargerThanTheDeclaredOutputIsRefusedFirst) {
  const auto x = input(dims4(1, 1, 2, 2), DTypeKind::F32, Vec{1, 2, 3, 4});
  const auto error = run_error(make_op<K::Module_Interpolate>(InterpolateOpIr{
      x, u2(I64{1} << 20, I64{1} << 20), opts(Mode::Nearest, Kind::Asymmetric, Round::Floor),
      out(next_++, dims4(1, 1, 2, 2), DTypeKind::F32)}));
  EXPECT_NE(error.find("is declared [1, 1, 2, 2] but the op's scalars make [1, 1, 1048576, "
                       "1048576]"),
            std::string::npos)
      << error;
}

TEST_F(Module_InterpolateV6, ScaleFactorDrivesTheCoordinates) {
  // 4 -> 2 with scale 0.6 (floor(2.4) = 2): Asymmetric coordinates o / 0.6 = 0, 1.67 (floor 0, 1);
  // from the sizes alone o * 4 / 2 = 0, 2.
  const Vec x{10, 20, 30, 40};
  EXPECT_EQ(forward(x, dims4(1, 1, 1, 4), 1, 2,
                    opts(Mode::Nearest, Kind::Asymmetric, Round::Floor, {-0.75f, false},
                         F32s<2>{1.0f, 0.6f})),
            (Vec{10, 20}));
  EXPECT_EQ(
      forward(x, dims4(1, 1, 1, 4), 1, 2, opts(Mode::Nearest, Kind::Asymmetric, Round::Floor)),
      (Vec{10, 30}));
  // Bilinear HalfPixel 2 -> 5 with scale 2.9: coordinate (o + 0.5) / 2.9 - 0.5; AlignCorners
  // ignores the scale (o / 4).
  const float s = 2.9f;
  Vec expected;
  for (int o = 0; o < 5; ++o) {
    const double c = std::max((o + 0.5) / static_cast<double>(s) - 0.5, 0.0);
    const double f = std::min(c, 1.0);
    expected.push_back(10 * (1 - f) + 20 * f);
  }
  expect_near(forward({10, 20}, dims4(1, 1, 1, 2), 1, 5,
                      opts(Mode::Bilinear, Kind::HalfPixel, Round::Floor, {-0.75f, false},
                           F32s<2>{1.0f, s})),
              expected);
  expect_near(forward({10, 20}, dims4(1, 1, 1, 2), 1, 5,
                      opts(Mode::Bilinear, Kind::AlignCorners, Round::Floor, {-0.75f, false},
                           F32s<2>{1.0f, s})),
              {10, 12.5, 15, 17.5, 20});
  // HalfPixelSymmetric with a scale shifts by (in * s - out) / 2: 2 -> 5, s = 2.9: offset 0.4.
  expected.clear();
  for (int o = 0; o < 5; ++o) {
    const double sd = static_cast<double>(s);
    const double c = (o + 0.5 + (2 * sd - 5) / 2) / sd - 0.5;
    expected.push_back(c <= 0.5 ? 10 : 20);  // RoundPreferFloor: ceil(c - 0.5); o = 2 ties
  }
  EXPECT_EQ(forward({10, 20}, dims4(1, 1, 1, 2), 1, 5,
                    opts(Mode::Nearest, Kind::HalfPixelSymmetric, Round::RoundPreferFloor,
                         {-0.75f, false}, F32s<2>{1.0f, s})),
            expected);
}

TEST_F(Module_InterpolateV6, TfCropAndResizeExtrapolatesHandComputed) {
  // Width 3 -> 3 over roi [-0.5, 1]: coordinates -1 (outside: 9), 0.5, 2; height 1 -> 1 over
  // [0, 1]: 0.5 * (0 + 1) * 0 = 0.
  CoordinateTransformModeIr t;
  t.kind = Kind::TfCropAndResize;
  t.roi = {F32s<2>{0.0f, 1.0f}, F32s<2>{-0.5f, 1.0f}};
  t.extrapolation_value = 9.0f;
  const Vec x{0, 10, 20};
  expect_near(forward(x, dims4(1, 1, 1, 3), 1, 3, opts(Mode::Bilinear, t)), {9, 5, 20});
  EXPECT_EQ(forward(x, dims4(1, 1, 1, 3), 1, 3, opts(Mode::Nearest, t, Round::Floor)),
            (Vec{9, 0, 20}));
  EXPECT_EQ(forward(x, dims4(1, 1, 1, 3), 1, 3, opts(Mode::Nearest, t, Round::Ceil)),
            (Vec{9, 10, 20}));
  // Out along the height: the whole row extrapolates, whatever the width does; in f16 too.
  t.roi = {F32s<2>{1.5f, 2.0f}, F32s<2>{0.0f, 1.0f}};
  t.extrapolation_value = -0.25f;
  EXPECT_EQ(
      forward({0, 1, 2, 3, 4, 5}, dims4(1, 1, 2, 3), 1, 3, opts(Mode::Bicubic, t), DTypeKind::F16),
      (Vec{-0.25, -0.25, -0.25}));
  // Lanczos3 renormalises only mapped outputs; infinite inputs never reach extrapolated ones.
  t.roi = {F32s<2>{0.0f, 1.0f}, F32s<2>{-1.0f, 1.0f}};
  t.extrapolation_value = 3.0f;
  const auto y = forward({kInf, 1, 2}, dims4(1, 1, 1, 3), 1, 3, opts(Mode::Lanczos3, t));
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0], 3.0);
  EXPECT_TRUE(std::isnan(y[1]) || std::isinf(y[1])) << y[1];
}

TEST_F(Module_InterpolateV6, BicubicCubicOptionsHandComputed) {
  // [0, 1, 8, 27] AlignCorners 4 -> 7: coordinates o / 2. At 1.5 the taps 0..3 sit at distances
  // 1.5, 0.5, -0.5, -1.5: a = -0.5 weighs them -1/16, 9/16, 9/16, -1/16 (3.375); a = -0.75
  // -3/32, 19/32, 19/32, -3/32 (2.8125). At 0.5 tap -1 is outside: clamped to 0 it weighs
  // -1/16 * 0 (0.0625); excluded, the others are renormalised by 17/16 (1/17).
  const Vec x{0, 1, 8, 27};
  const auto at = [&](CubicOptionsIr c) {
    return forward(x, dims4(1, 1, 1, 4), 1, 7,
                   opts(Mode::Bicubic, Kind::AlignCorners, Round::Floor, c));
  };
  const auto half = at({-0.5f, false}), keys = at({-0.75f, false}), excl = at({-0.5f, true});
  ASSERT_EQ(half.size(), 7u);
  EXPECT_NEAR(half[3], 3.375, 1e-6);
  EXPECT_NEAR(keys[3], 2.8125, 1e-6);
  EXPECT_NEAR(half[1], 0.0625, 1e-6);
  EXPECT_NEAR(excl[1], 1.0 / 17.0, 1e-6);
  EXPECT_NEAR(excl[3], 3.375, 1e-6);  // every tap inside: nothing to renormalise
  for (int i : {0, 2, 4, 6}) EXPECT_NEAR(excl[i], x[i / 2], 1e-6) << i;
}

TEST_F(Module_InterpolateV6, BicubicSkipsZeroWeightTaps) {
  // AlignCorners 3 -> 5, coordinates 0, 0.5, 1, 1.5, 2: at integer coordinates only the centre
  // tap weighs anything, so flex never reads the infinite sample there (ATen would give NaN).
  const auto y =
      forward({1, 2, kInf}, dims4(1, 1, 1, 3), 1, 5, opts(Mode::Bicubic, Kind::AlignCorners));
  expect_near(y, {1, -kInf, 2, kNaN, kInf});
}

TEST_F(Module_InterpolateV6, EveryCombinationMatchesTheReference) {
  for (const auto& o0 : sweep_options())
    for (bool scaled : {false, true})
      for (auto dt : {DTypeKind::F32, DTypeKind::F64})
        for (auto [h, w] : kInputs)
          for (auto [oh, ow] : kOutputs) {
            auto o = o0;
            if (scaled) o.scale_factor = scale_for(h, w, oh, ow);
            const Vec xv =
                rnd(static_cast<std::size_t>(2 * h * w), static_cast<unsigned>(h * w), -2, 2);
            const auto y = forward(xv, dims4(1, 2, h, w), oh, ow, o, dt);
            expect_near(y, ref_forward(ref_plane(o, h, w, oh, ow), xv, 2, h * w),
                        dt == DTypeKind::F64 ? 1e-10 : 1e-5);
            if (HasFailure()) {
              ADD_FAILURE() << describe(o, h, w, oh, ow, dt);
              return;
            }
          }
}

TEST_F(Module_InterpolateV6, RejectsWhatFlexRejects) {
  const auto base = opts(Mode::Bilinear, Kind::HalfPixel);
  auto o = base;
  o.scale_factor = F32s<2>{2.0f, 0.0f};
  EXPECT_THAT(forward_error(dims4(1, 1, 2, 2), 4, 0, o), HasSubstr("scale factor"));
  o.scale_factor = F32s<2>{std::numeric_limits<float>::quiet_NaN(), 1.0f};
  EXPECT_THAT(forward_error(dims4(1, 1, 2, 2), 2, 2, o), HasSubstr("scale factor"));
  o.scale_factor = F32s<2>{-1.0f, 1.0f};
  EXPECT_THAT(forward_error(dims4(1, 1, 2, 2), 2, 2, o), HasSubstr("scale factor"));
  // A NaN ROI on an axis with outputs; flex asserts it even for an empty batch.
  auto t = transform(Kind::TfCropAndResize);
  t.roi[1][0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(forward_error(dims4(1, 1, 2, 2), 2, 2, opts(Mode::Nearest, t)), HasSubstr("NaN"));
  EXPECT_THAT(forward_error(dims4(0, 1, 2, 2), 2, 2, opts(Mode::Nearest, t)), HasSubstr("NaN"));
  // ... but not on an axis without outputs (flex maps no coordinate there).
  EXPECT_TRUE(forward(Vec(4, 1.0), dims4(1, 1, 2, 2), 3, 0, opts(Mode::Nearest, t)).empty());
  // An empty input plane, even for an empty output (flex asserts before anything else).
  EXPECT_THAT(forward_error(dims4(1, 1, 0, 2), 0, 2, base), HasSubstr("spatial"));
  EXPECT_THAT(forward_error(dims4(1, 1, 2, 0), 2, 2, base), HasSubstr("spatial"));
}

// ---------------------------------------------------------------------------------------------
// Backward

INTERP_SUITE(Module_InterpolateBackwardV6);

TEST_F(Module_InterpolateBackwardV6, EveryCombinationIsTheAdjointOfTheForward) {
  unsigned seed = 1;
  for (const auto& o0 : sweep_options())
    for (bool scaled : {false, true})
      for (auto dt : {DTypeKind::F32, DTypeKind::F64})
        for (auto [h, w] : kInputs)
          for (auto [oh, ow] : kOutputs) {
            auto o = o0;
            if (scaled) o.scale_factor = scale_for(h, w, oh, ow);
            const auto xd = dims4(2, 1, h, w);
            const Vec gv = rnd(static_cast<std::size_t>(2 * oh * ow), ++seed, -2, 2);
            const auto gx = backward(xd, gv, oh, ow, o, dt);
            const double tol = dt == DTypeKind::F64 ? 1e-10 : 1e-5;
            expect_near(gx, ref_backward(ref_plane(o, h, w, oh, ow), gv, 2, h * w), tol);
            // <interp(x) - interp(0), g> = <x, interp_backward(g)>, from the lowering alone
            // (interp(0) holds the extrapolated constants).
            const Vec xv = rnd(static_cast<std::size_t>(2 * h * w), ++seed, -2, 2);
            const auto y = forward(xv, xd, oh, ow, o, dt);
            const auto y0 = forward(Vec(xv.size(), 0.0), xd, oh, ow, o, dt);
            Vec lin(y.size());
            for (std::size_t i = 0; i < y.size(); ++i) lin[i] = y[i] - y0[i];
            const double lhs = dot(lin, gv), rhs = dot(xv, gx);
            EXPECT_NEAR(lhs, rhs, 10 * tol * std::max(1.0, std::abs(lhs)));
            if (HasFailure()) {
              ADD_FAILURE() << describe(o, h, w, oh, ow, dt);
              return;
            }
          }
}

TEST_F(Module_InterpolateBackwardV6, ExtrapolatedOutputsPassNoGradient) {
  // Width 3 -> 3 over roi [-0.5, 1]: output 0 extrapolates, 1 samples 0.5 (half to inputs 0 and
  // 1), 2 samples input 2. An infinite gradient on the extrapolated output goes nowhere.
  CoordinateTransformModeIr t;
  t.kind = Kind::TfCropAndResize;
  t.roi = {F32s<2>{0.0f, 1.0f}, F32s<2>{-0.5f, 1.0f}};
  t.extrapolation_value = 9.0f;
  expect_near(backward(dims4(1, 1, 1, 3), {kInf, 2, 4}, 1, 3, opts(Mode::Bilinear, t)), {1, 1, 4});
  EXPECT_EQ(backward(dims4(1, 1, 1, 3), {kInf, 2, 4}, 1, 3, opts(Mode::Nearest, t, Round::Ceil)),
            (Vec{0, 2, 4}));
  // Bicubic (a = -0.75) at 0.5: taps -1 (clamped to 0), 0, 1, 2 weigh -3/32, 19/32, 19/32, -3/32;
  // at 2 only tap 2 weighs anything.
  expect_near(backward(dims4(1, 1, 1, 3), {kInf, 2, 4}, 1, 3, opts(Mode::Bicubic, t)),
              {1, 1.1875, 3.8125});
}

TEST_F(Module_InterpolateBackwardV6, BicubicSkipsZeroWeightTaps) {
  // AlignCorners 3 -> 5: the infinite gradient of output 2 (coordinate 1) reaches input 1 only.
  const auto gx = backward(dims4(1, 1, 1, 3), {0, 0, kInf, 0, 0}, 1, 5,
                           opts(Mode::Bicubic, Kind::AlignCorners));
  EXPECT_EQ(gx, (Vec{0, kInf, 0}));
}

TEST_F(Module_InterpolateBackwardV6, RejectsWhatFlexRejects) {
  auto t = transform(Kind::TfCropAndResize);
  t.roi[0][1] = std::numeric_limits<float>::quiet_NaN();
  const auto x = input(dims4(1, 1, 2, 2), DTypeKind::F32, Vec(4, 0.0));
  const auto g = input(dims4(1, 1, 3, 3), DTypeKind::F32, Vec(9, 1.0));
  EXPECT_THAT(run_error(make_op<K::Module_InterpolateBackward>(InterpolateBackwardOpIr{
                  x, g, u2(3, 3), opts(Mode::Bilinear, t), out(next_++, dims4(1, 1, 2, 2))})),
              HasSubstr("NaN"));
  // The gradient must have the output's batch and channels too.
  const auto g2 = input(dims4(2, 1, 3, 3), DTypeKind::F32, Vec(18, 1.0));
  EXPECT_THAT(
      run_error(make_op<K::Module_InterpolateBackward>(InterpolateBackwardOpIr{
          x, g2, u2(3, 3), opts(Mode::Nearest, Kind::HalfPixel), out(next_++, dims4(1, 1, 2, 2))})),
      HasSubstr("does not match"));
  const auto e = input(dims4(1, 1, 0, 2), DTypeKind::F32, {});
  const auto ge = input(dims4(1, 1, 2, 2), DTypeKind::F32, Vec(4, 1.0));
  EXPECT_THAT(
      run_error(make_op<K::Module_InterpolateBackward>(InterpolateBackwardOpIr{
          e, ge, u2(2, 2), opts(Mode::Nearest, Kind::HalfPixel), out(next_++, dims4(1, 1, 0, 2))})),
      HasSubstr("spatial"));
}

}  // namespace
}  // namespace tb::test
