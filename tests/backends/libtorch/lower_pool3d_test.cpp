// Burn 0.23's pooling additions: the 3-d avg and max pools and the avg pools' dilation (1-d, 2-d).
// Expected values come from hand computations or from the reference below: plain loops over the
// windows as burn-flex 0.23.0-pre.1 src/ops/pool.rs defines them (taps o * s + j * d - p in
// kernel order; count_include_pad counts the taps inside the padded input), written
// independently of the lowering.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;
using K = OpKind;
using Vec = std::vector<double>;
using I64 = std::int64_t;
using Ints = std::vector<I64>;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::nan("");

I64 prod(const Ints& v) {
  return std::accumulate(v.begin(), v.end(), I64{1}, std::multiplies<I64>());
}
Dims dims_of(I64 n, I64 c, const Ints& spatial) {
  Dims d{static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(c)};
  for (auto s : spatial) d.push_back(static_cast<std::uint64_t>(s));
  return d;
}
template <std::size_t N>
Usizes<N> us(const Ints& v) {
  Usizes<N> r{};
  for (std::size_t i = 0; i < N; ++i) r[i] = static_cast<std::uint64_t>(v[i]);
  return r;
}
const auto u1 = [](const Ints& v) { return static_cast<std::uint64_t>(v[0]); };
const auto u2 = us<2>;
const auto u3 = us<3>;

// ---------------------------------------------------------------------------------------------
// Reference

struct Cfg {
  Ints k, s, p, d;
  bool ceil;
};
std::string label(const Cfg& c, bool cip, DTypeKind dt) {
  std::string r;
  for (std::size_t a = 0; a < c.k.size(); ++a)
    r += fmt::format("k{}s{}p{}d{} ", c.k[a], c.s[a], c.p[a], c.d[a]);
  return r + (c.ceil ? "ceil " : "floor ") + (cip ? "cip " : "") + std::string(DType(dt).name());
}

// burn-flex pool_output_size as a window count: floor mode counts the windows inside the padded
// input, ceil mode those overhanging it by less than a stride, less a last window starting at
// or past input + padding.
Ints out_dims(const Ints& in, const Cfg& c) {
  Ints out;
  for (std::size_t a = 0; a < in.size(); ++a) {
    const I64 padded = in[a] + 2 * c.p[a], ext = c.d[a] * (c.k[a] - 1) + 1, s = c.s[a];
    I64 n = 0;
    while (c.ceil ? n * s + ext - padded < s : n * s + ext <= padded) ++n;
    if (c.ceil && n > 0 && (n - 1) * s >= in[a] + c.p[a]) --n;
    out.push_back(n);
  }
  EXPECT_GT(prod(out), 0);
  return out;
}

struct Tap {
  I64 index = 0;  // into the input plane, where `inside`
  bool inside = true, in_padded = true;
};
// The taps of window o (flat over `out`), in burn-flex's loop order (row-major over the kernel).
std::vector<Tap> taps(const Ints& in, const Ints& out, const Cfg& c, I64 o) {
  std::vector<Tap> r;
  for (I64 t = 0; t < prod(c.k); ++t) {
    Tap tap;
    I64 orest = o, trest = t, ostep = prod(out), tstep = prod(c.k);
    for (std::size_t a = 0; a < in.size(); ++a) {
      ostep /= out[a];
      tstep /= c.k[a];
      const I64 padded_pos = (orest / ostep) * c.s[a] + (trest / tstep) * c.d[a];
      orest %= ostep;
      trest %= tstep;
      const I64 pos = padded_pos - c.p[a];
      tap.in_padded = tap.in_padded && padded_pos < in[a] + 2 * c.p[a];
      tap.inside = tap.inside && pos >= 0 && pos < in[a];
      tap.index = tap.index * in[a] + pos;
    }
    r.push_back(tap);
  }
  return r;
}

// Avg pool of one plane as a dense [out, in] matrix.
Vec avg_matrix(const Ints& in, const Ints& out, const Cfg& c, bool cip) {
  const I64 ni = prod(in);
  Vec m(prod(out) * ni, 0.0);
  for (I64 o = 0; o < prod(out); ++o) {
    const auto ts = taps(in, out, c, o);
    const auto count = std::count_if(ts.begin(), ts.end(),
                                     [&](const Tap& t) { return cip ? t.in_padded : t.inside; });
    for (const auto& t : ts)
      if (t.inside) m[o * ni + t.index] += 1.0 / static_cast<double>(std::max<I64>(count, 1));
  }
  return m;
}
// y[b, r] = sum_c m[r, c] x[b, c] over nc planes, or with m transposed.
Vec apply(const Vec& m, const Vec& x, I64 nc, I64 rows, bool transpose = false) {
  const I64 cols = static_cast<I64>(m.size()) / rows;
  Vec y(nc * (transpose ? cols : rows), 0.0);
  for (I64 b = 0; b < nc; ++b)
    for (I64 r = 0; r < rows; ++r)
      for (I64 c = 0; c < cols; ++c)
        (transpose ? y[b * cols + c] : y[b * rows + r]) +=
            m[r * cols + c] * (transpose ? x[b * rows + r] : x[b * cols + c]);
  return y;
}

struct MaxRef {
  Vec y, idx;
};
MaxRef ref_max(const Vec& x, I64 nc, const Ints& in, const Ints& out, const Cfg& c) {
  MaxRef r;
  for (I64 b = 0; b < nc; ++b)
    for (I64 o = 0; o < prod(out); ++o) {
      double best = -kInf;
      I64 bi = -1;
      for (const auto& t : taps(in, out, c, o)) {
        if (!t.inside) continue;
        const double v = x[b * prod(in) + t.index];
        if (bi < 0 || v > best || std::isnan(v)) {
          best = v;
          bi = t.index;
        }
      }
      r.y.push_back(best);
      r.idx.push_back(static_cast<double>(bi));
    }
  return r;
}
Vec ref_max_backward(const Vec& g, const Vec& idx, I64 nc, I64 plane) {
  Vec gx(nc * plane, 0.0);
  const I64 per = static_cast<I64>(g.size()) / nc;
  for (I64 i = 0; i < nc * per; ++i)
    if (idx[i] >= 0) gx[(i / per) * plane + static_cast<I64>(idx[i])] += g[i];
  return gx;
}

// What rounding the result through dt costs (burn-flex computes f16 natively, bf16 in f32).
double tol(DTypeKind dt) {
  return dt == DTypeKind::BF16  ? 2e-2
         : dt == DTypeKind::F16 ? 4e-3
         : dt == DTypeKind::F32 ? 1e-5
                                : 1e-12;
}

// [N, C] = [2, 2] over D x H x W = 4 x 5 x 6: ATen's range, padding > kernel / 2 (explicit
// padding), dilation 1 / 2 / 3, ceil windows that overhang the padded input, a cropping last
// window, an effective kernel beyond the padded input in ceil mode.
const Ints kIn3{4, 5, 6};
const std::vector<Cfg> kCfgs3 = {
    {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, false},
    {{3, 3, 2}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, true},
    {{2, 3, 2}, {2, 1, 3}, {1, 1, 0}, {2, 1, 3}, true},
    {{2, 2, 2}, {1, 1, 1}, {2, 1, 2}, {1, 1, 1}, false},
    {{3, 2, 3}, {2, 3, 2}, {3, 2, 1}, {1, 2, 3}, true},
    {{1, 1, 1}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, false},
    {{2, 2, 3}, {3, 2, 1}, {1, 0, 1}, {3, 2, 1}, false},
    {{3, 3, 3}, {4, 4, 4}, {2, 2, 2}, {1, 1, 1}, false},
    {{2, 1, 2}, {3, 1, 2}, {0, 0, 2}, {4, 1, 2}, true},
};
// Over H x W = 5 x 6.
const Ints kIn2{5, 6};
const std::vector<Cfg> kCfgs2 = {
    {{2, 2}, {1, 1}, {0, 0}, {2, 2}, false}, {{3, 2}, {2, 1}, {1, 1}, {2, 3}, true},
    {{2, 3}, {2, 2}, {1, 1}, {1, 1}, true},  {{2, 2}, {1, 2}, {2, 1}, {3, 1}, false},
    {{3, 3}, {3, 2}, {3, 2}, {2, 2}, true},  {{2, 2}, {3, 3}, {1, 1}, {3, 3}, true},
};
// Over L = 9.
const Ints kIn1{9};
const std::vector<Cfg> kCfgs1 = {
    {{3}, {1}, {0}, {2}, false}, {{2}, {2}, {1}, {3}, true},  {{3}, {2}, {2}, {2}, false},
    {{2}, {3}, {2}, {3}, true},  {{3}, {1}, {1}, {1}, false},
};
const DTypeKind kFloats[] = {DTypeKind::F32, DTypeKind::F64, DTypeKind::F16, DTypeKind::BF16};

// Builds the avg pool op of c's rank (1-d, 2-d or 3-d).
OperationIr avg_op(const TensorIr& x, const Cfg& c, bool cip, const TensorIr& y) {
  switch (c.k.size()) {
    case 1:
      return make_op<K::Module_AvgPool1d>(
          AvgPool1dOpIr{x, u1(c.k), u1(c.s), u1(c.p), u1(c.d), cip, c.ceil, y});
    case 2:
      return make_op<K::Module_AvgPool2d>(
          AvgPool2dOpIr{x, u2(c.k), u2(c.s), u2(c.p), u2(c.d), cip, c.ceil, y});
    default:
      return make_op<K::Module_AvgPool3d>(
          AvgPool3dOpIr{x, u3(c.k), u3(c.s), u3(c.p), u3(c.d), cip, c.ceil, y});
  }
}
OperationIr avg_backward_op(const TensorIr& x, const TensorIr& g, const Cfg& c, bool cip,
                            const TensorIr& gx) {
  switch (c.k.size()) {
    case 1:
      return make_op<K::Module_AvgPool1dBackward>(
          AvgPool1dBackwardOpIr{x, g, u1(c.k), u1(c.s), u1(c.p), u1(c.d), cip, c.ceil, gx});
    case 2:
      return make_op<K::Module_AvgPool2dBackward>(
          AvgPool2dBackwardOpIr{x, g, u2(c.k), u2(c.s), u2(c.p), u2(c.d), cip, c.ceil, gx});
    default:
      return make_op<K::Module_AvgPool3dBackward>(
          AvgPool3dBackwardOpIr{x, g, u3(c.k), u3(c.s), u3(c.p), u3(c.d), cip, c.ceil, gx});
  }
}

OperationIr max_op(const TensorIr& x, const Cfg& c, const TensorIr& y,
                   const TensorIr* yi = nullptr) {
  if (yi) {
    return make_op<K::Module_MaxPool3dWithIndices>(
        MaxPool3dWithIndicesOpIr{x, u3(c.k), u3(c.s), u3(c.p), u3(c.d), c.ceil, y, *yi});
  }
  return make_op<K::Module_MaxPool3d>(
      MaxPool3dOpIr{x, u3(c.k), u3(c.s), u3(c.p), u3(c.d), c.ceil, y});
}
OperationIr max_backward_op(const TensorIr& x, const TensorIr& g, const TensorIr& idx, const Cfg& c,
                            const TensorIr& gx) {
  return make_op<K::Module_MaxPool3dWithIndicesBackward>(
      MaxPool3dWithIndicesBackwardOpIr{x, g, idx, u3(c.k), u3(c.s), u3(c.p), u3(c.d), c.ceil, gx});
}

class PoolTest : public OpTest {
 protected:
  // The forward of every config, count_include_pad and dtype against the reference.
  void check_avg_forward(const Ints& in, const std::vector<Cfg>& cfgs) {
    const I64 nc = 4;
    const Vec xv = rnd(nc * prod(in), 21, -2, 2);
    std::uint64_t id = 1;
    for (const auto& c : cfgs) {
      const auto osz = out_dims(in, c);
      const auto xd = dims_of(2, 2, in), od = dims_of(2, 2, osz);
      for (bool cip : {false, true}) {
        const auto expected = apply(avg_matrix(in, osz, c, cip), xv, nc, prod(osz));
        for (auto dt : kFloats) {
          SCOPED_TRACE(label(c, cip, dt));
          const auto x = tir(id, xd, dt);
          put(x, xv);
          run(avg_op(x, c, cip, out(id + 1, od, dt)));
          expect_near(get(tir(id + 1, od, dt)), expected, tol(dt));
          id += 2;
        }
      }
    }
  }

  // The backward against the reference's transpose, and as the adjoint of the lowered forward.
  void check_avg_backward(const Ints& in, const std::vector<Cfg>& cfgs) {
    const I64 nc = 4;
    const Vec xv = rnd(nc * prod(in), 1, -2, 2);
    std::uint64_t id = 1;
    for (const auto& c : cfgs) {
      const auto osz = out_dims(in, c);
      const auto xd = dims_of(2, 2, in), od = dims_of(2, 2, osz);
      for (bool cip : {false, true}) {
        const Vec gv = rnd(nc * prod(osz), 9 + static_cast<unsigned>(id), -2, 2);
        const auto expected = apply(avg_matrix(in, osz, c, cip), gv, nc, prod(osz), true);
        for (auto dt : {DTypeKind::F64, DTypeKind::F32, DTypeKind::F16}) {
          SCOPED_TRACE(label(c, cip, dt));
          const auto x = tir(id, xd, dt), g = tir(id + 1, od, dt);
          put(x, xv);
          put(g, gv);
          run(avg_backward_op(x, g, c, cip, out(id + 2, xd, dt)));
          run(avg_op(x, c, cip, out(id + 3, od, dt)));
          const auto gx = get(tir(id + 2, xd, dt));
          expect_near(gx, expected, tol(dt));
          // <pool(x), g> = <x, pool_backward(g)>
          if (dt == DTypeKind::F64) {
            EXPECT_NEAR(dot(get(tir(id + 3, od, dt)), gv), dot(xv, gx), 1e-9);
          }
          id += 4;
        }
      }
    }
  }

  // Max pool over kCfgs3 against the reference, for every dtype: values, and indices.
  void check_max_forward(bool with_indices) {
    const I64 nc = 3, plane = prod(kIn3);
    Vec xv = rnd(nc * plane, 11, -3, 3);
    // Plane 1 holds NaNs, plane 2 only -inf.
    for (I64 i = 0; i < plane; i += 13) xv[plane + i] = kNan;
    for (I64 i = 0; i < plane; ++i) xv[2 * plane + i] = -kInf;
    std::uint64_t id = 1;
    for (const auto& c : kCfgs3) {
      const auto osz = out_dims(kIn3, c);
      const auto ref = ref_max(xv, nc, kIn3, osz, c);
      const auto xd = dims_of(1, 3, kIn3), od = dims_of(1, 3, osz);
      for (auto dt : kFloats) {
        SCOPED_TRACE(label(c, false, dt));
        const auto x = tir(id, xd, dt), y = out(id + 1, od, dt);
        const auto yi = out(id + 2, od, dt == DTypeKind::F64 ? DTypeKind::I32 : DTypeKind::I64);
        put(x, xv);
        run(max_op(x, c, y, with_indices ? &yi : nullptr));
        expect_near(get(ro(y)), ref.y, 0);
        if (with_indices) {
          EXPECT_EQ(get(ro(yi)), ref.idx);
        }
        id += 3;
      }
    }
  }
};

#define POOL_SUITE(name) \
  class name : public PoolTest {}

// ---------------------------------------------------------------------------------------------
// 3-d avg pool

POOL_SUITE(Module_AvgPool3d);

TEST_F(Module_AvgPool3d, HandComputedDivisors) {
  // 2x2x2 of 1..8, kernel 2, stride 2, padding 1: each window holds one input element.
  const auto x = tir(1, {1, 1, 2, 2, 2});
  put(x, {1, 2, 3, 4, 5, 6, 7, 8});
  const Cfg c{{2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false};
  run(avg_op(x, c, true, out(2, {1, 1, 2, 2, 2})));
  run(avg_op(x, c, false, out(3, {1, 1, 2, 2, 2})));
  expect_near(get(tir(2, {1, 1, 2, 2, 2})), {0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1});
  expect_near(get(tir(3, {1, 1, 2, 2, 2})), {1, 2, 3, 4, 5, 6, 7, 8});
  // Kernel 2, dilation 2 over depth 3 (taps 0 and 2), the whole 1x2 plane: (1+2 + 5+6) / 4.
  const auto x3 = tir(4, {1, 1, 3, 1, 2});
  put(x3, {1, 2, 3, 4, 5, 6});
  run(avg_op(x3, {{2, 1, 2}, {1, 1, 1}, {0, 0, 0}, {2, 1, 1}, false}, true,
             out(5, {1, 1, 1, 1, 1})));
  expect_near(get(tir(5, {1, 1, 1, 1, 1})), {3.5});
}

TEST_F(Module_AvgPool3d, MatchesTheReferenceForEveryConfigAndDType) {
  check_avg_forward(kIn3, kCfgs3);
}

TEST_F(Module_AvgPool3d, EmptyTensorsAndErrors) {
  const Cfg k2{{2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false};
  const auto e = tir(1, {0, 2, 4, 4, 4});
  put(e, {});
  run(avg_op(e, k2, true, out(2, {0, 2, 3, 3, 3})));
  EXPECT_TRUE(get(tir(2, {0, 2, 3, 3, 3})).empty());
  // No input depth, padding 1: one window of padding only, 0.
  const auto z = tir(3, {1, 1, 0, 2, 2});
  put(z, {});
  run(avg_op(z, {{2, 2, 2}, {1, 1, 1}, {1, 0, 0}, {1, 1, 1}, false}, true,
             out(4, {1, 1, 1, 1, 1})));
  EXPECT_EQ(get(tir(4, {1, 1, 1, 1, 1})), (Vec{0}));
  const auto x = tir(5, {1, 1, 2, 2, 2});
  put(x, Vec(8, 1));
  EXPECT_THAT(run_error(avg_op(x, {{3, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false}, true,
                               out(6, {1, 1, 1, 1, 1}))),
              HasSubstr("kernel larger than the padded input"));
  EXPECT_THAT(run_error(avg_op(x, {{1, 1, 1}, {1, 0, 1}, {0, 0, 0}, {1, 1, 1}, false}, true,
                               out(7, {1, 1, 2, 2, 2}))),
              HasSubstr("must be > 0"));
  const auto x4 = tir(8, {1, 2, 2, 2});
  put(x4, Vec(8, 1));
  EXPECT_THAT(run_error(avg_op(x4, k2, true, out(9, {1, 2, 1, 1}))), HasSubstr("rank 5"));
}

POOL_SUITE(Module_AvgPool3dBackward);

TEST_F(Module_AvgPool3dBackward, IsTheAdjointOfTheForward) {
  check_avg_backward(kIn3, kCfgs3);
}

TEST_F(Module_AvgPool3dBackward, WindowsFollowTheGradNotCeilMode) {
  // burn-flex ignores ceil_mode here: a grad of the ceil-mode size (3 windows over depth 5, the
  // last one [4, 6) half outside) with ceil_mode false still gets its third window.
  const Cfg c{{2, 1, 1}, {2, 1, 1}, {0, 0, 0}, {1, 1, 1}, false};
  const auto x = tir(1, {1, 1, 5, 1, 1});
  put(x, Vec(5, 0));
  const auto g = tir(2, {1, 1, 3, 1, 1});
  put(g, {2, 4, 6});
  for (bool cip : {false, true}) {
    const auto gx = out(3 + cip, {1, 1, 5, 1, 1});
    run(avg_backward_op(x, g, c, cip, gx));
    expect_near(get(ro(gx)), {1, 1, 2, 2, 6});
  }
  const auto g2 = tir(5, {1, 2, 3, 1, 1});
  put(g2, Vec(6, 1));
  EXPECT_THAT(run_error(avg_backward_op(x, g2, c, true, out(6, {1, 1, 5, 1, 1}))),
              HasSubstr("does not match the input"));
}

// ---------------------------------------------------------------------------------------------
// 3-d max pool

POOL_SUITE(Module_MaxPool3d);

TEST_F(Module_MaxPool3d, HandComputedIncludingWindowsWithoutInput) {
  // Depth 3 x 1 x 3: kernel (2, 1, 2), dilation (2, 1, 2), padding (1, 0, 1): each output reads
  // depths {o - 1, o + 1} x columns {w - 1, w + 1} that exist.
  const auto x = tir(1, {1, 1, 3, 1, 3});
  put(x, {1, 5, 2, 4, 3, 9, 0, 8, 6});
  run(max_op(x, {{2, 1, 2}, {1, 1, 1}, {1, 0, 1}, {2, 1, 2}, false}, out(2, {1, 1, 3, 1, 3})));
  EXPECT_EQ(get(tir(2, {1, 1, 3, 1, 3})), (Vec{3, 9, 3, 8, 6, 8, 3, 9, 3}));
  // Padding 2 > kernel 2 / 2 (ATen refuses it): only the last window holds input.
  const auto x1 = tir(3, {1, 1, 1, 1, 1});
  put(x1, {7});
  run(max_op(x1, {{2, 1, 1}, {2, 1, 1}, {2, 0, 0}, {1, 1, 1}, false}, out(4, {1, 1, 2, 1, 1})));
  EXPECT_EQ(get(tir(4, {1, 1, 2, 1, 1})), (Vec{-kInf, 7}));
}

TEST_F(Module_MaxPool3d, MatchesTheReferenceForEveryConfigAndDType) {
  check_max_forward(false);
}

POOL_SUITE(Module_MaxPool3dWithIndices);

TEST_F(Module_MaxPool3dWithIndices, FlatIndicesIntoEachVolume) {
  // Kernel 2 over 2x2x2 planes: index = (d * H + h) * W + w. Channel 0: the first of tied
  // maxima; channel 1: the last NaN; channel 2: all -inf, the first element.
  const auto x = tir(1, {1, 3, 2, 2, 2});
  Vec xv{1, 9, 3, 4, 9, 2, 0, 5, 1, kNan, 3, 4, kNan, 8, 2, 0};
  xv.resize(24, -kInf);
  put(x, xv);
  const auto y = out(2, {1, 3, 1, 1, 1}), yi = out(3, {1, 3, 1, 1, 1}, DTypeKind::I64);
  run(max_op(x, {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, false}, y, &yi));
  expect_near(get(ro(y)), {9, kNan, -kInf});
  EXPECT_EQ(get(ro(yi)), (Vec{1, 4, 0}));
}

TEST_F(Module_MaxPool3dWithIndices, MatchesTheReferenceIncludingMinusInfinityAndNaN) {
  check_max_forward(true);
}

TEST_F(Module_MaxPool3dWithIndices, DilationSteppingOverTheInputGivesMinusOne) {
  // Depth 1, kernel 2, dilation 2, padding 1 (within ATen's range): the taps -1 and 1 both miss
  // the input, so the window is empty.
  const auto x = tir(1, {1, 1, 1, 2, 2});
  put(x, {1, 2, 3, 4});
  const auto y = out(2, {1, 1, 1, 1, 1}), yi = out(3, {1, 1, 1, 1, 1}, DTypeKind::I64);
  run(max_op(x, {{2, 2, 2}, {1, 1, 1}, {1, 0, 0}, {2, 1, 1}, false}, y, &yi));
  EXPECT_EQ(get(ro(y)), (Vec{-kInf}));
  EXPECT_EQ(get(ro(yi)), (Vec{-1}));
}

POOL_SUITE(Module_MaxPool3dWithIndicesBackward);

TEST_F(Module_MaxPool3dWithIndicesBackward, ScattersGradToTheRecordedIndices) {
  // Overlapping windows (stride 1 < kernel 2 along depth) pick the same maximum: grads add up.
  const Cfg c{{2, 1, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false};
  const auto x = tir(1, {1, 1, 3, 1, 2});
  put(x, {1, 2, 9, 3, 4, 5});
  const auto yi = out(3, {1, 1, 2, 1, 1}, DTypeKind::I32);
  run(max_op(x, c, out(2, {1, 1, 2, 1, 1}), &yi));
  EXPECT_EQ(get(ro(yi)), (Vec{2, 2}));
  const auto g = tir(4, {1, 1, 2, 1, 1});
  put(g, {1, 10});
  run(max_backward_op(x, g, ro(yi), c, out(5, {1, 1, 3, 1, 2})));
  EXPECT_EQ(get(tir(5, {1, 1, 3, 1, 2})), (Vec{0, 0, 11, 0, 0, 0}));
  const auto bad = tir(6, {1, 1, 1, 1, 1}, DTypeKind::I64);
  put(bad, {0});
  EXPECT_THAT(run_error(max_backward_op(x, g, bad, c, out(7, {1, 1, 3, 1, 2}))),
              HasSubstr("do not match the gradient"));
}

TEST_F(Module_MaxPool3dWithIndicesBackward, MatchesTheReferenceAndSkipsMinusOne) {
  const I64 nc = 4;
  const Vec xv = rnd(nc * prod(kIn3), 3, -2, 2);
  std::uint64_t id = 1;
  for (const auto& c : kCfgs3) {
    const auto osz = out_dims(kIn3, c);
    const auto ref = ref_max(xv, nc, kIn3, osz, c);
    const Vec gv = rnd(ref.y.size(), 5, -1, 1);
    for (auto dt : {DTypeKind::F32, DTypeKind::F64, DTypeKind::F16}) {
      const auto xd = dims_of(2, 2, kIn3), od = dims_of(2, 2, osz);
      const auto x = tir(id, xd, dt), idx = tir(id + 1, od, DTypeKind::I64),
                 g = tir(id + 2, od, dt);
      put(x, xv);
      put(idx, ref.idx);
      put(g, gv);
      run(max_backward_op(x, g, idx, c, out(id + 3, xd, dt)));
      SCOPED_TRACE(label(c, false, dt));
      expect_near(get(tir(id + 3, xd, dt)), ref_max_backward(gv, ref.idx, nc, prod(kIn3)),
                  dt == DTypeKind::F16 ? 1e-2 : 1e-6);
      id += 4;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Dilated 1-d and 2-d avg pools (Burn 0.23), and the 2-d max pool's dilation-only empty windows

POOL_SUITE(Module_AvgPool1dDilation);

TEST_F(Module_AvgPool1dDilation, HandComputed) {
  // 1..7, kernel 3, dilation 2: windows {0, 2, 4} {1, 3, 5} {2, 4, 6}.
  const auto x = tir(1, {1, 1, 7});
  put(x, {1, 2, 3, 4, 5, 6, 7});
  run(make_op<K::Module_AvgPool1d>(AvgPool1dOpIr{x, 3, 1, 0, 2, true, false, out(2, {1, 1, 3})}));
  expect_near(get(tir(2, {1, 1, 3})), {3, 4, 5});
  // Padding 2: the first window's taps -2, 0, 2 hold 1 + 3, over 3 taps (cip) or 2.
  run(make_op<K::Module_AvgPool1d>(AvgPool1dOpIr{x, 3, 1, 2, 2, true, false, out(3, {1, 1, 7})}));
  run(make_op<K::Module_AvgPool1d>(AvgPool1dOpIr{x, 3, 1, 2, 2, false, false, out(4, {1, 1, 7})}));
  expect_near(get(tir(3, {1, 1, 7})), {4.0 / 3, 2, 3, 4, 5, 10.0 / 3, 4});
  expect_near(get(tir(4, {1, 1, 7})), {2, 3, 3, 4, 5, 5, 6});
}

TEST_F(Module_AvgPool1dDilation, MatchesTheReferenceForEveryConfigAndDType) {
  check_avg_forward(kIn1, kCfgs1);
}

TEST_F(Module_AvgPool1dDilation, BackwardIsTheAdjointOfTheForward) {
  check_avg_backward(kIn1, kCfgs1);
}

POOL_SUITE(Module_AvgPool2dDilation);

TEST_F(Module_AvgPool2dDilation, MatchesTheReferenceForEveryConfigAndDType) {
  check_avg_forward(kIn2, kCfgs2);
}

TEST_F(Module_AvgPool2dDilation, BackwardIsTheAdjointOfTheForward) {
  check_avg_backward(kIn2, kCfgs2);
}

POOL_SUITE(Module_MaxPool2dDilation);

TEST_F(Module_MaxPool2dDilation, DilationSteppingOverTheInputGivesMinusOne) {
  // Height 1, kernel 2, dilation 2, padding 1: the taps -1 and 1 miss the only row.
  const auto x = tir(1, {1, 1, 1, 3});
  put(x, {1, 2, 3});
  const auto y = out(2, {1, 1, 1, 4}), yi = out(3, {1, 1, 1, 4}, DTypeKind::I64);
  run(make_op<K::Module_MaxPool2dWithIndices>(
      MaxPool2dWithIndicesOpIr{x, u2({2, 2}), u2({1, 1}), u2({1, 1}), u2({2, 1}), false, y, yi}));
  EXPECT_EQ(get(ro(y)), (Vec{-kInf, -kInf, -kInf, -kInf}));
  EXPECT_EQ(get(ro(yi)), (Vec{-1, -1, -1, -1}));
}

}  // namespace
}  // namespace tb::test
