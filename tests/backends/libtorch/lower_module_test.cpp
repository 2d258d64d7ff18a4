// ModuleOperationIr leaves other than the convolutions. Expected values come from hand
// computations or from the reference loops below, written from Burn's definitions (the
// ModuleOps trait defaults and burn-flex), independently of the lowering.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
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

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

Vec seq(std::size_t n, double start = 0, double step = 1) {
  Vec v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<double>(i);
  return v;
}
// Values rounded through `dtype` (what registering them stores).
Vec rounded(const Vec& v, DTypeKind dtype) {
  Vec r = v;
  for (auto& x : r) {
    if (dtype == DTypeKind::F16) x = static_cast<float>(c10::Half(static_cast<float>(x)));
    if (dtype == DTypeKind::BF16) x = static_cast<float>(c10::BFloat16(static_cast<float>(x)));
    if (dtype == DTypeKind::F32) x = static_cast<float>(x);
  }
  return r;
}

class ModuleTest : public OpTest {
 protected:
  ModuleTest() {
    // Returns a transposed VIEW of its input: feeds non-contiguous tensors to the lowerings.
    registry->add(
        "swap_last2",
        [](const backend::libtorch::CustomOpCall& call) -> Result<std::vector<at::Tensor>> {
          return std::vector<at::Tensor>{call.inputs.at(0).transpose(-2, -1)};
        });
  }
  // Registers `values` (row-major in t's shape) as a non-contiguous tensor t.
  void put_nc(const TensorIr& t, const Vec& values) {
    Dims d = t.shape.dims;
    ASSERT_GE(d.size(), 2u);
    const auto r = d[d.size() - 2], c = d[d.size() - 1];
    const auto batch = num_elements(d) / std::max<std::uint64_t>(r * c, 1);
    Vec tv(values.size());
    for (std::uint64_t b = 0; b < batch; ++b)
      for (std::uint64_t i = 0; i < r; ++i)
        for (std::uint64_t j = 0; j < c; ++j)
          tv[b * r * c + j * r + i] = values[b * r * c + i * c + j];
    Dims td = d;
    std::swap(td[td.size() - 2], td[td.size() - 1]);
    const auto src = tir(t.id.value + 100000, td, t.dtype);
    put(src, tv);
    run(make_op<K::Custom_Op>(
        CustomOpIr{"swap_last2", {rw(src)}, {out(t.id.value, d, t.dtype)}, {}}));
  }
  std::uint64_t live() { return exec->stats().live_tensors; }
};

#define MODULE_SUITE(name) \
  class name : public ModuleTest {}

// ---------------------------------------------------------------------------------------------
// Reference loops (Burn / burn-flex semantics), NCHW, double precision.

struct PoolCfg {
  I64 k[2], s[2], p[2], d[2];
  bool ceil;
};
// Burn's calculate_pool_output_size.
I64 pool_out(I64 in, I64 k, I64 s, I64 p, I64 d, bool ceil) {
  const I64 padded = in + 2 * p, ext = d * (k - 1) + 1;
  if (ceil) {
    const I64 out = (padded + s - 1 - ext) / s + 1;
    return (out - 1) * s >= in + p ? out - 1 : out;
  }
  return (padded - ext) / s + 1;
}

struct PoolRef {
  Vec y, idx;
  I64 oh, ow;
};
PoolRef ref_max_pool(const Vec& x, I64 nc, I64 h, I64 w, const PoolCfg& c) {
  PoolRef r;
  r.oh = pool_out(h, c.k[0], c.s[0], c.p[0], c.d[0], c.ceil);
  r.ow = pool_out(w, c.k[1], c.s[1], c.p[1], c.d[1], c.ceil);
  for (I64 b = 0; b < nc; ++b)
    for (I64 oy = 0; oy < r.oh; ++oy)
      for (I64 ox = 0; ox < r.ow; ++ox) {
        double best = -kInf;
        I64 bi = -1;
        for (I64 ky = 0; ky < c.k[0]; ++ky)
          for (I64 kx = 0; kx < c.k[1]; ++kx) {
            const I64 iy = oy * c.s[0] - c.p[0] + ky * c.d[0];
            const I64 ix = ox * c.s[1] - c.p[1] + kx * c.d[1];
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const double v = x[b * h * w + iy * w + ix];
            if (bi < 0 || v > best || std::isnan(v)) {
              best = v;
              bi = iy * w + ix;
            }
          }
        r.y.push_back(best);
        r.idx.push_back(static_cast<double>(bi));
      }
  return r;
}
Vec ref_max_pool_backward(const Vec& grad, const Vec& idx, I64 nc, I64 plane) {
  Vec gx(nc * plane, 0.0);
  const I64 per = static_cast<I64>(grad.size()) / nc;
  for (I64 b = 0; b < nc; ++b)
    for (I64 i = 0; i < per; ++i)
      if (idx[b * per + i] >= 0)
        gx[b * plane + static_cast<I64>(idx[b * per + i])] += grad[b * per + i];
  return gx;
}
// Burn's avg pool as (input index, weight) lists per output element of one plane.
std::vector<std::vector<std::pair<I64, double>>> avg_pool_weights(I64 h, I64 w, const PoolCfg& c,
                                                                  bool cip, I64 oh, I64 ow) {
  std::vector<std::vector<std::pair<I64, double>>> out;
  for (I64 oy = 0; oy < oh; ++oy)
    for (I64 ox = 0; ox < ow; ++ox) {
      std::vector<I64> members;
      I64 padded_count = 0;
      for (I64 ky = 0; ky < c.k[0]; ++ky)
        for (I64 kx = 0; kx < c.k[1]; ++kx) {
          const I64 py = oy * c.s[0] + ky, px = ox * c.s[1] + kx;  // padded coordinates
          if (py < h + 2 * c.p[0] && px < w + 2 * c.p[1]) ++padded_count;
          const I64 iy = py - c.p[0], ix = px - c.p[1];
          if (iy >= 0 && iy < h && ix >= 0 && ix < w) members.push_back(iy * w + ix);
        }
      const double div = static_cast<double>(
          std::max<I64>(cip ? padded_count : static_cast<I64>(members.size()), 1));
      std::vector<std::pair<I64, double>> ws;
      for (auto m : members) ws.emplace_back(m, 1.0 / div);
      out.push_back(ws);
    }
  return out;
}
using Weights = std::vector<std::vector<std::pair<I64, double>>>;
Vec apply_weights(const Weights& ws, const Vec& x, I64 nc, I64 plane_in) {
  Vec y;
  for (I64 b = 0; b < nc; ++b)
    for (const auto& row : ws) {
      double s = 0;
      for (const auto& [i, wt] : row) s += wt * x[b * plane_in + i];
      y.push_back(s);
    }
  return y;
}
Vec apply_weights_t(const Weights& ws, const Vec& g, I64 nc, I64 plane_in) {
  Vec gx(nc * plane_in, 0.0);
  const I64 per = static_cast<I64>(ws.size());
  for (I64 b = 0; b < nc; ++b)
    for (I64 o = 0; o < per; ++o)
      for (const auto& [i, wt] : ws[o]) gx[b * plane_in + i] += wt * g[b * per + o];
  return gx;
}
// Adaptive avg pool windows [floor(o * in / out), ceil((o + 1) * in / out)) per axis.
Weights adaptive_weights(const std::vector<I64>& in, const std::vector<I64>& out) {
  std::vector<std::vector<std::pair<I64, I64>>> ranges;
  for (std::size_t a = 0; a < in.size(); ++a) {
    std::vector<std::pair<I64, I64>> r;
    for (I64 o = 0; o < out[a]; ++o)
      r.emplace_back(o * in[a] / out[a], ((o + 1) * in[a] + out[a] - 1) / out[a]);
    ranges.push_back(r);
  }
  Weights ws;
  std::function<void(std::size_t, std::vector<std::pair<I64, I64>>)> rec =
      [&](std::size_t a, std::vector<std::pair<I64, I64>> sel) {
        if (a == in.size()) {
          std::vector<I64> members{0};
          for (std::size_t ax = 0; ax < in.size(); ++ax) {
            std::vector<I64> next;
            for (auto m : members)
              for (I64 i = sel[ax].first; i < sel[ax].second; ++i) next.push_back(m * in[ax] + i);
            members = next;
          }
          std::vector<std::pair<I64, double>> row;
          for (auto m : members) row.emplace_back(m, 1.0 / static_cast<double>(members.size()));
          ws.push_back(row);
          return;
        }
        for (auto r : ranges[a]) {
          auto s = sel;
          s.push_back(r);
          rec(a + 1, s);
        }
      };
  rec(0, {});
  return ws;
}

// Interpolation, per axis: (index, weight) taps for each output coordinate (burn-flex).
using AxisTaps = std::vector<std::vector<std::pair<I64, double>>>;
double flex_coord(I64 o, I64 in, I64 out, bool ac) {
  if (ac)
    return static_cast<double>(o) * ((in - 1.0) / static_cast<double>(std::max<I64>(out - 1, 1)));
  return (o + 0.5) * (static_cast<double>(in) / static_cast<double>(out)) - 0.5;
}
double cubic(double t) {
  const double a = -0.75, x = std::abs(t);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}
double lanczos(double x) {
  if (x == 0) return 1;
  if (std::abs(x) >= 3) return 0;
  return std::sin(kPi * x) * std::sin(kPi * x / 3) / (kPi * x * kPi * x / 3);
}
AxisTaps axis_taps(InterpolateModeIr mode, I64 in, I64 out, bool ac) {
  AxisTaps taps(out);
  for (I64 o = 0; o < out; ++o) {
    auto& t = taps[o];
    switch (mode) {
      case InterpolateModeIr::Nearest:
        t.emplace_back(
            std::min<I64>(static_cast<I64>(std::floor(o * (double(in) / double(out)))), in - 1),
            1.0);
        break;
      case InterpolateModeIr::NearestExact:
        t.emplace_back(std::min<I64>((2 * o + 1) * in / (2 * out), in - 1), 1.0);
        break;
      case InterpolateModeIr::Bilinear: {
        const double c = flex_coord(o, in, out, ac);
        const I64 lo = static_cast<I64>(std::max(std::floor(c), 0.0));
        const I64 hi = std::min(lo + 1, in - 1);
        const double f = std::max(c - static_cast<double>(lo), 0.0);
        t.emplace_back(lo, 1 - f);
        t.emplace_back(hi, f);
        break;
      }
      case InterpolateModeIr::Bicubic: {
        const double c = flex_coord(o, in, out, ac);
        const I64 base = static_cast<I64>(std::floor(c));
        for (I64 off = -1; off <= 2; ++off)
          t.emplace_back(std::clamp<I64>(base + off, 0, in - 1), cubic(c - base - off));
        break;
      }
      case InterpolateModeIr::Lanczos3: {
        const double c = flex_coord(o, in, out, ac);
        const double base = std::floor(c);
        for (I64 off = -2; off <= 3; ++off) {
          const I64 i = static_cast<I64>(base) + off;
          if (i >= 0 && i < in) t.emplace_back(i, lanczos(c - (base + off)));
        }
        break;
      }
    }
  }
  return taps;
}
Weights interp_weights(InterpolateModeIr mode, I64 h, I64 w, I64 oh, I64 ow, bool ac) {
  const auto ty = axis_taps(mode, h, oh, ac), tx = axis_taps(mode, w, ow, ac);
  Weights ws;
  for (I64 oy = 0; oy < oh; ++oy)
    for (I64 ox = 0; ox < ow; ++ox) {
      std::vector<std::pair<I64, double>> row;
      double sum = 0;
      for (auto [iy, wy] : ty[oy])
        for (auto [ix, wx] : tx[ox]) {
          row.emplace_back(iy * w + ix, wy * wx);
          sum += wy * wx;
        }
      if (mode == InterpolateModeIr::Lanczos3 && sum != 0)
        for (auto& e : row) e.second /= sum;
      ws.push_back(row);
    }
  return ws;
}

// ---------------------------------------------------------------------------------------------
// BatchNorm

MODULE_SUITE(Module_BatchNorm);

TEST_F(Module_BatchNorm, NormalizesPerChannelAlongDim1) {
  // x [2, 3, 2]: channel c of sample n at [n, c, :].
  const auto x = tir(1, {2, 3, 2});
  const Vec xv = seq(12, -3, 0.5);
  const Vec gamma{1, 2, -1}, beta{0, 0.5, 3}, mean{0.5, -1, 2}, var{1, 4, 0.25};
  put(x, xv);
  put(tir(2, {3}), gamma);
  put(tir(3, {3}), beta);
  put(tir(4, {3}), mean);
  put(tir(5, {3}), var);
  const double eps = 1e-3;
  run(make_op<K::Module_BatchNorm>(BatchNormOpIr{
      x, tir(2, {3}), tir(3, {3}), tir(4, {3}), tir(5, {3}), ScalarIr::f(eps), out(6, {2, 3, 2})}));
  Vec expected;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 2; ++i)
        expected.push_back((xv[n * 6 + c * 2 + i] - mean[c]) / std::sqrt(var[c] + eps) * gamma[c] +
                           beta[c]);
  expect_near(get(tir(6, {2, 3, 2})), expected);
}

TEST_F(Module_BatchNorm, HalfPrecisionRank2AndRank4) {
  std::uint64_t id = 100;
  for (auto dt : {DTypeKind::F16, DTypeKind::BF16, DTypeKind::F64}) {
    const auto x = tir(id, {2, 2}, dt);
    put(x, {1, 2, 3, 4});
    for (std::uint64_t i = 1; i <= 4; ++i)
      put(tir(id + i, {2}, dt), i == 4 ? Vec{3, 0} : Vec{1, 1});
    // gamma = beta = mean = 1, var = [3, 0]; eps 1: (x - 1) / sqrt(var + 1) + 1 per column.
    run(make_op<K::Module_BatchNorm>(BatchNormOpIr{x, tir(id + 1, {2}, dt), tir(id + 2, {2}, dt),
                                                   tir(id + 3, {2}, dt), tir(id + 4, {2}, dt),
                                                   ScalarIr::f(1.0), out(id + 5, {2, 2}, dt)}));
    expect_near(get(tir(id + 5, {2, 2}, dt)), {1, 2, 2, 4}, 1e-2);
    id += 10;
  }
  const auto x4 = tir(11, {1, 2, 1, 2});
  put(x4, {1, 2, 3, 4});
  for (std::uint64_t i = 12; i <= 15; ++i) put(tir(i, {2}), i == 15 ? Vec{4, 1} : Vec{0, 1});
  // channel 0: gamma 0 -> beta 0; channel 1: (x - 1) / sqrt(1 + 0) * 1 + 1 = x.
  // (var 0 with eps 0 would give x / 0 * 0 = NaN, as in Burn.)
  run(make_op<K::Module_BatchNorm>(BatchNormOpIr{x4, tir(12, {2}), tir(13, {2}), tir(14, {2}),
                                                 tir(15, {2}), ScalarIr::f(0.0),
                                                 out(16, {1, 2, 1, 2})}));
  expect_near(get(tir(16, {1, 2, 1, 2})), {0, 0, 3, 4});
}

// ---------------------------------------------------------------------------------------------
// LayerNorm

MODULE_SUITE(Module_LayerNorm);

TEST_F(Module_LayerNorm, NormalizesTheLastDimWithBiasedVariance) {
  const auto x = tir(1, {2, 2, 3});
  const Vec xv{1, 2, 3, -1, 0, 5, 2, 2, 2, 0, 10, 20};
  put(x, xv);
  put(tir(2, {3}), {1, 2, 0.5});
  put(tir(3, {3}), {0, -1, 1});
  const double eps = 1e-5;
  run(make_op<K::Module_LayerNorm>(
      LayerNormOpIr{x, tir(2, {3}), tir(3, {3}), ScalarIr::f(eps), out(4, {2, 2, 3})}));
  run(make_op<K::Module_LayerNorm>(
      LayerNormOpIr{x, tir(2, {3}), std::nullopt, ScalarIr::f(eps), out(5, {2, 2, 3})}));
  Vec with_beta, without;
  const Vec g{1, 2, 0.5}, b{0, -1, 1};
  for (int r = 0; r < 4; ++r) {
    const double m = (xv[3 * r] + xv[3 * r + 1] + xv[3 * r + 2]) / 3;
    double v = 0;
    for (int i = 0; i < 3; ++i) v += (xv[3 * r + i] - m) * (xv[3 * r + i] - m) / 3;
    for (int i = 0; i < 3; ++i) {
      const double nrm = (xv[3 * r + i] - m) / std::sqrt(v + eps);
      with_beta.push_back(nrm * g[i] + b[i]);
      without.push_back(nrm * g[i]);
    }
  }
  expect_near(get(tir(4, {2, 2, 3})), with_beta, 1e-4);
  expect_near(get(tir(5, {2, 2, 3})), without, 1e-4);
}

TEST_F(Module_LayerNorm, HalfPrecisionAndNonContiguousInput) {
  for (auto dt : {DTypeKind::F16, DTypeKind::BF16}) {
    const auto x = tir(1, {1, 2}, dt);
    put(x, {1, 3});
    put(tir(2, {2}, dt), {1, 1});
    run(make_op<K::Module_LayerNorm>(
        LayerNormOpIr{x, tir(2, {2}, dt), std::nullopt, ScalarIr::f(0.0), out(3, {1, 2}, dt)}));
    expect_near(get(tir(3, {1, 2}, dt)), {-1, 1}, 1e-2);
  }
  // Rows of the logical [3, 2] tensor (1, 2), (3, 5), (0, 0) fed as a transposed view.
  const auto x = tir(10, {3, 2});
  put_nc(x, {1, 2, 3, 5, 0, 0});
  put(tir(11, {2}), {1, 1});
  run(make_op<K::Module_LayerNorm>(
      LayerNormOpIr{x, tir(11, {2}), std::nullopt, ScalarIr::f(1.0), out(12, {3, 2})}));
  // (x - m) / sqrt(var + 1): row (1, 2): var 0.25 -> -+0.5 / sqrt(1.25).
  const double a = 0.5 / std::sqrt(1.25), b = 1.0 / std::sqrt(2.0);
  expect_near(get(tir(12, {3, 2})), {-a, a, -b, b, 0, 0});
}

// ---------------------------------------------------------------------------------------------
// Embedding

MODULE_SUITE(Module_Embedding);

TEST_F(Module_Embedding, GathersRowsForEveryIntDType) {
  const auto w = tir(1, {4, 3});
  put(w, seq(12));
  std::uint64_t id = 10;
  for (auto it : {DTypeKind::I64, DTypeKind::I32, DTypeKind::I16, DTypeKind::I8, DTypeKind::U64,
                  DTypeKind::U32, DTypeKind::U16, DTypeKind::U8}) {
    const auto idx = tir(id, {2, 2}, it);
    put(idx, {3, 0, 0, 2});
    run(make_op<K::Module_Embedding>(EmbeddingOpIr{w, idx, out(id + 1, {2, 2, 3})}));
    EXPECT_EQ(get(tir(id + 1, {2, 2, 3})), (Vec{9, 10, 11, 0, 1, 2, 0, 1, 2, 6, 7, 8}))
        << DType(it).name();
    id += 2;
  }
}

TEST_F(Module_Embedding, HalfWeightsEmptyIndicesAndOutOfRange) {
  const auto w = tir(1, {2, 2}, DTypeKind::F16);
  put(w, {0.5, 1.5, -2, 4});
  const auto idx = tir(2, {1, 3}, DTypeKind::I32);
  put(idx, {1, 1, 0});
  run(make_op<K::Module_Embedding>(EmbeddingOpIr{w, rw(idx), out(3, {1, 3, 2}, DTypeKind::F16)}));
  EXPECT_EQ(get(tir(3, {1, 3, 2}, DTypeKind::F16)), (Vec{-2, 4, -2, 4, 0.5, 1.5}));
  EXPECT_EQ(live(), 2u) << "the ReadWrite indices were freed";

  const auto empty = tir(4, {0, 5}, DTypeKind::I64);
  put(empty, {});
  run(make_op<K::Module_Embedding>(EmbeddingOpIr{w, empty, out(5, {0, 5, 2}, DTypeKind::F16)}));
  EXPECT_TRUE(get(tir(5, {0, 5, 2}, DTypeKind::F16)).empty());

  const auto bad = tir(6, {1, 1}, DTypeKind::I64);
  put(bad, {2});
  run_error(make_op<K::Module_Embedding>(EmbeddingOpIr{w, bad, out(7, {1, 1, 2}, DTypeKind::F16)}));
}

MODULE_SUITE(Module_EmbeddingBackward);

TEST_F(Module_EmbeddingBackward, RepeatedIndicesAccumulate) {
  const auto w = tir(1, {4, 2});
  put(w, seq(8));
  const auto g = tir(2, {2, 3, 2});
  put(g, seq(12, 1));
  const auto idx = tir(3, {2, 3}, DTypeKind::U32);
  put(idx, {1, 3, 1, 0, 1, 3});
  run(make_op<K::Module_EmbeddingBackward>(EmbeddingBackwardOpIr{w, g, idx, out(4, {4, 2})}));
  // rows of g: (1,2) (3,4) (5,6) (7,8) (9,10) (11,12) -> 1: 1+5+9, 3: 3+11, 0: 7, 2: none.
  EXPECT_EQ(get(tir(4, {4, 2})), (Vec{7, 8, 15, 18, 0, 0, 14, 16}));
}

TEST_F(Module_EmbeddingBackward, HalfPrecisionAccumulation) {
  const auto w = tir(1, {2, 1}, DTypeKind::BF16);
  put(w, {0, 0});
  const auto g = tir(2, {1, 4, 1}, DTypeKind::BF16);
  put(g, {256, 1, 1, 1});
  const auto idx = tir(3, {1, 4}, DTypeKind::I64);
  put(idx, {0, 0, 0, 0});
  run(make_op<K::Module_EmbeddingBackward>(
      EmbeddingBackwardOpIr{w, g, idx, out(4, {2, 1}, DTypeKind::BF16)}));
  // 259 in bf16 is 258 or 260; accumulating in bf16 (256 + 1 = 256) would give 256.
  const auto r = get(tir(4, {2, 1}, DTypeKind::BF16));
  EXPECT_NEAR(r[0], 259, 1.01);
  EXPECT_EQ(r[1], 0);
}

// ---------------------------------------------------------------------------------------------
// Linear: weight [d_in, d_out]

Vec ref_matmul(const Vec& a, const Vec& b, I64 m, I64 k, I64 n) {
  Vec c(m * n, 0.0);
  for (I64 i = 0; i < m; ++i)
    for (I64 j = 0; j < n; ++j)
      for (I64 l = 0; l < k; ++l) c[i * n + j] += a[i * k + l] * b[l * n + j];
  return c;
}
Vec ref_transpose(const Vec& a, I64 r, I64 c) {
  Vec t(a.size());
  for (I64 i = 0; i < r; ++i)
    for (I64 j = 0; j < c; ++j) t[j * r + i] = a[i * c + j];
  return t;
}

MODULE_SUITE(Module_Linear);

TEST_F(Module_Linear, WeightIsInputByOutput) {
  // x [2, 2, 3] @ W [3, 2] + b [2]; W is NOT PyTorch's [out, in].
  const auto x = tir(1, {2, 2, 3});
  const Vec xv = seq(12, -2);
  const Vec wv{1, 2, 3, 4, 5, 6};
  put(x, xv);
  put(tir(2, {3, 2}), wv);
  put(tir(3, {2}), {0.5, -1});
  run(make_op<K::Module_Linear>(LinearOpIr{x, tir(2, {3, 2}), tir(3, {2}), out(4, {2, 2, 2})}));
  run(make_op<K::Module_Linear>(LinearOpIr{x, tir(2, {3, 2}), std::nullopt, out(5, {2, 2, 2})}));
  const auto prod = ref_matmul(xv, wv, 4, 3, 2);
  Vec biased = prod;
  for (std::size_t i = 0; i < biased.size(); ++i) biased[i] += i % 2 ? -1 : 0.5;
  EXPECT_EQ(get(tir(4, {2, 2, 2})), biased);
  EXPECT_EQ(get(tir(5, {2, 2, 2})), prod);
}

TEST_F(Module_Linear, RankOneHalfNonContiguousAndEmpty) {
  const auto x1 = tir(1, {2});
  put(x1, {1, -1});
  put(tir(2, {2, 3}), seq(6));
  run(make_op<K::Module_Linear>(LinearOpIr{x1, tir(2, {2, 3}), std::nullopt, out(3, {3})}));
  EXPECT_EQ(get(tir(3, {3})), (Vec{-3, -3, -3}));

  for (auto dt : {DTypeKind::F16, DTypeKind::BF16}) {
    const auto x = tir(10, {2, 2}, dt);
    put(x, {1, 2, 3, 4});
    put(tir(11, {2, 1}, dt), {0.5, 0.25});
    put(tir(12, {1}, dt), {1});
    run(make_op<K::Module_Linear>(
        LinearOpIr{rw(x), rw(tir(11, {2, 1}, dt)), rw(tir(12, {1}, dt)), out(13, {2, 1}, dt)}));
    EXPECT_EQ(get(tir(13, {2, 1}, dt)), (Vec{2, 3.5}));
  }

  const auto xt = tir(20, {3, 2});
  const Vec xv{1, 2, 3, 4, 5, 6};
  put_nc(xt, xv);
  put(tir(21, {2, 2}), {1, 0, 1, 1});
  run(make_op<K::Module_Linear>(LinearOpIr{xt, tir(21, {2, 2}), std::nullopt, out(22, {3, 2})}));
  EXPECT_EQ(get(tir(22, {3, 2})), (Vec{3, 2, 7, 4, 11, 6}));

  const auto e = tir(30, {0, 2});
  put(e, {});
  run(make_op<K::Module_Linear>(LinearOpIr{e, tir(21, {2, 2}), std::nullopt, out(31, {0, 2})}));
  EXPECT_TRUE(get(tir(31, {0, 2})).empty());
}

// The fused path (one GEMM with the bias as accumulator): a model-sized product with a bias,
// rank 3, a non-contiguous x, a bias of 1 element broadcast and an empty contraction (the output
// is the bias alone).
TEST_F(Module_Linear, BiasFusedIntoTheProduct) {
  const I64 rows = 2 * 33, d_in = 70, d_out = 45;
  const Vec xv = rnd(rows * d_in, 1), wv = rnd(d_in * d_out, 2), bv = rnd(d_out, 3);
  put(tir(1, {2, 33, 70}), xv);
  put(tir(2, {70, 45}), wv);
  put(tir(3, {45}), bv);
  run(make_op<K::Module_Linear>(
      LinearOpIr{tir(1, {2, 33, 70}), tir(2, {70, 45}), tir(3, {45}), out(4, {2, 33, 45})}));
  Vec want = ref_matmul(xv, wv, rows, d_in, d_out);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] += bv[i % d_out];
  expect_near(get(tir(4, {2, 33, 45})), want, 1e-5);

  const auto xt = tir(10, {3, 2});
  put_nc(xt, {1, 2, 3, 4, 5, 6});
  put(tir(11, {2, 2}), {1, 0, 1, 1});
  put(tir(12, {1}), {0.5});
  run(make_op<K::Module_Linear>(LinearOpIr{xt, tir(11, {2, 2}), tir(12, {1}), out(13, {3, 2})}));
  EXPECT_EQ(get(tir(13, {3, 2})), (Vec{3.5, 2.5, 7.5, 4.5, 11.5, 6.5}));

  put(tir(20, {2, 0}), {});
  put(tir(21, {0, 3}), {});
  put(tir(22, {3}), {1, -2, 4});
  run(make_op<K::Module_Linear>(
      LinearOpIr{tir(20, {2, 0}), tir(21, {0, 3}), tir(22, {3}), out(23, {2, 3})}));
  EXPECT_EQ(get(tir(23, {2, 3})), (Vec{1, -2, 4, 1, -2, 4}));
}

MODULE_SUITE(Module_LinearXBackward);

TEST_F(Module_LinearXBackward, IsGradTimesWeightTransposed) {
  const auto w = tir(1, {3, 2});
  const Vec wv{1, 2, 3, 4, 5, 6};
  put(w, wv);
  const auto g = tir(2, {2, 2, 2});
  const Vec gv = seq(8, -3);
  put(g, gv);
  run(make_op<K::Module_LinearXBackward>(LinearXBackwardOpIr{w, g, out(3, {2, 2, 3})}));
  EXPECT_EQ(get(tir(3, {2, 2, 3})), ref_matmul(gv, ref_transpose(wv, 3, 2), 4, 2, 3));
  // Agrees with the finite difference of <Linear(x), g> in x (it is linear: exact).
  const Vec xv = rnd(12, 1);
  const auto fx = [&](const Vec& x) { return dot(ref_matmul(x, wv, 4, 3, 2), gv); };
  const auto gx = get(tir(3, {2, 2, 3}));
  for (int i = 0; i < 12; ++i) {
    Vec xp = xv;
    xp[i] += 1;
    EXPECT_NEAR(fx(xp) - fx(xv), gx[i], 1e-9);
  }
}

MODULE_SUITE(Module_LinearWeightBackward);

TEST_F(Module_LinearWeightBackward, SumsXTransposedGradOverBatchDims) {
  const auto x = tir(1, {2, 2, 3});
  const Vec xv = seq(12, 1);
  put(x, xv);
  const auto g = tir(2, {2, 2, 2});
  const Vec gv = seq(8, -2, 0.5);
  put(g, gv);
  run(make_op<K::Module_LinearWeightBackward>(LinearWeightBackwardOpIr{x, g, out(3, {3, 2})}));
  EXPECT_EQ(get(tir(3, {3, 2})), ref_matmul(ref_transpose(xv, 4, 3), gv, 3, 4, 2));

  for (auto dt : {DTypeKind::F16, DTypeKind::F64}) {
    const auto x1 = tir(10, {2}, dt);
    put(x1, {1, 2});
    const auto g1 = tir(11, {3}, dt);
    put(g1, {1, 0, -1});
    run(make_op<K::Module_LinearWeightBackward>(
        LinearWeightBackwardOpIr{x1, g1, out(12, {2, 3}, dt)}));
    EXPECT_EQ(get(tir(12, {2, 3}, dt)), (Vec{1, 0, -1, 2, 0, -2}));
  }
}

MODULE_SUITE(Module_LinearBiasBackward);

TEST_F(Module_LinearBiasBackward, SumsEveryDimButTheLast) {
  const auto g = tir(1, {2, 2, 3});
  put(g, seq(12));
  run(make_op<K::Module_LinearBiasBackward>(LinearBiasBackwardOpIr{g, out(2, {3})}));
  EXPECT_EQ(get(tir(2, {3})), (Vec{18, 22, 26}));
  const auto g1 = tir(3, {2}, DTypeKind::F16);
  put(g1, {1.5, 2});
  run(make_op<K::Module_LinearBiasBackward>(
      LinearBiasBackwardOpIr{rw(g1), out(4, {2}, DTypeKind::F16)}));
  EXPECT_EQ(get(tir(4, {2}, DTypeKind::F16)), (Vec{1.5, 2}));
  const auto e = tir(5, {0, 2});
  put(e, {});
  run(make_op<K::Module_LinearBiasBackward>(LinearBiasBackwardOpIr{e, out(6, {2})}));
  EXPECT_EQ(get(tir(6, {2})), (Vec{0, 0}));
}

// ---------------------------------------------------------------------------------------------
// Pools

Usizes<2> u2(I64 a, I64 b) {
  return {static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(b)};
}

// Configurations [k, s, p, d, ceil] x2 covering ATen's range and beyond (padding > kernel / 2).
const std::vector<PoolCfg> kPool2dCfgs = {
    {{2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
    {{3, 2}, {1, 2}, {1, 1}, {1, 1}, false},
    {{3, 3}, {2, 2}, {1, 0}, {1, 1}, true},
    {{2, 3}, {3, 2}, {1, 1}, {2, 1}, true},
    {{2, 2}, {1, 1}, {2, 1}, {1, 1}, false},
    {{3, 2}, {2, 3}, {3, 2}, {1, 2}, true},
    {{1, 1}, {2, 2}, {1, 1}, {1, 1}, false},
    // Kernel 3, stride 4, padding 2: the last window ends before the input on 6 (crop) and
    // after it on 4.
    {{3, 3}, {4, 4}, {2, 2}, {1, 1}, false},
};

MODULE_SUITE(Module_MaxPool2d);

TEST_F(Module_MaxPool2d, HandComputedWithPaddingAndDilation) {
  // 1x1x3x3 [[1, 5, 2], [4, 3, 9], [0, 8, 6]], kernel 2, stride 1, padding 1, dilation 2.
  const auto x = tir(1, {1, 1, 3, 3});
  put(x, {1, 5, 2, 4, 3, 9, 0, 8, 6});
  run(make_op<K::Module_MaxPool2d>(
      MaxPool2dOpIr{x, u2(2, 2), u2(1, 1), u2(1, 1), u2(2, 2), false, out(2, {1, 1, 3, 3})}));
  // Window at (oy, ox) reads rows {oy-1, oy+1} x cols {ox-1, ox+1} that exist.
  EXPECT_EQ(get(tir(2, {1, 1, 3, 3})), (Vec{3, 9, 3, 8, 6, 8, 3, 9, 3}));
}

TEST_F(Module_MaxPool2d, MatchesTheReferenceForEveryConfigAndDType) {
  const I64 n = 2, c = 2, h = 5, w = 6;
  const Vec xv = rnd(n * c * h * w, 7, -4, 4);
  std::uint64_t id = 1;
  for (const auto& cfg : kPool2dCfgs) {
    const auto ref = ref_max_pool(xv, n * c, h, w, cfg);
    for (auto dt : {DTypeKind::F32, DTypeKind::F64, DTypeKind::F16, DTypeKind::BF16}) {
      const auto x = tir(id, {2, 2, 5, 6}, dt);
      put(x, xv);
      const Dims od{2, 2, static_cast<std::uint64_t>(ref.oh), static_cast<std::uint64_t>(ref.ow)};
      run(make_op<K::Module_MaxPool2d>(
          MaxPool2dOpIr{x, u2(cfg.k[0], cfg.k[1]), u2(cfg.s[0], cfg.s[1]), u2(cfg.p[0], cfg.p[1]),
                        u2(cfg.d[0], cfg.d[1]), cfg.ceil, out(id + 1, od, dt)}));
      EXPECT_EQ(get(tir(id + 1, od, dt)), rounded(ref.y, dt))
          << "config " << (&cfg - kPool2dCfgs.data());
      id += 2;
    }
  }
}

TEST_F(Module_MaxPool2d, WindowsWithoutInputAreMinusInfinity) {
  // Padding 2 > kernel 2 / 2 (ATen refuses it): the corner windows hold only padding.
  const auto x = tir(1, {1, 1, 1, 1});
  put(x, {7});
  run(make_op<K::Module_MaxPool2d>(
      MaxPool2dOpIr{x, u2(2, 2), u2(2, 2), u2(2, 2), u2(1, 1), false, out(2, {1, 1, 2, 2})}));
  EXPECT_EQ(get(tir(2, {1, 1, 2, 2})), (Vec{-kInf, -kInf, -kInf, 7}));
}

TEST_F(Module_MaxPool2d, NonContiguousAndEmptyBatch) {
  const auto x = tir(1, {1, 1, 2, 3});
  put_nc(x, {1, 2, 3, 6, 5, 4});
  run(make_op<K::Module_MaxPool2d>(
      MaxPool2dOpIr{x, u2(2, 2), u2(1, 1), u2(0, 0), u2(1, 1), false, out(2, {1, 1, 1, 2})}));
  EXPECT_EQ(get(tir(2, {1, 1, 1, 2})), (Vec{6, 5}));
  const auto e = tir(3, {0, 3, 4, 4});
  put(e, {});
  run(make_op<K::Module_MaxPool2d>(
      MaxPool2dOpIr{e, u2(2, 2), u2(2, 2), u2(0, 0), u2(1, 1), false, out(4, {0, 3, 2, 2})}));
  EXPECT_TRUE(get(tir(4, {0, 3, 2, 2})).empty());
}

MODULE_SUITE(Module_MaxPool2dWithIndices);

TEST_F(Module_MaxPool2dWithIndices, FlatIndicesWithinEachPlane) {
  // Two channels; ties keep the first maximum, NaN wins.
  const auto x = tir(1, {1, 2, 2, 3});
  const double nan = std::nan("");
  put(x, {1, 9, 9, 4, 2, 0, /* channel 1 */ 5, nan, 5, 5, 5, 5});
  const auto yi = out(3, {1, 2, 1, 2}, DTypeKind::I32);
  run(make_op<K::Module_MaxPool2dWithIndices>(MaxPool2dWithIndicesOpIr{
      x, u2(2, 2), u2(1, 1), u2(0, 0), u2(1, 1), false, out(2, {1, 2, 1, 2}), yi}));
  expect_near(get(tir(2, {1, 2, 1, 2})), {9, 9, nan, nan});
  EXPECT_EQ(get(tir(3, {1, 2, 1, 2}, DTypeKind::I32)), (Vec{1, 1, 1, 1}));
}

TEST_F(Module_MaxPool2dWithIndices, MatchesTheReferenceIncludingMinusInfinityWindows) {
  const I64 n = 1, c = 3, h = 4, w = 5;
  Vec xv = rnd(n * c * h * w, 11, -3, 3);
  // A plane of -inf: windows report their first input element.
  for (I64 i = 0; i < h * w; ++i) xv[2 * h * w + i] = -kInf;
  std::uint64_t id = 1;
  for (const auto& cfg : kPool2dCfgs) {
    const auto ref = ref_max_pool(xv, n * c, h, w, cfg);
    for (auto it : {DTypeKind::I64, DTypeKind::I32, DTypeKind::U32}) {
      const auto x = tir(id, {1, 3, 4, 5});
      put(x, xv);
      const Dims od{1, 3, static_cast<std::uint64_t>(ref.oh), static_cast<std::uint64_t>(ref.ow)};
      run(make_op<K::Module_MaxPool2dWithIndices>(MaxPool2dWithIndicesOpIr{
          x, u2(cfg.k[0], cfg.k[1]), u2(cfg.s[0], cfg.s[1]), u2(cfg.p[0], cfg.p[1]),
          u2(cfg.d[0], cfg.d[1]), cfg.ceil, out(id + 1, od), out(id + 2, od, it)}));
      const auto label = "config " + std::to_string(&cfg - kPool2dCfgs.data());
      EXPECT_EQ(get(tir(id + 1, od)), rounded(ref.y, DTypeKind::F32)) << label;
      Vec idx = ref.idx;
      if (it == DTypeKind::U32)
        for (auto& v : idx)
          if (v < 0) v = 4294967295.0;  // -1 wraps
      EXPECT_EQ(get(tir(id + 2, od, it)), idx) << label << " " << DType(it).name();
      id += 3;
    }
  }
}

MODULE_SUITE(Module_MaxPool2dWithIndicesBackward);

TEST_F(Module_MaxPool2dWithIndicesBackward, ScattersGradToTheRecordedIndices) {
  // Overlapping windows (stride 1 < kernel 2) pick the same maximum: gradients add up.
  const auto x = tir(1, {1, 1, 3, 3});
  const Vec xv{1, 2, 3, 4, 9, 5, 6, 7, 10};
  put(x, xv);
  const auto yi = out(3, {1, 1, 2, 2}, DTypeKind::I64);
  run(make_op<K::Module_MaxPool2dWithIndices>(MaxPool2dWithIndicesOpIr{
      x, u2(2, 2), u2(1, 1), u2(0, 0), u2(1, 1), false, out(2, {1, 1, 2, 2}), yi}));
  const auto g = tir(4, {1, 1, 2, 2});
  put(g, {1, 10, 100, 1000});
  run(make_op<K::Module_MaxPool2dWithIndicesBackward>(
      MaxPool2dWithIndicesBackwardOpIr{x, g, tir(3, {1, 1, 2, 2}, DTypeKind::I64), u2(2, 2),
                                       u2(1, 1), u2(0, 0), u2(1, 1), false, out(5, {1, 1, 3, 3})}));
  EXPECT_EQ(get(tir(5, {1, 1, 3, 3})), (Vec{0, 0, 0, 0, 111, 0, 0, 0, 1000}));
}

TEST_F(Module_MaxPool2dWithIndicesBackward, MatchesTheReferenceAndSkipsMinusOne) {
  const I64 nc = 4, h = 5, w = 4;
  const Vec xv = rnd(nc * h * w, 3, -2, 2);
  std::uint64_t id = 1;
  for (const auto& cfg : kPool2dCfgs) {
    const auto ref = ref_max_pool(xv, nc, h, w, cfg);
    const Dims od{2, 2, static_cast<std::uint64_t>(ref.oh), static_cast<std::uint64_t>(ref.ow)};
    const Vec gv = rnd(ref.y.size(), 5, -1, 1);
    for (auto dt : {DTypeKind::F32, DTypeKind::F16}) {
      const auto x = tir(id, {2, 2, 5, 4}, dt);
      put(x, xv);
      const auto idx = tir(id + 1, od, DTypeKind::I32);
      put(idx, ref.idx);
      const auto g = tir(id + 2, od, dt);
      put(g, gv);
      run(make_op<K::Module_MaxPool2dWithIndicesBackward>(MaxPool2dWithIndicesBackwardOpIr{
          x, g, idx, u2(cfg.k[0], cfg.k[1]), u2(cfg.s[0], cfg.s[1]), u2(cfg.p[0], cfg.p[1]),
          u2(cfg.d[0], cfg.d[1]), cfg.ceil, out(id + 3, {2, 2, 5, 4}, dt)}));
      expect_near(get(tir(id + 3, {2, 2, 5, 4}, dt)), ref_max_pool_backward(gv, ref.idx, nc, h * w),
                  dt == DTypeKind::F16 ? 1e-2 : 1e-6);
      id += 4;
    }
  }
}

MODULE_SUITE(Module_MaxPool1d);

TEST_F(Module_MaxPool1d, PoolsTheLastDim) {
  // [1, 2, 5]; kernel 2, stride 2, padding 1, ceil: windows {-1,0} {1,2} {3,4}.
  const auto x = tir(1, {1, 2, 5});
  put(x, {3, 1, 4, 1, 5, -9, -2, -6, -5, -3});
  run(make_op<K::Module_MaxPool1d>(MaxPool1dOpIr{x, 2, 2, 1, 1, true, out(2, {1, 2, 3})}));
  EXPECT_EQ(get(tir(2, {1, 2, 3})), (Vec{3, 4, 5, -9, -2, -3}));
  // Dilation 2, kernel 2, stride 1, no padding: pairs (i, i+2).
  run(make_op<K::Module_MaxPool1d>(MaxPool1dOpIr{x, 2, 1, 0, 2, false, out(3, {1, 2, 3})}));
  EXPECT_EQ(get(tir(3, {1, 2, 3})), (Vec{4, 1, 5, -6, -2, -3}));
  // Padding 3 > kernel 2 / 2, stride 3: windows {-3,-2} {0,1} {3,4} {6,7}.
  run(make_op<K::Module_MaxPool1d>(MaxPool1dOpIr{x, 2, 3, 3, 1, false, out(4, {1, 2, 4})}));
  EXPECT_EQ(get(tir(4, {1, 2, 4})), (Vec{-kInf, 3, 5, -kInf, -kInf, -2, -3, -kInf}));
}

MODULE_SUITE(Module_MaxPool1dWithIndices);

TEST_F(Module_MaxPool1dWithIndices, IndicesArePositionsAlongTheLength) {
  const auto x = tir(1, {2, 1, 4}, DTypeKind::F16);
  put(x, {1, 3, 2, 0, 5, 5, -1, 7});
  run(make_op<K::Module_MaxPool1dWithIndices>(MaxPool1dWithIndicesOpIr{
      x, 2, 1, 0, 1, false, out(2, {2, 1, 3}, DTypeKind::F16), out(3, {2, 1, 3}, DTypeKind::I64)}));
  EXPECT_EQ(get(tir(2, {2, 1, 3}, DTypeKind::F16)), (Vec{3, 3, 2, 5, 5, 7}));
  EXPECT_EQ(get(tir(3, {2, 1, 3}, DTypeKind::I64)), (Vec{1, 1, 2, 0, 1, 3}));
}

MODULE_SUITE(Module_MaxPool1dWithIndicesBackward);

TEST_F(Module_MaxPool1dWithIndicesBackward, AddsGradAtIndices) {
  const auto x = tir(1, {1, 2, 3});
  put(x, seq(6));
  const auto g = tir(2, {1, 2, 2});
  put(g, {1, 2, 3, 4});
  const auto idx = tir(3, {1, 2, 2}, DTypeKind::I32);
  put(idx, {2, 2, 0, -1});
  run(make_op<K::Module_MaxPool1dWithIndicesBackward>(
      MaxPool1dWithIndicesBackwardOpIr{x, rw(g), rw(idx), 2, 1, 0, 1, false, out(4, {1, 2, 3})}));
  EXPECT_EQ(get(tir(4, {1, 2, 3})), (Vec{0, 0, 3, 3, 0, 0}));
  EXPECT_EQ(live(), 2u);
}

MODULE_SUITE(Module_AvgPool2d);

TEST_F(Module_AvgPool2d, CountIncludePadAndCeilModeDivisors) {
  // 1x1x3x3 of 1..9, kernel 2, stride 2, padding 1, ceil: windows over padded rows/cols
  // {-1,0} {1,2} (and the ceil window starting at 3 >= in + pad is dropped).
  const auto x = tir(1, {1, 1, 3, 3});
  put(x, seq(9, 1));
  run(make_op<K::Module_AvgPool2d>(
      AvgPool2dOpIr{x, u2(2, 2), u2(2, 2), u2(1, 1), u2(1, 1), true, true, out(2, {1, 1, 2, 2})}));
  run(make_op<K::Module_AvgPool2d>(
      AvgPool2dOpIr{x, u2(2, 2), u2(2, 2), u2(1, 1), u2(1, 1), false, true, out(3, {1, 1, 2, 2})}));
  expect_near(get(tir(2, {1, 1, 2, 2})), {1.0 / 4, 5.0 / 4, 11.0 / 4, 28.0 / 4});
  expect_near(get(tir(3, {1, 1, 2, 2})), {1, 2.5, 5.5, 7});
  // Kernel 3, stride 2, no padding, ceil on 4x4: the last window is cut by the input edge and
  // divided by its in-bounds size also with count_include_pad (PyTorch / Burn).
  const auto x4 = tir(4, {1, 1, 4, 4});
  put(x4, seq(16));
  run(make_op<K::Module_AvgPool2d>(
      AvgPool2dOpIr{x4, u2(3, 3), u2(2, 2), u2(0, 0), u2(1, 1), true, true, out(5, {1, 1, 2, 2})}));
  expect_near(get(tir(5, {1, 1, 2, 2})), {5, 6.5, 11, 12.5});
}

TEST_F(Module_AvgPool2d, MatchesTheReferenceForEveryConfig) {
  const I64 nc = 4, h = 5, w = 6;
  const Vec xv = rnd(nc * h * w, 21, -2, 2);
  std::uint64_t id = 1;
  for (auto cfg : kPool2dCfgs) {
    cfg.d[0] = cfg.d[1] = 1;
    const I64 oh = pool_out(h, cfg.k[0], cfg.s[0], cfg.p[0], 1, cfg.ceil);
    const I64 ow = pool_out(w, cfg.k[1], cfg.s[1], cfg.p[1], 1, cfg.ceil);
    const Dims od{2, 2, static_cast<std::uint64_t>(oh), static_cast<std::uint64_t>(ow)};
    for (bool cip : {false, true}) {
      const auto expected = apply_weights(avg_pool_weights(h, w, cfg, cip, oh, ow), xv, nc, h * w);
      for (auto dt : {DTypeKind::F32, DTypeKind::F64, DTypeKind::BF16}) {
        const auto x = tir(id, {2, 2, 5, 6}, dt);
        put(x, xv);
        run(make_op<K::Module_AvgPool2d>(
            AvgPool2dOpIr{x, u2(cfg.k[0], cfg.k[1]), u2(cfg.s[0], cfg.s[1]), u2(cfg.p[0], cfg.p[1]),
                          u2(1, 1), cip, cfg.ceil, out(id + 1, od, dt)}));
        expect_near(get(tir(id + 1, od, dt)), expected, dt == DTypeKind::BF16 ? 2e-2 : 1e-6);
        id += 2;
      }
    }
  }
}

MODULE_SUITE(Module_AvgPool2dBackward);

TEST_F(Module_AvgPool2dBackward, IsTheAdjointOfTheForward) {
  const I64 nc = 2, h = 6, w = 4;
  std::uint64_t id = 1;
  for (auto cfg : kPool2dCfgs) {
    cfg.d[0] = cfg.d[1] = 1;
    const I64 oh = pool_out(h, cfg.k[0], cfg.s[0], cfg.p[0], 1, cfg.ceil);
    const I64 ow = pool_out(w, cfg.k[1], cfg.s[1], cfg.p[1], 1, cfg.ceil);
    const Dims od{1, 2, static_cast<std::uint64_t>(oh), static_cast<std::uint64_t>(ow)};
    for (bool cip : {false, true}) {
      const auto ws = avg_pool_weights(h, w, cfg, cip, oh, ow);
      const Vec gv = rnd(nc * oh * ow, 9 + id);
      const auto x = tir(id, {1, 2, 6, 4});
      put(x, rnd(nc * h * w, 1));
      const auto g = tir(id + 1, od);
      put(g, gv);
      run(make_op<K::Module_AvgPool2dBackward>(AvgPool2dBackwardOpIr{
          x, g, u2(cfg.k[0], cfg.k[1]), u2(cfg.s[0], cfg.s[1]), u2(cfg.p[0], cfg.p[1]), u2(1, 1),
          cip, cfg.ceil, out(id + 2, {1, 2, 6, 4})}));
      expect_near(get(tir(id + 2, {1, 2, 6, 4})), apply_weights_t(ws, gv, nc, h * w));
      id += 3;
    }
  }
}

MODULE_SUITE(Module_AvgPool1d);

TEST_F(Module_AvgPool1d, PoolsTheLastDim) {
  const auto x = tir(1, {1, 1, 5});
  put(x, {1, 2, 3, 4, 5});
  // kernel 2, stride 2, padding 1: windows {-1,0} {1,2} {3,4}.
  run(make_op<K::Module_AvgPool1d>(AvgPool1dOpIr{x, 2, 2, 1, 1, true, false, out(2, {1, 1, 3})}));
  run(make_op<K::Module_AvgPool1d>(AvgPool1dOpIr{x, 2, 2, 1, 1, false, false, out(3, {1, 1, 3})}));
  expect_near(get(tir(2, {1, 1, 3})), {0.5, 2.5, 4.5});
  expect_near(get(tir(3, {1, 1, 3})), {1, 2.5, 4.5});
  // Padding 2 > kernel 2 / 2: the first window holds only padding (0 / 2 or 0 / max(0, 1)).
  run(make_op<K::Module_AvgPool1d>(AvgPool1dOpIr{x, 2, 2, 2, 1, true, false, out(4, {1, 1, 4})}));
  expect_near(get(tir(4, {1, 1, 4})), {0, 1.5, 3.5, 2.5});
}

MODULE_SUITE(Module_AvgPool1dBackward);

TEST_F(Module_AvgPool1dBackward, DistributesGradOverEachWindow) {
  const auto x = tir(1, {1, 1, 5});
  put(x, seq(5));
  const auto g = tir(2, {1, 1, 3});
  put(g, {2, 4, 6});
  run(make_op<K::Module_AvgPool1dBackward>(
      AvgPool1dBackwardOpIr{x, g, 2, 2, 1, 1, true, false, out(3, {1, 1, 5})}));
  expect_near(get(tir(3, {1, 1, 5})), {1, 2, 2, 3, 3});
  run(make_op<K::Module_AvgPool1dBackward>(
      AvgPool1dBackwardOpIr{x, g, 2, 2, 1, 1, false, false, out(4, {1, 1, 5})}));
  expect_near(get(tir(4, {1, 1, 5})), {2, 2, 2, 3, 3});
  const auto g4 = tir(5, {1, 1, 4});
  put(g4, {8, 2, 4, 6});
  run(make_op<K::Module_AvgPool1dBackward>(
      AvgPool1dBackwardOpIr{x, g4, 2, 2, 2, 1, true, false, out(6, {1, 1, 5})}));
  expect_near(get(tir(6, {1, 1, 5})), {1, 1, 2, 2, 3});
}

// ---------------------------------------------------------------------------------------------
// Adaptive average pools

MODULE_SUITE(Module_AdaptiveAvgPool1d);

TEST_F(Module_AdaptiveAvgPool1d, OverlappingWindows) {
  const auto x = tir(1, {1, 1, 5});
  put(x, {1, 2, 3, 4, 10});
  // out 3 of 5: [0, 2) [1, 4) [3, 5).
  run(make_op<K::Module_AdaptiveAvgPool1d>(AdaptiveAvgPool1dOpIr{x, 3, out(2, {1, 1, 3})}));
  expect_near(get(tir(2, {1, 1, 3})), {1.5, 3, 7});
  // Upsampling 5 -> 7 repeats elements.
  run(make_op<K::Module_AdaptiveAvgPool1d>(AdaptiveAvgPool1dOpIr{x, 7, out(3, {1, 1, 7})}));
  expect_near(get(tir(3, {1, 1, 7})),
              apply_weights(adaptive_weights({5}, {7}), {1, 2, 3, 4, 10}, 1, 5));
}

MODULE_SUITE(Module_AdaptiveAvgPool2d);

TEST_F(Module_AdaptiveAvgPool2d, MatchesTheReference) {
  const Vec xv = rnd(2 * 5 * 7, 4);
  std::uint64_t id = 1;
  for (auto [oh, ow] : std::vector<std::pair<I64, I64>>{{3, 2}, {5, 7}, {1, 1}, {6, 9}}) {
    for (auto dt : {DTypeKind::F32, DTypeKind::F16}) {
      const auto x = tir(id, {1, 2, 5, 7}, dt);
      put(x, xv);
      const Dims od{1, 2, static_cast<std::uint64_t>(oh), static_cast<std::uint64_t>(ow)};
      run(make_op<K::Module_AdaptiveAvgPool2d>(
          AdaptiveAvgPool2dOpIr{x, u2(oh, ow), out(id + 1, od, dt)}));
      expect_near(get(tir(id + 1, od, dt)),
                  apply_weights(adaptive_weights({5, 7}, {oh, ow}), xv, 2, 35),
                  dt == DTypeKind::F16 ? 1e-2 : 1e-6);
      id += 2;
    }
  }
  const auto nc = tir(50, {1, 1, 3, 2});
  put_nc(nc, {1, 2, 3, 4, 5, 6});
  run(make_op<K::Module_AdaptiveAvgPool2d>(
      AdaptiveAvgPool2dOpIr{nc, u2(1, 2), out(51, {1, 1, 1, 2})}));
  expect_near(get(tir(51, {1, 1, 1, 2})), {3, 4});
}

MODULE_SUITE(Module_AdaptiveAvgPool3d);

TEST_F(Module_AdaptiveAvgPool3d, MatchesTheReference) {
  const Vec xv = rnd(2 * 3 * 4 * 5, 8);
  const auto x = tir(1, {1, 2, 3, 4, 5});
  put(x, xv);
  run(make_op<K::Module_AdaptiveAvgPool3d>(
      AdaptiveAvgPool3dOpIr{x, {2, 3, 2}, out(2, {1, 2, 2, 3, 2})}));
  expect_near(get(tir(2, {1, 2, 2, 3, 2})),
              apply_weights(adaptive_weights({3, 4, 5}, {2, 3, 2}), xv, 2, 60));
  const auto xb = tir(3, {1, 1, 2, 2, 2}, DTypeKind::BF16);
  put(xb, seq(8));
  run(make_op<K::Module_AdaptiveAvgPool3d>(
      AdaptiveAvgPool3dOpIr{xb, {1, 1, 1}, out(4, {1, 1, 1, 1, 1}, DTypeKind::BF16)}));
  EXPECT_EQ(get(tir(4, {1, 1, 1, 1, 1}, DTypeKind::BF16)), (Vec{3.5}));
}

MODULE_SUITE(Module_AdaptiveAvgPool1dBackward);

TEST_F(Module_AdaptiveAvgPool1dBackward, IsTheAdjoint) {
  const auto x = tir(1, {1, 1, 5});
  put(x, seq(5));
  const auto g = tir(2, {1, 1, 3});
  put(g, {3, 6, 4});
  run(make_op<K::Module_AdaptiveAvgPool1dBackward>(
      AdaptiveAvgPool1dBackwardOpIr{x, g, out(3, {1, 1, 5})}));
  // windows [0, 2) [1, 4) [3, 5): 3/2 to 0,1; 6/3 to 1,2,3; 4/2 to 3,4.
  expect_near(get(tir(3, {1, 1, 5})), {1.5, 3.5, 2, 4, 2});
}

MODULE_SUITE(Module_AdaptiveAvgPool2dBackward);

TEST_F(Module_AdaptiveAvgPool2dBackward, IsTheAdjoint) {
  const Vec gv = rnd(2 * 3 * 4, 12);
  const auto x = tir(1, {2, 1, 5, 7});
  put(x, rnd(70, 2));
  const auto g = tir(2, {2, 1, 3, 4});
  put(g, gv);
  run(make_op<K::Module_AdaptiveAvgPool2dBackward>(
      AdaptiveAvgPool2dBackwardOpIr{x, g, out(3, {2, 1, 5, 7})}));
  expect_near(get(tir(3, {2, 1, 5, 7})),
              apply_weights_t(adaptive_weights({5, 7}, {3, 4}), gv, 2, 35));
}

MODULE_SUITE(Module_AdaptiveAvgPool3dBackward);

TEST_F(Module_AdaptiveAvgPool3dBackward, IsTheAdjoint) {
  const Vec gv = rnd(2 * 2 * 3 * 2, 13);
  const auto x = tir(1, {1, 2, 3, 4, 5}, DTypeKind::F64);
  put(x, rnd(120, 2));
  const auto g = tir(2, {1, 2, 2, 3, 2}, DTypeKind::F64);
  put(g, gv);
  run(make_op<K::Module_AdaptiveAvgPool3dBackward>(
      AdaptiveAvgPool3dBackwardOpIr{x, g, out(3, {1, 2, 3, 4, 5}, DTypeKind::F64)}));
  expect_near(get(tir(3, {1, 2, 3, 4, 5}, DTypeKind::F64)),
              apply_weights_t(adaptive_weights({3, 4, 5}, {2, 3, 2}), gv, 2, 60), 1e-12);
}

// ---------------------------------------------------------------------------------------------
// Interpolate

using Mode = InterpolateModeIr;
const std::vector<std::pair<I64, I64>> kInterpSizes = {{7, 9}, {2, 3},  {4, 5},
                                                       {1, 1}, {3, 11}, {9, 4}};
const Mode kModes[] = {Mode::Nearest, Mode::NearestExact, Mode::Bilinear, Mode::Bicubic,
                       Mode::Lanczos3};

MODULE_SUITE(Module_Interpolate);

TEST_F(Module_Interpolate, NearestIsFloorNotPyTorchNearestExact) {
  // 1x1x1x3 -> 1x1x1x5: Nearest picks floor(o * 3 / 5) = 0 0 1 1 2; NearestExact
  // floor((o + 0.5) * 3 / 5) = 0 0 1 2 2.
  const auto x = tir(1, {1, 1, 1, 3});
  put(x, {10, 20, 30});
  for (bool ac : {false, true}) {
    run(make_op<K::Module_Interpolate>(InterpolateOpIr{
        x, u2(1, 5), interpolate_options_v2(Mode::Nearest, ac), out(2, {1, 1, 1, 5})}));
    run(make_op<K::Module_Interpolate>(InterpolateOpIr{
        x, u2(1, 5), interpolate_options_v2(Mode::NearestExact, ac), out(3, {1, 1, 1, 5})}));
    EXPECT_EQ(get(rw(tir(2, {1, 1, 1, 5}))), (Vec{10, 10, 20, 20, 30}));
    EXPECT_EQ(get(rw(tir(3, {1, 1, 1, 5}))), (Vec{10, 10, 20, 30, 30}));
  }
}

TEST_F(Module_Interpolate, BilinearHandComputed) {
  // 1x1x2x2 [[0, 1], [2, 3]] -> 3x3.
  const auto x = tir(1, {1, 1, 2, 2});
  put(x, {0, 1, 2, 3});
  run(make_op<K::Module_Interpolate>(InterpolateOpIr{
      x, u2(3, 3), interpolate_options_v2(Mode::Bilinear, true), out(2, {1, 1, 3, 3})}));
  expect_near(get(tir(2, {1, 1, 3, 3})), {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});
  // Half-pixel: coords (o + 0.5) * 2 / 3 - 0.5 = -1/6 (clamped to 0), 0.5, 7/6 (-> 1).
  run(make_op<K::Module_Interpolate>(InterpolateOpIr{
      x, u2(3, 3), interpolate_options_v2(Mode::Bilinear, false), out(3, {1, 1, 3, 3})}));
  expect_near(get(tir(3, {1, 1, 3, 3})), {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});
}

TEST_F(Module_Interpolate, EveryModeMatchesTheReference) {
  const I64 h = 5, w = 6, nc = 2;
  const Vec xv = rnd(nc * h * w, 17, -2, 2);
  std::uint64_t id = 1;
  for (auto mode : kModes)
    for (bool ac : {false, true})
      for (auto [oh, ow] : kInterpSizes) {
        const auto x = tir(id, {2, 1, 5, 6});
        put(x, xv);
        const Dims od{2, 1, static_cast<std::uint64_t>(oh), static_cast<std::uint64_t>(ow)};
        run(make_op<K::Module_Interpolate>(
            InterpolateOpIr{x, u2(oh, ow), interpolate_options_v2(mode, ac), out(id + 1, od)}));
        expect_near(get(tir(id + 1, od)),
                    apply_weights(interp_weights(mode, h, w, oh, ow, ac), xv, nc, h * w), 1e-5);
        if (::testing::Test::HasFailure()) {
          ADD_FAILURE() << "mode " << static_cast<int>(mode) << " align_corners " << ac << " size "
                        << oh << "x" << ow;
          return;
        }
        id += 2;
      }
}

TEST_F(Module_Interpolate, HalfPrecisionNonContiguousAndEmptyInput) {
  const Vec xv = rnd(12, 3);
  std::uint64_t id = 1;
  for (auto mode : kModes)
    for (auto dt : {DTypeKind::F16, DTypeKind::BF16, DTypeKind::F64}) {
      const auto x = tir(id, {1, 1, 3, 4}, dt);
      put_nc(x, xv);
      run(make_op<K::Module_Interpolate>(InterpolateOpIr{
          x, u2(5, 3), interpolate_options_v2(mode, false), out(id + 1, {1, 1, 5, 3}, dt)}));
      expect_near(get(tir(id + 1, {1, 1, 5, 3}, dt)),
                  apply_weights(interp_weights(mode, 3, 4, 5, 3, false), rounded(xv, dt), 1, 12),
                  dt == DTypeKind::F64 ? 1e-12 : 2e-2);
      id += 2;
    }
  const auto e = tir(100, {1, 1, 0, 3});
  put(e, {});
  EXPECT_THAT(
      run_error(make_op<K::Module_Interpolate>(InterpolateOpIr{
          e, u2(2, 2), interpolate_options_v2(Mode::Bilinear, false), out(101, {1, 1, 2, 2})})),
      HasSubstr("spatial"));
  const auto nb = tir(102, {0, 1, 2, 2});
  put(nb, {});
  run(make_op<K::Module_Interpolate>(InterpolateOpIr{
      nb, u2(3, 3), interpolate_options_v2(Mode::Bicubic, false), out(103, {0, 1, 3, 3})}));
  EXPECT_TRUE(get(tir(103, {0, 1, 3, 3})).empty());
}

MODULE_SUITE(Module_InterpolateBackward);

TEST_F(Module_InterpolateBackward, EveryModeIsTheAdjointOfTheForward) {
  const I64 h = 5, w = 6, nc = 2;
  std::uint64_t id = 1;
  for (auto mode : kModes)
    for (bool ac : {false, true})
      for (auto [oh, ow] : kInterpSizes) {
        const auto x = tir(id, {1, 2, 5, 6});
        put(x, rnd(nc * h * w, 1));
        const Vec gv = rnd(nc * oh * ow, 100 + id);
        const Dims od{1, 2, static_cast<std::uint64_t>(oh), static_cast<std::uint64_t>(ow)};
        const auto g = tir(id + 1, od);
        put(g, gv);
        run(make_op<K::Module_InterpolateBackward>(InterpolateBackwardOpIr{
            x, g, u2(oh, ow), interpolate_options_v2(mode, ac), out(id + 2, {1, 2, 5, 6})}));
        expect_near(get(tir(id + 2, {1, 2, 5, 6})),
                    apply_weights_t(interp_weights(mode, h, w, oh, ow, ac), gv, nc, h * w), 1e-5);
        if (::testing::Test::HasFailure()) {
          ADD_FAILURE() << "mode " << static_cast<int>(mode) << " align_corners " << ac << " size "
                        << oh << "x" << ow;
          return;
        }
        id += 3;
      }
}

TEST_F(Module_InterpolateBackward, NearestSumsTheGradOfEveryCopy) {
  const auto x = tir(1, {1, 1, 1, 3}, DTypeKind::F16);
  put(x, {0, 0, 0});
  const auto g = tir(2, {1, 1, 1, 5}, DTypeKind::F16);
  put(g, {1, 2, 4, 8, 16});
  run(make_op<K::Module_InterpolateBackward>(
      InterpolateBackwardOpIr{x, g, u2(1, 5), interpolate_options_v2(Mode::Nearest, false),
                              out(3, {1, 1, 1, 3}, DTypeKind::F16)}));
  EXPECT_EQ(get(tir(3, {1, 1, 1, 3}, DTypeKind::F16)), (Vec{3, 12, 16}));
  run(make_op<K::Module_InterpolateBackward>(
      InterpolateBackwardOpIr{x, g, u2(1, 5), interpolate_options_v2(Mode::NearestExact, false),
                              out(4, {1, 1, 1, 3}, DTypeKind::F16)}));
  EXPECT_EQ(get(tir(4, {1, 1, 1, 3}, DTypeKind::F16)), (Vec{3, 4, 24}));
}

// ---------------------------------------------------------------------------------------------
// Attention

struct AttnRef {
  I64 b, h, sq, sk, d, dv, kvh;
};
// Burn's attention: scores = q k^T * scale; softcap; mask (true = out); causal col > row + sk - sq;
// + bias; softmax with fully masked rows -> 0; @ v. mask / bias are [b, h, sq, sk] here.
Vec ref_attention(const AttnRef& s, const Vec& q, const Vec& k, const Vec& v, const Vec* mask,
                  const Vec* bias, std::optional<double> scale, std::optional<double> softcap,
                  bool causal) {
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(s.d));
  Vec outv(s.b * s.h * s.sq * s.dv, 0.0);
  for (I64 bi = 0; bi < s.b; ++bi)
    for (I64 hi = 0; hi < s.h; ++hi) {
      const I64 kv = hi / (s.h / s.kvh);
      for (I64 i = 0; i < s.sq; ++i) {
        Vec row(s.sk);
        double mx = -kInf;
        for (I64 j = 0; j < s.sk; ++j) {
          double acc = 0;
          for (I64 e = 0; e < s.d; ++e)
            acc += q[((bi * s.h + hi) * s.sq + i) * s.d + e] *
                   k[((bi * s.kvh + kv) * s.sk + j) * s.d + e];
          acc *= sc;
          if (softcap) acc = *softcap * std::tanh(acc / *softcap);
          const I64 mi = ((bi * s.h + hi) * s.sq + i) * s.sk + j;
          if (mask && (*mask)[mi] != 0) acc = -kInf;
          if (causal && j > i + s.sk - s.sq) acc = -kInf;
          if (bias) acc += (*bias)[mi];
          row[j] = acc;
          mx = std::max(mx, acc);
        }
        if (mx == -kInf) continue;  // fully masked: 0
        double sum = 0;
        for (auto& r : row) sum += (r = std::exp(r - mx));
        for (I64 j = 0; j < s.sk; ++j)
          for (I64 e = 0; e < s.dv; ++e)
            outv[((bi * s.h + hi) * s.sq + i) * s.dv + e] +=
                row[j] / sum * v[((bi * s.kvh + kv) * s.sk + j) * s.dv + e];
      }
    }
  return outv;
}

Dims dims4(I64 a, I64 b, I64 c, I64 d) {
  return {static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(b),
          static_cast<std::uint64_t>(c), static_cast<std::uint64_t>(d)};
}

MODULE_SUITE(Module_Attention);

TEST_F(Module_Attention, HandComputedSingleQuery) {
  // q = [1, 0], keys [1, 0] and [0, 1], values 10 and 20; scale 1/sqrt(2).
  put(tir(1, {1, 1, 1, 2}), {1, 0});
  put(tir(2, {1, 1, 2, 2}), {1, 0, 0, 1});
  put(tir(3, {1, 1, 2, 1}), {10, 20});
  run(make_op<K::Module_Attention>(AttentionOpIr{tir(1, {1, 1, 1, 2}), tir(2, {1, 1, 2, 2}),
                                                 tir(3, {1, 1, 2, 1}), std::nullopt, std::nullopt,
                                                 AttentionOptionsIr{}, out(4, {1, 1, 1, 1})}));
  const double p0 = 1 / (1 + std::exp(-1 / std::sqrt(2.0)));
  expect_near(get(tir(4, {1, 1, 1, 1})), {10 * p0 + 20 * (1 - p0)});
  // A true mask entry masks the key OUT: only the second value remains.
  const auto m = tir(5, {1, 1, 1, 2}, DType::boolean(BoolStore::U8));
  put(m, {1, 0});
  run(make_op<K::Module_Attention>(AttentionOpIr{tir(1, {1, 1, 1, 2}), tir(2, {1, 1, 2, 2}),
                                                 tir(3, {1, 1, 2, 1}), m, std::nullopt,
                                                 AttentionOptionsIr{}, out(6, {1, 1, 1, 1})}));
  expect_near(get(tir(6, {1, 1, 1, 1})), {20});
}

TEST_F(Module_Attention, MatchesTheReferenceForEveryOption) {
  const AttnRef s{2, 2, 3, 5, 4, 3, 2};
  const Vec q = rnd(s.b * s.h * s.sq * s.d, 1, -2, 2), k = rnd(s.b * s.kvh * s.sk * s.d, 2, -2, 2),
            v = rnd(s.b * s.kvh * s.sk * s.dv, 3);
  Vec mask = rnd(s.b * s.h * s.sq * s.sk, 4);
  for (auto& x : mask) x = x > 0.3 ? 1 : 0;
  const Vec bias = rnd(mask.size(), 5);
  put(tir(1, dims4(s.b, s.h, s.sq, s.d)), q);
  put(tir(2, dims4(s.b, s.kvh, s.sk, s.d)), k);
  put(tir(3, dims4(s.b, s.kvh, s.sk, s.dv)), v);
  put(tir(4, dims4(s.b, s.h, s.sq, s.sk), DType::boolean(BoolStore::Native)), mask);
  put(tir(5, dims4(s.b, s.h, s.sq, s.sk)), bias);
  std::uint64_t id = 10;
  for (int variant = 0; variant < 32; ++variant) {
    const bool use_mask = variant & 1, use_bias = variant & 2, causal = variant & 4;
    const std::optional<double> scale = (variant & 8) ? std::optional<double>(0.7) : std::nullopt;
    const std::optional<double> cap = (variant & 16) ? std::optional<double>(1.5) : std::nullopt;
    AttentionOptionsIr opts{};
    if (scale) opts.scale = ScalarIr::f(*scale);
    if (cap) opts.softcap = ScalarIr::f(*cap);
    opts.is_causal = causal;
    const auto o = out(id, dims4(s.b, s.h, s.sq, s.dv));
    run(make_op<K::Module_Attention>(AttentionOpIr{
        tir(1, dims4(s.b, s.h, s.sq, s.d)), tir(2, dims4(s.b, s.kvh, s.sk, s.d)),
        tir(3, dims4(s.b, s.kvh, s.sk, s.dv)),
        use_mask ? std::optional<TensorIr>(
                       tir(4, dims4(s.b, s.h, s.sq, s.sk), DType::boolean(BoolStore::Native)))
                 : std::nullopt,
        use_bias ? std::optional<TensorIr>(tir(5, dims4(s.b, s.h, s.sq, s.sk))) : std::nullopt,
        opts, o}));
    expect_near(get(o),
                ref_attention(s, q, k, v, use_mask ? &mask : nullptr, use_bias ? &bias : nullptr,
                              scale, cap, causal),
                1e-5);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "variant " << variant;
      return;
    }
    ++id;
  }
}

TEST_F(Module_Attention, CausalIsBottomRightAlignedAndMaskedRowsAreZero) {
  // Sq = 2, Sk = 3: row 0 sees keys 0..1, row 1 keys 0..2 (top-left alignment would give 0 and
  // 0..1). Values are one-hot so the output is the attention row itself; zero scores.
  put(tir(1, {1, 1, 2, 1}), {0, 0});
  put(tir(2, {1, 1, 3, 1}), {0, 0, 0});
  put(tir(3, {1, 1, 3, 3}), {1, 0, 0, 0, 1, 0, 0, 0, 1});
  AttentionOptionsIr causal{};
  causal.is_causal = true;
  run(make_op<K::Module_Attention>(AttentionOpIr{tir(1, {1, 1, 2, 1}), tir(2, {1, 1, 3, 1}),
                                                 tir(3, {1, 1, 3, 3}), std::nullopt, std::nullopt,
                                                 causal, out(4, {1, 1, 2, 3})}));
  expect_near(get(tir(4, {1, 1, 2, 3})), {0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  // Sq = 3 > Sk = 2: row 0 sees no key at all (col > row - 1 for every col) -> 0, not NaN.
  put(tir(5, {1, 1, 3, 1}), {0, 0, 0});
  put(tir(6, {1, 1, 2, 1}), {0, 0});
  put(tir(7, {1, 1, 2, 2}), {1, 0, 0, 1});
  run(make_op<K::Module_Attention>(AttentionOpIr{tir(5, {1, 1, 3, 1}), tir(6, {1, 1, 2, 1}),
                                                 tir(7, {1, 1, 2, 2}), std::nullopt, std::nullopt,
                                                 causal, out(8, {1, 1, 3, 2})}));
  expect_near(get(tir(8, {1, 1, 3, 2})), {0, 0, 1, 0, 0.5, 0.5});
  // A fully masked row (explicit mask, broadcast over heads) is 0 as well.
  const auto m = tir(9, {1, 1, 2, 3}, DType::boolean(BoolStore::U32));
  put(m, {1, 1, 1, 0, 1, 0});
  run(make_op<K::Module_Attention>(AttentionOpIr{tir(1, {1, 1, 2, 1}), tir(2, {1, 1, 3, 1}),
                                                 tir(3, {1, 1, 3, 3}), m, std::nullopt,
                                                 AttentionOptionsIr{}, out(10, {1, 1, 2, 3})}));
  expect_near(get(tir(10, {1, 1, 2, 3})), {0, 0, 0, 0.5, 0, 0.5});
}

TEST_F(Module_Attention, SoftcapBeforeMaskBiasAfter) {
  // One query, two keys; scores 4 and 0 (scale 1). softcap 2: 2 tanh(2) and 0. A bias of -inf
  // on key 1 masks it like the mask does; the bias is added after the cap (not capped).
  put(tir(1, {1, 1, 1, 1}), {2});
  put(tir(2, {1, 1, 2, 1}), {2, 0});
  put(tir(3, {1, 1, 2, 1}), {1, 0});
  put(tir(4, {1, 1, 1, 2}), {0, 3});
  AttentionOptionsIr o{};
  o.scale = ScalarIr::f(1.0);
  o.softcap = ScalarIr::f(2.0);
  run(make_op<K::Module_Attention>(AttentionOpIr{tir(1, {1, 1, 1, 1}), tir(2, {1, 1, 2, 1}),
                                                 tir(3, {1, 1, 2, 1}), std::nullopt,
                                                 tir(4, {1, 1, 1, 2}), o, out(5, {1, 1, 1, 1})}));
  const double s0 = 2 * std::tanh(2.0), s1 = 3;
  expect_near(get(tir(5, {1, 1, 1, 1})), {std::exp(s0) / (std::exp(s0) + std::exp(s1))});
  o.softcap = ScalarIr::f(0.0);
  EXPECT_THAT(run_error(make_op<K::Module_Attention>(
                  AttentionOpIr{tir(1, {1, 1, 1, 1}), tir(2, {1, 1, 2, 1}), tir(3, {1, 1, 2, 1}),
                                std::nullopt, std::nullopt, o, out(6, {1, 1, 1, 1})})),
              HasSubstr("softcap must be positive"));
}

TEST_F(Module_Attention, HalfPrecisionGqaAndEmptyKeys) {
  const AttnRef s{1, 4, 2, 3, 2, 2, 2};  // 4 query heads share 2 key/value heads
  const Vec q = rnd(s.b * s.h * s.sq * s.d, 6), k = rnd(s.b * s.kvh * s.sk * s.d, 7),
            v = rnd(s.b * s.kvh * s.sk * s.dv, 8);
  std::uint64_t id = 1;
  for (auto dt : {DTypeKind::F32, DTypeKind::F16, DTypeKind::BF16, DTypeKind::F64}) {
    put(tir(id, dims4(1, 4, 2, 2), dt), q);
    put(tir(id + 1, dims4(1, 2, 3, 2), dt), k);
    put(tir(id + 2, dims4(1, 2, 3, 2), dt), v);
    run(make_op<K::Module_Attention>(
        AttentionOpIr{tir(id, dims4(1, 4, 2, 2), dt), tir(id + 1, dims4(1, 2, 3, 2), dt),
                      tir(id + 2, dims4(1, 2, 3, 2), dt), std::nullopt, std::nullopt,
                      AttentionOptionsIr{}, out(id + 3, dims4(1, 4, 2, 2), dt)}));
    expect_near(get(tir(id + 3, dims4(1, 4, 2, 2), dt)),
                ref_attention(s, q, k, v, nullptr, nullptr, std::nullopt, std::nullopt, false),
                dt == DTypeKind::F16 || dt == DTypeKind::BF16 ? 2e-2 : 1e-6);
    id += 4;
  }
  put(tir(50, {1, 1, 2, 2}), {1, 2, 3, 4});
  put(tir(51, {1, 1, 0, 2}), {});
  put(tir(52, {1, 1, 0, 3}), {});
  run(make_op<K::Module_Attention>(AttentionOpIr{tir(50, {1, 1, 2, 2}), tir(51, {1, 1, 0, 2}),
                                                 tir(52, {1, 1, 0, 3}), std::nullopt, std::nullopt,
                                                 AttentionOptionsIr{}, out(53, {1, 1, 2, 3})}));
  EXPECT_EQ(get(tir(53, {1, 1, 2, 3})), Vec(6, 0.0));
}

// ---------------------------------------------------------------------------------------------
// CTC loss. Reference: brute force over every alignment.

struct CtcRef {
  Vec loss;  // [N]
  Vec post;  // [T, N, C]: posterior of class c at t among valid alignments
};
CtcRef ref_ctc(const Vec& lp, I64 t_max, I64 n, I64 c, const std::vector<std::vector<I64>>& targets,
               const std::vector<I64>& il, I64 blank) {
  CtcRef r{Vec(n, 0.0), Vec(t_max * n * c, 0.0)};
  for (I64 b = 0; b < n; ++b) {
    const I64 len = il[b];
    double total = 0;
    Vec post(t_max * c, 0.0);
    std::vector<I64> path(len, 0);
    I64 count = 1;
    for (I64 i = 0; i < len; ++i) count *= c;
    for (I64 code = 0; code < count; ++code) {
      I64 rest = code;
      for (I64 t = 0; t < len; ++t) {
        path[t] = rest % c;
        rest /= c;
      }
      std::vector<I64> collapsed;
      for (I64 t = 0; t < len; ++t)
        if (path[t] != blank && (t == 0 || path[t] != path[t - 1])) collapsed.push_back(path[t]);
      if (collapsed != targets[b]) continue;
      double logp = 0;
      for (I64 t = 0; t < len; ++t) logp += lp[(t * n + b) * c + path[t]];
      total += std::exp(logp);
      for (I64 t = 0; t < len; ++t) post[t * c + path[t]] += std::exp(logp);
    }
    r.loss[b] = -std::log(total);
    for (I64 t = 0; t < t_max; ++t)
      for (I64 k = 0; k < c; ++k)
        r.post[(t * n + b) * c + k] = total > 0 ? post[t * c + k] / total : 0;
  }
  return r;
}
// log_softmax of random logits, [T, N, C].
Vec log_softmax_rows(const Vec& logits, I64 c) {
  Vec out(logits.size());
  for (std::size_t r = 0; r < logits.size() / c; ++r) {
    double m = -kInf, s = 0;
    for (I64 k = 0; k < c; ++k) m = std::max(m, logits[r * c + k]);
    for (I64 k = 0; k < c; ++k) s += std::exp(logits[r * c + k] - m);
    for (I64 k = 0; k < c; ++k) out[r * c + k] = logits[r * c + k] - m - std::log(s);
  }
  return out;
}

MODULE_SUITE(Module_CtcLoss);

TEST_F(Module_CtcLoss, UniformTwoClassExample) {
  // T = 3, C = 2, blank 0, target [1, 1]: the only alignment is 1 0 1, loss 3 ln 2.
  put(tir(1, {3, 1, 2}), Vec(6, std::log(0.5)));
  put(tir(2, {1, 2}, DTypeKind::I32), {1, 1});
  put(tir(3, {1}, DTypeKind::I32), {3});
  put(tir(4, {1}, DTypeKind::I32), {2});
  run(make_op<K::Module_CtcLoss>(CtcLossOpIr{tir(1, {3, 1, 2}), tir(2, {1, 2}, DTypeKind::I32),
                                             tir(3, {1}, DTypeKind::I32),
                                             tir(4, {1}, DTypeKind::I32), 0, out(5, {1})}));
  expect_near(get(tir(5, {1})), {3 * std::log(2.0)});
}

TEST_F(Module_CtcLoss, MatchesBruteForceWithPaddingLengthsAndBlank) {
  const I64 t = 5, n = 4, c = 3, blank = 2;
  const Vec lp = log_softmax_rows(rnd(t * n * c, 31, -2, 2), c);
  // Padded targets [N, 3] (padding values beyond each length are ignored), blank = 2.
  const std::vector<std::vector<I64>> targets{{0, 1}, {1, 1}, {}, {0, 0, 1}};
  const Vec tv{0, 1, 0, 1, 1, 0, 0, 0, 1, 0, 0, 1};
  const std::vector<I64> il{5, 4, 3, 5}, tl{2, 2, 0, 3};
  const auto ref = ref_ctc(lp, t, n, c, targets, il, blank);
  std::uint64_t id = 1;
  for (auto dt : {DTypeKind::F32, DTypeKind::F64, DTypeKind::F16}) {
    for (auto it : {DTypeKind::I64, DTypeKind::I32, DTypeKind::U16}) {
      put(tir(id, {5, 4, 3}, dt), lp);
      put(tir(id + 1, {4, 3}, it), tv);
      put(tir(id + 2, {4}, it), {5, 4, 3, 5});
      put(tir(id + 3, {4}, it), {2, 2, 0, 3});
      run(make_op<K::Module_CtcLoss>(CtcLossOpIr{tir(id, {5, 4, 3}, dt), tir(id + 1, {4, 3}, it),
                                                 tir(id + 2, {4}, it), tir(id + 3, {4}, it), blank,
                                                 out(id + 4, {4}, dt)}));
      expect_near(get(tir(id + 4, {4}, dt)), ref.loss, dt == DTypeKind::F16 ? 1e-2 : 1e-5);
      id += 5;
    }
  }
}

TEST_F(Module_CtcLoss, ImpossibleTargetsAreInfiniteAndZeroLengthsFollowBurn) {
  // Sample 0: T = 2 cannot emit [1, 1] (a blank must separate them): +inf.
  // Sample 1: input length 0 reads alpha at t = 0 like Burn's default implementation:
  // -log p(blank at t = 0) for an empty target.
  const Vec lp = log_softmax_rows(rnd(2 * 2 * 2, 5), 2);
  const auto i64 = DTypeKind::I64;
  put(tir(1, {2, 2, 2}), lp);
  put(tir(2, {2, 2}, i64), {1, 1, 0, 0});
  put(tir(3, {2}, i64), {2, 0});
  put(tir(4, {2}, i64), {2, 0});
  run(make_op<K::Module_CtcLoss>(CtcLossOpIr{tir(1, {2, 2, 2}), tir(2, {2, 2}, i64),
                                             tir(3, {2}, i64), tir(4, {2}, i64), 0, out(5, {2})}));
  expect_near(get(tir(5, {2})), {kInf, -static_cast<float>(lp[(0 * 2 + 1) * 2 + 0])});
}

TEST_F(Module_CtcLoss, InvalidArgumentsAreErrors) {
  const auto i64 = DTypeKind::I64;
  put(tir(1, {2, 1, 3}), Vec(6, std::log(1.0 / 3)));
  put(tir(2, {1, 2}, i64), {1, 3});
  put(tir(3, {1}, i64), {2});
  put(tir(4, {1}, i64), {2});
  put(tir(5, {1}, i64), {3});
  put(tir(6, {1}, i64), {1});
  auto op = [&](std::uint64_t il, std::uint64_t tl, std::uint64_t blank) {
    return make_op<K::Module_CtcLoss>(CtcLossOpIr{tir(1, {2, 1, 3}), tir(2, {1, 2}, i64),
                                                  tir(il, {1}, i64), tir(tl, {1}, i64), blank,
                                                  out(9, {1})});
  };
  EXPECT_THAT(run_error(op(3, 4, 0)), HasSubstr("not a class"));  // label 3 of 3 classes
  EXPECT_THAT(run_error(op(3, 5, 0)), HasSubstr("target length 3"));
  EXPECT_THAT(run_error(op(3, 6, 3)), HasSubstr("blank 3"));
  run(op(3, 6, 0));  // target [1] only: label 3 is padding
  EXPECT_EQ(get(tir(9, {1})).size(), 1u);
}

TEST_F(Module_CtcLoss, InputLengthsBeyondTActAsT) {
  // Burn's default implementation masks updates with t < input_length: a length of 3 on T = 2
  // reads alpha at t = 1 like a length of 2 (PyTorch would refuse it).
  const auto i64 = DTypeKind::I64;
  const Vec lp = log_softmax_rows(rnd(2 * 1 * 3, 15), 3);
  put(tir(1, {2, 1, 3}), lp);
  put(tir(2, {1, 1}, i64), {1});
  put(tir(3, {1}, i64), {3});
  put(tir(4, {1}, i64), {1});
  run(make_op<K::Module_CtcLoss>(CtcLossOpIr{tir(1, {2, 1, 3}), tir(2, {1, 1}, i64),
                                             tir(3, {1}, i64), tir(4, {1}, i64), 0, out(5, {1})}));
  const auto ref = ref_ctc(lp, 2, 1, 3, {{1}}, {2}, 0);
  expect_near(get(tir(5, {1})), ref.loss);
}

TEST_F(Module_CtcLoss, EmptyBatchAndEmptyTargets) {
  const auto i64 = DTypeKind::I64;
  put(tir(1, {3, 0, 2}), {});
  put(tir(2, {0, 2}, i64), {});
  put(tir(3, {0}, i64), {});
  run(make_op<K::Module_CtcLoss>(CtcLossOpIr{tir(1, {3, 0, 2}), tir(2, {0, 2}, i64),
                                             tir(3, {0}, i64), tir(3, {0}, i64), 0, out(4, {0})}));
  EXPECT_TRUE(get(tir(4, {0})).empty());
  // Targets [N, 0]: the loss is -log p(all blanks).
  const Vec lp = log_softmax_rows(rnd(2 * 1 * 2, 9), 2);
  put(tir(5, {2, 1, 2}), lp);
  put(tir(6, {1, 0}, i64), {});
  put(tir(7, {1}, i64), {2});
  put(tir(8, {1}, i64), {0});
  run(make_op<K::Module_CtcLoss>(CtcLossOpIr{tir(5, {2, 1, 2}), tir(6, {1, 0}, i64),
                                             tir(7, {1}, i64), tir(8, {1}, i64), 1, out(9, {1})}));
  expect_near(get(tir(9, {1})), {-(lp[1] + lp[3])});
}

MODULE_SUITE(Module_CtcLossBackward);

TEST_F(Module_CtcLossBackward, IsBurnsGradientFormula) {
  // grad[t, n, c] = g[n] (exp(lp) - posterior(c at t)) for t < input length, 0 after, and 0 for
  // samples whose loss is infinite (PyTorch's formula, which Burn's default composition copies).
  const I64 t = 4, n = 3, c = 3, blank = 0;
  const Vec lp = log_softmax_rows(rnd(t * n * c, 41, -2, 2), c);
  const std::vector<std::vector<I64>> targets{{1, 2}, {2, 2}, {1}};
  const std::vector<I64> il{4, 3, 2};
  const auto ref = ref_ctc(lp, t, n, c, targets, il, blank);
  const Vec g{1.5, -2, 0.5};
  // Sample 1 ([2, 2] in 3 steps) needs 2 _ 2: possible. Make sample 2 impossible: [1, 1] in 2.
  const std::vector<std::vector<I64>> targets_imp{{1, 2}, {2, 2}, {1, 1}};
  const auto ref_imp = ref_ctc(lp, t, n, c, targets_imp, il, blank);
  ASSERT_TRUE(std::isinf(ref_imp.loss[2]));
  std::uint64_t id = 1;
  for (int imp = 0; imp < 2; ++imp)
    for (auto dt : {DTypeKind::F32, DTypeKind::F64}) {
      const auto& r = imp ? ref_imp : ref;
      put(tir(id, {4, 3, 3}, dt), lp);
      put(tir(id + 1, {3, 2}, DTypeKind::I32), imp ? Vec{1, 2, 2, 2, 1, 1} : Vec{1, 2, 2, 2, 1, 0});
      put(tir(id + 2, {3}, DTypeKind::I32), {4, 3, 2});
      put(tir(id + 3, {3}, DTypeKind::I32), {2, 2, imp ? 2.0 : 1.0});
      put(tir(id + 4, {3}, dt), g);
      run(make_op<K::Module_CtcLossBackward>(
          CtcLossBackwardOpIr{tir(id, {4, 3, 3}, dt), tir(id + 1, {3, 2}, DTypeKind::I32),
                              tir(id + 2, {3}, DTypeKind::I32), tir(id + 3, {3}, DTypeKind::I32),
                              tir(id + 4, {3}, dt), blank, out(id + 5, {4, 3, 3}, dt)}));
      Vec expected(t * n * c, 0.0);
      for (I64 ti = 0; ti < t; ++ti)
        for (I64 b = 0; b < n; ++b)
          for (I64 k = 0; k < c; ++k) {
            const I64 e = (ti * n + b) * c + k;
            if (ti < il[b] && !std::isinf(r.loss[b]))
              expected[e] = g[b] * (std::exp(lp[e]) - r.post[e]);
          }
      expect_near(get(tir(id + 5, {4, 3, 3}, dt)), expected, 1e-5);
      id += 6;
    }
}

TEST_F(Module_CtcLossBackward, HalfPrecision) {
  put(tir(1, {3, 1, 2}, DTypeKind::F16), Vec(6, std::log(0.5)));
  put(tir(2, {1, 2}), {1, 1});  // float targets are invalid
  put(tir(3, {1, 2}, DTypeKind::I64), {1, 1});
  put(tir(4, {1}, DTypeKind::I64), {3});
  put(tir(5, {1}, DTypeKind::I64), {2});
  put(tir(6, {1}, DTypeKind::F16), {1});
  run(make_op<K::Module_CtcLossBackward>(
      CtcLossBackwardOpIr{tir(1, {3, 1, 2}, DTypeKind::F16), tir(3, {1, 2}, DTypeKind::I64),
                          tir(4, {1}, DTypeKind::I64), tir(5, {1}, DTypeKind::I64),
                          tir(6, {1}, DTypeKind::F16), 0, out(7, {3, 1, 2}, DTypeKind::F16)}));
  // The single alignment 1 0 1 has posterior 1: grad = 0.5 - [0 1; 1 0; 0 1].
  EXPECT_EQ(get(tir(7, {3, 1, 2}, DTypeKind::F16)), (Vec{0.5, -0.5, -0.5, 0.5, 0.5, -0.5}));
}

// ---------------------------------------------------------------------------------------------
// Unfold4d

Vec ref_unfold(const Vec& x, I64 n, I64 c, I64 h, I64 w, I64 kh, I64 kw, I64 sh, I64 sw, I64 ph,
               I64 pw, I64 dh, I64 dw, I64& lh, I64& lw) {
  lh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
  lw = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  Vec y;
  for (I64 b = 0; b < n; ++b)
    for (I64 ch = 0; ch < c; ++ch)
      for (I64 i = 0; i < kh; ++i)
        for (I64 j = 0; j < kw; ++j)
          for (I64 oy = 0; oy < lh; ++oy)
            for (I64 ox = 0; ox < lw; ++ox) {
              const I64 iy = oy * sh - ph + i * dh, ix = ox * sw - pw + j * dw;
              y.push_back(
                  iy >= 0 && iy < h && ix >= 0 && ix < w ? x[((b * c + ch) * h + iy) * w + ix] : 0);
            }
  return y;
}

MODULE_SUITE(Module_Unfold4d);

TEST_F(Module_Unfold4d, HandComputed) {
  // 1x1x3x3 of 1..9, kernel 2, stride 1: rows are kernel offsets (0,0) (0,1) (1,0) (1,1).
  const auto x = tir(1, {1, 1, 3, 3});
  put(x, seq(9, 1));
  run(make_op<K::Module_Unfold4d>(Unfold4dOpIr{
      x, u2(2, 2), Unfold4dOptionsIr{u2(1, 1), u2(0, 0), u2(1, 1)}, out(2, {1, 4, 4})}));
  EXPECT_EQ(get(tir(2, {1, 4, 4})), (Vec{1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9}));
}

TEST_F(Module_Unfold4d, MatchesTheReferenceWithPaddingStrideDilation) {
  const I64 n = 2, c = 3, h = 5, w = 6;
  const Vec xv = rnd(n * c * h * w, 51);
  struct Cfg {
    I64 kh, kw, sh, sw, ph, pw, dh, dw;
  };
  std::uint64_t id = 1;
  for (auto cfg : {Cfg{2, 3, 1, 2, 0, 1, 1, 1}, Cfg{3, 2, 2, 1, 2, 0, 2, 1},
                   Cfg{1, 1, 3, 3, 1, 1, 1, 1}, Cfg{2, 2, 2, 2, 3, 3, 1, 3}}) {
    I64 lh, lw;
    const auto expected = ref_unfold(xv, n, c, h, w, cfg.kh, cfg.kw, cfg.sh, cfg.sw, cfg.ph, cfg.pw,
                                     cfg.dh, cfg.dw, lh, lw);
    for (auto dt : {DTypeKind::F32, DTypeKind::F16, DTypeKind::F64}) {
      const auto x = tir(id, {2, 3, 5, 6}, dt);
      put(x, xv);
      const Dims od{2, static_cast<std::uint64_t>(c * cfg.kh * cfg.kw),
                    static_cast<std::uint64_t>(lh * lw)};
      run(make_op<K::Module_Unfold4d>(Unfold4dOpIr{
          x, u2(cfg.kh, cfg.kw),
          Unfold4dOptionsIr{u2(cfg.sh, cfg.sw), u2(cfg.ph, cfg.pw), u2(cfg.dh, cfg.dw)},
          out(id + 1, od, dt)}));
      EXPECT_EQ(get(tir(id + 1, od, dt)), rounded(expected, dt));
      id += 2;
    }
  }
  // Non-contiguous input and an empty batch.
  const auto xt = tir(100, {1, 1, 2, 3});
  put_nc(xt, {1, 2, 3, 4, 5, 6});
  run(make_op<K::Module_Unfold4d>(Unfold4dOpIr{
      xt, u2(2, 2), Unfold4dOptionsIr{u2(1, 1), u2(0, 0), u2(1, 1)}, out(101, {1, 4, 2})}));
  EXPECT_EQ(get(tir(101, {1, 4, 2})), (Vec{1, 2, 2, 3, 4, 5, 5, 6}));
  const auto e = tir(102, {0, 2, 3, 3});
  put(e, {});
  run(make_op<K::Module_Unfold4d>(Unfold4dOpIr{
      e, u2(2, 2), Unfold4dOptionsIr{u2(1, 1), u2(0, 0), u2(1, 1)}, out(103, {0, 8, 4})}));
  EXPECT_TRUE(get(tir(103, {0, 8, 4})).empty());
}

}  // namespace
}  // namespace tb::test
