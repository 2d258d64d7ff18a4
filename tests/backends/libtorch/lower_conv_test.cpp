// Convolution lowerings: Conv{1,2,3}d (+ x/weight/bias backward), ConvTranspose{1,2,3}d
// (+ weight/bias backward), DeformableConv2d (+ backward).
//
// Expected values come from hand computation and from direct nested-loop references in this file
// (written from Burn's definitions: burn-backend's conv shape formulas and default backward ops,
// burn-flex's transposed-conv scatter and deform_conv.rs), never from ATen.
#include <gmock/gmock.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;
using I64s = std::vector<std::int64_t>;
using Values = std::vector<double>;

// ------------------------------------------------------------------------------------------------
// Data.

// Deterministic values, multiples of 1/16 in [-2, 2]: exact in f16/bf16, and sums of their products
// stay exact in f32 for the sizes used here.
Values vals(std::size_t n, std::uint64_t seed) {
  Values v(n);
  std::uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<double>(static_cast<std::int64_t>((s >> 33) % 65) - 32) / 16.0;
  }
  return v;
}

std::size_t count(const Dims& d) {
  std::size_t n = 1;
  for (auto v : d) n *= static_cast<std::size_t>(v);
  return n;
}

// ------------------------------------------------------------------------------------------------
// Reference convolutions (row-major, up to 3 spatial dims).

struct Geo {
  I64s stride, pad_b, pad_e, dil, pad_out;  // pad_e unused by transposed convs
  std::int64_t groups = 1;
};

std::int64_t at_or(const I64s& v, std::size_t i, std::int64_t def) {
  return i < v.size() ? v[i] : def;
}
std::array<std::int64_t, 3> spatial3(const Dims& s) {
  std::array<std::int64_t, 3> a{1, 1, 1};
  for (std::size_t i = 2; i < s.size(); ++i) a[i - 2] = static_cast<std::int64_t>(s[i]);
  return a;
}

// Burn's calculate_conv_output_shape.
Dims conv_out_shape(const Dims& xs, const Dims& ws, const Geo& g) {
  Dims out = {xs[0], ws[0]};
  for (std::size_t i = 2; i < xs.size(); ++i) {
    const auto d = i - 2;
    const std::int64_t size = static_cast<std::int64_t>(xs[i]) + g.pad_b[d] + g.pad_e[d] -
                              g.dil[d] * (static_cast<std::int64_t>(ws[i]) - 1) - 1;
    out.push_back(static_cast<std::uint64_t>(size / g.stride[d] + 1));
  }
  return out;
}

// Burn's calculate_conv_transpose_output_shape.
Dims conv_transpose_out_shape(const Dims& xs, const Dims& ws, const Geo& g) {
  Dims out = {xs[0], ws[1] * static_cast<std::uint64_t>(g.groups)};
  for (std::size_t i = 2; i < xs.size(); ++i) {
    const auto d = i - 2;
    out.push_back(static_cast<std::uint64_t>((static_cast<std::int64_t>(xs[i]) - 1) * g.stride[d] +
                                             g.dil[d] * (static_cast<std::int64_t>(ws[i]) - 1) + 1 +
                                             g.pad_out[d] - 2 * g.pad_b[d]));
  }
  return out;
}

// Calls f(x_index, w_index, y_index) for every product x·w that contributes to y.
// x [B, Ci, S...], w [Co, Ci/groups, K...], y [B, Co, O...].
void conv_terms(const Dims& xs, const Dims& ws, const Geo& g,
                const std::function<void(std::size_t, std::size_t, std::size_t)>& f) {
  const auto X = spatial3(xs), K = spatial3(ws), O = spatial3(conv_out_shape(xs, ws, g));
  const auto B = static_cast<std::int64_t>(xs[0]), Ci = static_cast<std::int64_t>(xs[1]);
  const auto Co = static_cast<std::int64_t>(ws[0]), Cig = static_cast<std::int64_t>(ws[1]);
  const std::int64_t Cog = Co / g.groups;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t co = 0; co < Co; ++co)
      for (std::int64_t o0 = 0; o0 < O[0]; ++o0)
        for (std::int64_t o1 = 0; o1 < O[1]; ++o1)
          for (std::int64_t o2 = 0; o2 < O[2]; ++o2)
            for (std::int64_t cl = 0; cl < Cig; ++cl)
              for (std::int64_t k0 = 0; k0 < K[0]; ++k0)
                for (std::int64_t k1 = 0; k1 < K[1]; ++k1)
                  for (std::int64_t k2 = 0; k2 < K[2]; ++k2) {
                    const std::array<std::int64_t, 3> o = {o0, o1, o2}, k = {k0, k1, k2};
                    std::array<std::int64_t, 3> i{};
                    bool inside = true;
                    for (std::size_t d = 0; d < 3; ++d) {
                      i[d] = o[d] * at_or(g.stride, d, 1) - at_or(g.pad_b, d, 0) +
                             k[d] * at_or(g.dil, d, 1);
                      inside = inside && i[d] >= 0 && i[d] < X[d];
                    }
                    if (!inside) continue;
                    const std::int64_t ci = (co / Cog) * Cig + cl;
                    const auto xi = (((b * Ci + ci) * X[0] + i[0]) * X[1] + i[1]) * X[2] + i[2];
                    const auto wi = (((co * Cig + cl) * K[0] + k0) * K[1] + k1) * K[2] + k2;
                    const auto yi = (((b * Co + co) * O[0] + o0) * O[1] + o1) * O[2] + o2;
                    f(static_cast<std::size_t>(xi), static_cast<std::size_t>(wi),
                      static_cast<std::size_t>(yi));
                  }
}

// The same for the transposed convolution, as burn-flex scatters it: input i, tap k land on output
// o = i·stride + k·dilation − padding when 0 <= o < out (padding_out only extends the output).
// x [B, Ci, S...], w [Ci, Co/groups, K...], y [B, Co, O...].
void conv_transpose_terms(const Dims& xs, const Dims& ws, const Geo& g,
                          const std::function<void(std::size_t, std::size_t, std::size_t)>& f) {
  const auto X = spatial3(xs), K = spatial3(ws), O = spatial3(conv_transpose_out_shape(xs, ws, g));
  const auto B = static_cast<std::int64_t>(xs[0]), Ci = static_cast<std::int64_t>(xs[1]);
  const auto Cog = static_cast<std::int64_t>(ws[1]);
  const std::int64_t Co = Cog * g.groups, Cig = Ci / g.groups;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t ci = 0; ci < Ci; ++ci)
      for (std::int64_t i0 = 0; i0 < X[0]; ++i0)
        for (std::int64_t i1 = 0; i1 < X[1]; ++i1)
          for (std::int64_t i2 = 0; i2 < X[2]; ++i2)
            for (std::int64_t cl = 0; cl < Cog; ++cl)
              for (std::int64_t k0 = 0; k0 < K[0]; ++k0)
                for (std::int64_t k1 = 0; k1 < K[1]; ++k1)
                  for (std::int64_t k2 = 0; k2 < K[2]; ++k2) {
                    const std::array<std::int64_t, 3> i = {i0, i1, i2}, k = {k0, k1, k2};
                    std::array<std::int64_t, 3> o{};
                    bool inside = true;
                    for (std::size_t d = 0; d < 3; ++d) {
                      o[d] = i[d] * at_or(g.stride, d, 1) + k[d] * at_or(g.dil, d, 1) -
                             at_or(g.pad_b, d, 0);
                      inside = inside && o[d] >= 0 && o[d] < O[d];
                    }
                    if (!inside) continue;
                    const std::int64_t co = (ci / Cig) * Cog + cl;
                    const auto xi = (((b * Ci + ci) * X[0] + i0) * X[1] + i1) * X[2] + i2;
                    const auto wi = (((ci * Cog + cl) * K[0] + k0) * K[1] + k1) * K[2] + k2;
                    const auto yi = (((b * Co + co) * O[0] + o[0]) * O[1] + o[1]) * O[2] + o[2];
                    f(static_cast<std::size_t>(xi), static_cast<std::size_t>(wi),
                      static_cast<std::size_t>(yi));
                  }
}

using Terms = void (*)(const Dims&, const Dims&, const Geo&,
                       const std::function<void(std::size_t, std::size_t, std::size_t)>&);

Values ref_forward(Terms terms, const Dims& xs, const Values& x, const Dims& ws, const Values& w,
                   const Dims& ys, const std::optional<Values>& bias, const Geo& g) {
  Values y(count(ys), 0.0);
  terms(xs, ws, g, [&](std::size_t xi, std::size_t wi, std::size_t yi) { y[yi] += x[xi] * w[wi]; });
  if (bias) {
    const std::size_t plane = count(ys) / (ys[0] * ys[1]);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += (*bias)[(i / plane) % ys[1]];
  }
  return y;
}
Values ref_x_grad(Terms terms, const Dims& xs, const Dims& ws, const Values& w, const Values& gy,
                  const Geo& g) {
  Values gx(count(xs), 0.0);
  terms(xs, ws, g,
        [&](std::size_t xi, std::size_t wi, std::size_t yi) { gx[xi] += gy[yi] * w[wi]; });
  return gx;
}
Values ref_w_grad(Terms terms, const Dims& xs, const Values& x, const Dims& ws, const Values& gy,
                  const Geo& g) {
  Values gw(count(ws), 0.0);
  terms(xs, ws, g,
        [&](std::size_t xi, std::size_t wi, std::size_t yi) { gw[wi] += gy[yi] * x[xi]; });
  return gw;
}
Values ref_bias_grad(const Dims& ys, const Values& gy) {
  Values gb(ys[1], 0.0);
  const std::size_t plane = count(ys) / (ys[0] * ys[1]);
  for (std::size_t i = 0; i < gy.size(); ++i) gb[(i / plane) % ys[1]] += gy[i];
  return gb;
}

// ------------------------------------------------------------------------------------------------
// Reference deformable convolution: a port of burn-flex 0.22.1 deform_conv.rs (f64).

struct DeformGeo {
  std::array<std::int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  std::int64_t weight_groups = 1, offset_groups = 1;
};

double bilinear(const Values& x, std::size_t base, std::int64_t H, std::int64_t W, double h,
                double w) {
  if (h <= -1.0 || h >= static_cast<double>(H) || w <= -1.0 || w >= static_cast<double>(W))
    return 0.0;
  const double hl = std::floor(h), wl = std::floor(w);
  const auto hh_i = static_cast<std::int64_t>(hl) + 1, wh_i = static_cast<std::int64_t>(wl) + 1;
  auto at = [&](std::int64_t r, std::int64_t c) { return x[base + r * W + c]; };
  const double v1 =
      (hl >= 0 && wl >= 0) ? at(static_cast<std::int64_t>(hl), static_cast<std::int64_t>(wl)) : 0;
  const double v2 = (hl >= 0 && wh_i < W) ? at(static_cast<std::int64_t>(hl), wh_i) : 0;
  const double v3 = (hh_i < H && wl >= 0) ? at(hh_i, static_cast<std::int64_t>(wl)) : 0;
  const double v4 = (hh_i < H && wh_i < W) ? at(hh_i, wh_i) : 0;
  const double lh = h - hl, lw = w - wl, hh = 1 - lh, hw = 1 - lw;
  return hh * hw * v1 + hh * lw * v2 + lh * hw * v3 + lh * lw * v4;
}

struct DeformData {
  Dims xs, os, ws, ms;  // ms empty: no mask
  Values x, offset, w, mask;
  std::optional<Values> bias;
  DeformGeo g;
  Dims out_shape() const { return {xs[0], ws[0], os[2], os[3]}; }
};

struct DeformGrads {
  Values x, offset, w, mask, bias;
};

// Visits every (output, input channel, tap) term with its indices and sample point.
template <class F>
void deform_terms(const DeformData& d, F f) {
  const auto B = static_cast<std::int64_t>(d.xs[0]), C = static_cast<std::int64_t>(d.xs[1]);
  const auto H = static_cast<std::int64_t>(d.xs[2]), W = static_cast<std::int64_t>(d.xs[3]);
  const auto Co = static_cast<std::int64_t>(d.ws[0]), kh = static_cast<std::int64_t>(d.ws[2]);
  const auto kw = static_cast<std::int64_t>(d.ws[3]);
  const auto Ho = static_cast<std::int64_t>(d.os[2]), Wo = static_cast<std::int64_t>(d.os[3]);
  const auto OC = static_cast<std::int64_t>(d.os[1]);
  const std::int64_t cpog = C / d.g.offset_groups, cpwg = C / d.g.weight_groups;
  const std::int64_t ocpwg = Co / d.g.weight_groups;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t oc = 0; oc < Co; ++oc)
      for (std::int64_t oh = 0; oh < Ho; ++oh)
        for (std::int64_t ow = 0; ow < Wo; ++ow) {
          const std::int64_t ic0 = (oc / ocpwg) * cpwg;
          for (std::int64_t ic = ic0; ic < ic0 + cpwg; ++ic) {
            const std::int64_t og = ic / cpog;
            for (std::int64_t i = 0; i < kh; ++i)
              for (std::int64_t j = 0; j < kw; ++j) {
                const std::int64_t k = i * kw + j;
                const auto ohf = static_cast<std::size_t>(
                    ((b * OC + og * kh * kw * 2 + k * 2) * Ho + oh) * Wo + ow);
                const auto owf = ohf + static_cast<std::size_t>(Ho * Wo);
                const double sh =
                    static_cast<double>(oh * d.g.stride[0] + i * d.g.dilation[0] - d.g.padding[0]) +
                    d.offset[ohf];
                const double sw =
                    static_cast<double>(ow * d.g.stride[1] + j * d.g.dilation[1] - d.g.padding[1]) +
                    d.offset[owf];
                const auto mi = static_cast<std::size_t>(
                    ((b * d.g.offset_groups * kh * kw + og * kh * kw + k) * Ho + oh) * Wo + ow);
                const auto wi =
                    static_cast<std::size_t>(((oc * cpwg + (ic - ic0)) * kh + i) * kw + j);
                const auto yi = static_cast<std::size_t>(((b * Co + oc) * Ho + oh) * Wo + ow);
                const auto xbase = static_cast<std::size_t>((b * C + ic) * H * W);
                f(yi, wi, xbase, ohf, owf, mi, sh, sw, H, W);
              }
          }
        }
}

Values ref_deform_forward(const DeformData& d) {
  const Dims ys = d.out_shape();
  Values y(count(ys), 0.0);
  const bool has_mask = !d.ms.empty();
  deform_terms(d, [&](std::size_t yi, std::size_t wi, std::size_t xbase, std::size_t, std::size_t,
                      std::size_t mi, double sh, double sw, std::int64_t H, std::int64_t W) {
    double v = bilinear(d.x, xbase, H, W, sh, sw);
    if (has_mask) v *= d.mask[mi];
    y[yi] += d.w[wi] * v;
  });
  if (d.bias) {
    const std::size_t plane = ys[2] * ys[3];
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += (*d.bias)[(i / plane) % ys[1]];
  }
  return y;
}

// burn-flex deform_conv2d_backward_f32 (+ bilinear_interpolate_backward_f32), in f64.
DeformGrads ref_deform_backward(const DeformData& d, const Values& gy) {
  DeformGrads g;
  g.x.assign(d.x.size(), 0.0);
  g.offset.assign(d.offset.size(), 0.0);
  g.w.assign(d.w.size(), 0.0);
  const bool has_mask = !d.ms.empty();
  if (has_mask) g.mask.assign(d.mask.size(), 0.0);
  if (d.bias) g.bias = ref_bias_grad(d.out_shape(), gy);
  deform_terms(
      d, [&](std::size_t yi, std::size_t wi, std::size_t xbase, std::size_t ohf, std::size_t owf,
             std::size_t mi, double h, double w, std::int64_t H, std::int64_t W) {
        const double go = gy[yi];
        const double m = has_mask ? d.mask[mi] : 1.0;
        const double interp = bilinear(d.x, xbase, H, W, h, w);
        g.w[wi] += go * m * interp;
        if (has_mask) g.mask[mi] += go * d.w[wi] * interp;
        const double gv = go * m * d.w[wi];
        if (h <= -1.0 || h >= static_cast<double>(H) || w <= -1.0 || w >= static_cast<double>(W))
          return;
        const double hl = std::floor(h), wl = std::floor(w), hh_ = hl + 1, wh_ = wl + 1;
        const double lh = h - hl, lw = w - wl, hh = 1 - lh, hw = 1 - lw;
        auto idx = [&](double r, double c) {
          return xbase + static_cast<std::size_t>(r) * static_cast<std::size_t>(W) +
                 static_cast<std::size_t>(c);
        };
        const bool c1 = hl >= 0 && wl >= 0, c2 = hl >= 0 && wh_ < W, c3 = hh_ < H && wl >= 0,
                   c4 = hh_ < H && wh_ < W;
        const double v1 = c1 ? d.x[idx(hl, wl)] : 0, v2 = c2 ? d.x[idx(hl, wh_)] : 0;
        const double v3 = c3 ? d.x[idx(hh_, wl)] : 0, v4 = c4 ? d.x[idx(hh_, wh_)] : 0;
        if (c1) g.x[idx(hl, wl)] += hh * hw * gv;
        if (c2) g.x[idx(hl, wh_)] += hh * lw * gv;
        if (c3) g.x[idx(hh_, wl)] += lh * hw * gv;
        if (c4) g.x[idx(hh_, wh_)] += lh * lw * gv;
        g.offset[ohf] += gv * (hw * (v3 - v1) + lw * (v4 - v2));
        g.offset[owf] += gv * (hh * (v2 - v1) + lh * (v4 - v3));
      });
  return g;
}

// ------------------------------------------------------------------------------------------------
// Fixture.

class ConvTest : public OpTest {
 protected:
  ConvTest() {
    // "permute": a strided view of input 0 (scalars = the axes), to feed non-contiguous inputs.
    registry->add(
        "permute",
        [](const backend::libtorch::CustomOpCall& call) -> Result<std::vector<at::Tensor>> {
          std::vector<std::int64_t> axes;
          for (const auto& s : call.op.scalars) axes.push_back(s.as_int());
          return std::vector<at::Tensor>{call.inputs.at(0).permute(axes)};
        });
  }

  // Registers a tensor with fresh id.
  TensorIr input(const Dims& dims, const Values& values, DType dtype = DTypeKind::F32) {
    const auto t = tir(next_id++, dims, dtype);
    put(t, values);
    return t;
  }
  std::optional<TensorIr> maybe_input(const Dims& dims, const std::optional<Values>& values,
                                      DType dtype = DTypeKind::F32) {
    if (!values) return std::nullopt;
    return input(dims, *values, dtype);
  }
  TensorIr output(const Dims& dims, DType dtype = DTypeKind::F32) {
    return out(next_id++, dims, dtype);
  }
  // A non-contiguous tensor of `dims` holding `values` (row-major in dims): registered permuted,
  // then permuted back through the "permute" custom op (a strided view).
  TensorIr strided_input(const Dims& dims, const Values& values, DType dtype = DTypeKind::F32) {
    // Reverse the dims: stored[i_r..., i_0] = values[i_0..., i_r].
    const std::size_t r = dims.size();
    Dims rev(dims.rbegin(), dims.rend());
    Values stored(values.size());
    std::vector<std::size_t> idx(r, 0);
    for (std::size_t lin = 0; lin < values.size(); ++lin) {
      std::size_t rem = lin;
      for (std::size_t d = r; d-- > 0;) {
        idx[d] = rem % dims[d];
        rem /= dims[d];
      }
      std::size_t off = 0;
      for (std::size_t d = r; d-- > 0;) off = off * dims[d] + idx[d];
      stored[off] = values[lin];
    }
    const auto t = input(rev, stored, dtype);
    std::vector<ScalarIr> axes;
    for (std::size_t d = r; d-- > 0;) axes.push_back(ScalarIr::i(static_cast<std::int64_t>(d)));
    const auto o = output(dims, dtype);
    run(make_op<OpKind::Custom_Op>(CustomOpIr{"permute", {t}, {o}, axes}));
    return ro(o);
  }

  std::uint64_t next_id = 1;
};

template <std::size_t N>
std::array<std::uint64_t, N> us(const I64s& v) {
  std::array<std::uint64_t, N> a{};
  for (std::size_t i = 0; i < N; ++i) a[i] = static_cast<std::uint64_t>(v.at(i));
  return a;
}
template <std::size_t N>
PaddingPairs<N> pairs(const Geo& g) {
  PaddingPairs<N> p{};
  for (std::size_t i = 0; i < N; ++i)
    p[i] = {static_cast<std::uint64_t>(g.pad_b.at(i)), static_cast<std::uint64_t>(g.pad_e.at(i))};
  return p;
}

Conv1dOptionsIr conv_opts1(const Geo& g) {
  return {us<1>(g.stride), pairs<1>(g), us<1>(g.dil), static_cast<std::uint64_t>(g.groups)};
}
Conv2dOptionsIr conv_opts2(const Geo& g) {
  return {us<2>(g.stride), pairs<2>(g), us<2>(g.dil), static_cast<std::uint64_t>(g.groups)};
}
Conv3dOptionsIr conv_opts3(const Geo& g) {
  return {us<3>(g.stride), us<3>(g.pad_b), us<3>(g.dil), static_cast<std::uint64_t>(g.groups)};
}
template <class O, std::size_t N>
O transpose_opts(const Geo& g) {
  return {us<N>(g.stride), us<N>(g.pad_b), us<N>(g.pad_out), us<N>(g.dil),
          static_cast<std::uint64_t>(g.groups)};
}

// Per spatial rank: the op kinds and payloads.
template <int N>
struct Kinds;
template <>
struct Kinds<1> {
  static constexpr OpKind fwd = OpKind::Module_Conv1d, xb = OpKind::Module_Conv1dXBackward,
                          wb = OpKind::Module_Conv1dWeightBackward,
                          bb = OpKind::Module_Conv1dBiasBackward,
                          tfwd = OpKind::Module_ConvTranspose1d,
                          twb = OpKind::Module_ConvTranspose1dWeightBackward,
                          tbb = OpKind::Module_ConvTranspose1dBiasBackward;
  static Conv1dOptionsIr opts(const Geo& g) { return conv_opts1(g); }
  static ConvTranspose1dOptionsIr topts(const Geo& g) {
    return transpose_opts<ConvTranspose1dOptionsIr, 1>(g);
  }
};
template <>
struct Kinds<2> {
  static constexpr OpKind fwd = OpKind::Module_Conv2d, xb = OpKind::Module_Conv2dXBackward,
                          wb = OpKind::Module_Conv2dWeightBackward,
                          bb = OpKind::Module_Conv2dBiasBackward,
                          tfwd = OpKind::Module_ConvTranspose2d,
                          twb = OpKind::Module_ConvTranspose2dWeightBackward,
                          tbb = OpKind::Module_ConvTranspose2dBiasBackward;
  static Conv2dOptionsIr opts(const Geo& g) { return conv_opts2(g); }
  static ConvTranspose2dOptionsIr topts(const Geo& g) {
    return transpose_opts<ConvTranspose2dOptionsIr, 2>(g);
  }
};
template <>
struct Kinds<3> {
  static constexpr OpKind fwd = OpKind::Module_Conv3d, xb = OpKind::Module_Conv3dXBackward,
                          wb = OpKind::Module_Conv3dWeightBackward,
                          bb = OpKind::Module_Conv3dBiasBackward,
                          tfwd = OpKind::Module_ConvTranspose3d,
                          twb = OpKind::Module_ConvTranspose3dWeightBackward,
                          tbb = OpKind::Module_ConvTranspose3dBiasBackward;
  static Conv3dOptionsIr opts(const Geo& g) { return conv_opts3(g); }
  static ConvTranspose3dOptionsIr topts(const Geo& g) {
    return transpose_opts<ConvTranspose3dOptionsIr, 3>(g);
  }
};

double tol_of(const DType& d) {
  switch (d.kind) {
    case DTypeKind::F16:
      return 2e-3;
    case DTypeKind::BF16:
      return 1.6e-2;
    case DTypeKind::F64:
      return 1e-12;
    default:
      return 1e-5;
  }
}

// A conv case: shapes, values, geometry, dtype.
struct Case {
  Dims xs, ws;
  Geo g;
  bool bias = false;
  DType dtype = DTypeKind::F32;
  std::uint64_t seed = 1;
  bool strided_x = false;
};

class ConvCaseTest : public ConvTest {
 protected:
  TensorIr x_input(const Case& c, const Values& x) {
    return c.strided_x ? strided_input(c.xs, x, c.dtype) : input(c.xs, x, c.dtype);
  }

  template <int N>
  void check_conv(const Case& c) {
    const Values x = vals(count(c.xs), c.seed), w = vals(count(c.ws), c.seed + 1);
    const std::optional<Values> b =
        c.bias ? std::optional<Values>(vals(c.ws[0], c.seed + 2)) : std::nullopt;
    const Dims ys = conv_out_shape(c.xs, c.ws, c.g);
    const auto xt = x_input(c, x);
    const auto wt = input(c.ws, w, c.dtype);
    const auto bt = maybe_input({c.ws[0]}, b, c.dtype);
    const auto yt = output(ys, c.dtype);
    run(make_op<Kinds<N>::fwd>({xt, wt, bt, Kinds<N>::opts(c.g), yt}));
    expect_near(get(yt), ref_forward(conv_terms, c.xs, x, c.ws, w, ys, b, c.g), tol_of(c.dtype));
  }

  template <int N>
  void check_conv_backward(const Case& c) {
    const Values x = vals(count(c.xs), c.seed), w = vals(count(c.ws), c.seed + 1);
    const Dims ys = conv_out_shape(c.xs, c.ws, c.g);
    const Values gy = vals(count(ys), c.seed + 3);
    const auto xt = x_input(c, x);
    const auto wt = input(c.ws, w, c.dtype);
    const auto gt = input(ys, gy, c.dtype);
    const auto gx = output(c.xs, c.dtype), gw = output(c.ws, c.dtype);
    run(make_op<Kinds<N>::xb>({xt, wt, gt, Kinds<N>::opts(c.g), gx}));
    run(make_op<Kinds<N>::wb>({xt, wt, gt, Kinds<N>::opts(c.g), gw}));
    expect_near(get(gx), ref_x_grad(conv_terms, c.xs, c.ws, w, gy, c.g), tol_of(c.dtype));
    expect_near(get(gw), ref_w_grad(conv_terms, c.xs, x, c.ws, gy, c.g), tol_of(c.dtype));
  }

  template <int N>
  void check_conv_transpose(const Case& c) {
    const Values x = vals(count(c.xs), c.seed), w = vals(count(c.ws), c.seed + 1);
    const Dims ys = conv_transpose_out_shape(c.xs, c.ws, c.g);
    const std::optional<Values> b =
        c.bias ? std::optional<Values>(vals(ys[1], c.seed + 2)) : std::nullopt;
    const auto xt = x_input(c, x);
    const auto wt = input(c.ws, w, c.dtype);
    const auto bt = maybe_input({ys[1]}, b, c.dtype);
    const auto yt = output(ys, c.dtype);
    run(make_op<Kinds<N>::tfwd>({xt, wt, bt, Kinds<N>::topts(c.g), yt}));
    expect_near(get(yt), ref_forward(conv_transpose_terms, c.xs, x, c.ws, w, ys, b, c.g),
                tol_of(c.dtype));
  }

  template <int N>
  void check_conv_transpose_weight_backward(const Case& c) {
    const Values x = vals(count(c.xs), c.seed), w = vals(count(c.ws), c.seed + 1);
    const Dims ys = conv_transpose_out_shape(c.xs, c.ws, c.g);
    const Values gy = vals(count(ys), c.seed + 3);
    const auto xt = x_input(c, x);
    const auto wt = input(c.ws, w, c.dtype);
    const auto gt = input(ys, gy, c.dtype);
    const auto gw = output(c.ws, c.dtype);
    run(make_op<Kinds<N>::twb>({xt, wt, gt, Kinds<N>::topts(c.g), gw}));
    expect_near(get(gw), ref_w_grad(conv_transpose_terms, c.xs, x, c.ws, gy, c.g), tol_of(c.dtype));
  }

  // Conv and ConvTranspose bias backward: output_grad summed over all dims but the channels.
  template <OpKind K, class P>
  void check_bias_backward(const Dims& xs, const Dims& ys, DType dtype) {
    const Values gy = vals(count(ys), 7);
    const auto xt = input(xs, vals(count(xs), 8), dtype);
    const auto bt = input({ys[1]}, vals(ys[1], 9), dtype);
    const auto gt = input(ys, gy, dtype);
    const auto gb = output({ys[1]}, dtype);
    run(make_op<K>(P{xt, bt, gt, gb}));
    expect_near(get(gb), ref_bias_grad(ys, gy), tol_of(dtype) * 4);
  }
};

Geo geo(I64s stride, I64s pad_b, I64s pad_e, I64s dil, std::int64_t groups = 1, I64s pad_out = {}) {
  if (pad_out.empty()) pad_out.assign(stride.size(), 0);
  return Geo{std::move(stride), std::move(pad_b),   std::move(pad_e),
             std::move(dil),    std::move(pad_out), groups};
}

const std::vector<DType> kFloatTypes = {DTypeKind::F32, DTypeKind::F64, DTypeKind::F16,
                                        DTypeKind::BF16, DTypeKind::Flex32};

// ================================================================================================
// Conv1d

class Module_Conv1d : public ConvCaseTest {};

TEST_F(Module_Conv1d, HandComputedAsymmetricPadding) {
  // x = [1, 2, 3, 4], w = [1, 10]: padded (1, 0) -> [0, 1, 2, 3, 4] -> [10, 21, 32, 43];
  // padded (0, 1) -> [1, 2, 3, 4, 0] -> [21, 32, 43, 4]; bias 0.5.
  const auto x = input({1, 1, 4}, {1, 2, 3, 4});
  const auto w = input({1, 1, 2}, {1, 10});
  const auto b = input({1}, {0.5});
  const auto y1 = output({1, 1, 4}), y2 = output({1, 1, 4});
  run(make_op<OpKind::Module_Conv1d>({x, w, b, conv_opts1(geo({1}, {1}, {0}, {1})), y1}));
  run(make_op<OpKind::Module_Conv1d>(
      {x, w, std::nullopt, conv_opts1(geo({1}, {0}, {1}, {1})), y2}));
  EXPECT_EQ(get(y1), (Values{10.5, 21.5, 32.5, 43.5}));
  EXPECT_EQ(get(y2), (Values{21, 32, 43, 4}));
}

TEST_F(Module_Conv1d, GroupsDilationStrideAsymmetricPaddingBias) {
  check_conv<1>({{2, 4, 9}, {6, 2, 3}, geo({2}, {3}, {1}, {2}, 2), true});
  check_conv<1>({{1, 3, 7}, {2, 3, 2}, geo({1}, {0}, {1}, {1}), false, DTypeKind::F32, 5});
  // Padding beyond the kernel reach: whole windows of zeros at the ends.
  check_conv<1>({{1, 2, 3}, {2, 2, 2}, geo({1}, {3}, {2}, {1}), true, DTypeKind::F32, 9});
}

TEST_F(Module_Conv1d, EveryFloatDType) {
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_conv<1>({{2, 4, 6}, {4, 2, 2}, geo({1}, {0}, {1}, {2}, 2), true, dt, 3});
  }
}

TEST_F(Module_Conv1d, NonContiguousInput) {
  Case c{{2, 3, 5}, {2, 3, 3}, geo({2}, {1}, {2}, {1}), true};
  c.strided_x = true;
  check_conv<1>(c);
}

TEST_F(Module_Conv1d, EmptyBatch) {
  const auto x = input({0, 2, 5}, Values{});
  const auto w = input({3, 2, 2}, vals(12, 1));
  const auto y = output({0, 3, 4});
  run(make_op<OpKind::Module_Conv1d>({x, w, std::nullopt, conv_opts1(geo({1}, {0}, {0}, {1})), y}));
  EXPECT_TRUE(get(y).empty());
}

TEST_F(Module_Conv1d, ReadWriteInputsAreFreed) {
  const auto x = input({1, 1, 4}, {1, 2, 3, 4});
  const auto w = input({1, 1, 2}, {1, 10});
  const auto y = output({1, 1, 3});
  run(make_op<OpKind::Module_Conv1d>(
      {rw(x), rw(w), std::nullopt, conv_opts1(geo({1}, {0}, {0}, {1})), y}));
  EXPECT_EQ(get(y), (Values{21, 32, 43}));
  EXPECT_EQ(exec->stats().live_tensors, 1u);
}

TEST_F(Module_Conv1d, DeclaredShapeIsChecked) {
  const auto x = input({1, 1, 4}, {1, 2, 3, 4});
  const auto w = input({1, 1, 2}, {1, 10});
  EXPECT_THAT(run_error(make_op<OpKind::Module_Conv1d>(
                  {x, w, std::nullopt, conv_opts1(geo({1}, {0}, {0}, {1})), output({1, 1, 4})})),
              HasSubstr("shape [1, 1, 3]"));
}

class Module_Conv1dXBackward : public ConvCaseTest {};

TEST_F(Module_Conv1dXBackward, HandComputed) {
  // The hand case above (padding (1, 0)) with output_grad = 1: x[i] meets w[1] at output i and
  // w[0] at output i + 1 (if any): [11, 11, 11, 10].
  const auto x = input({1, 1, 4}, {1, 2, 3, 4});
  const auto w = input({1, 1, 2}, {1, 10});
  const auto gy = input({1, 1, 4}, {1, 1, 1, 1});
  const auto gx = output({1, 1, 4});
  run(make_op<OpKind::Module_Conv1dXBackward>({x, w, gy, conv_opts1(geo({1}, {1}, {0}, {1})), gx}));
  EXPECT_EQ(get(gx), (Values{11, 11, 11, 10}));
}

TEST_F(Module_Conv1dXBackward, StrideLeavesTrailingInputUnused) {
  // Length 6, kernel 2, stride 2... plus one: length 5 gives 2 outputs; x[4] is never read.
  const auto x = input({1, 1, 5}, {1, 2, 3, 4, 5});
  const auto w = input({1, 1, 2}, {2, 3});
  const auto gy = input({1, 1, 2}, {1, 10});
  const auto gx = output({1, 1, 5});
  run(make_op<OpKind::Module_Conv1dXBackward>({x, w, gy, conv_opts1(geo({2}, {0}, {0}, {1})), gx}));
  EXPECT_EQ(get(gx), (Values{2, 3, 20, 30, 0}));
}

TEST_F(Module_Conv1dXBackward, MatchesReference) {
  check_conv_backward<1>({{2, 4, 9}, {6, 2, 3}, geo({2}, {3}, {1}, {2}, 2)});
  check_conv_backward<1>({{1, 3, 8}, {2, 3, 2}, geo({3}, {0}, {2}, {1}), false, DTypeKind::F32, 4});
  check_conv_backward<1>(
      {{1, 2, 6}, {4, 1, 3}, geo({1}, {2}, {2}, {1}, 2), false, DTypeKind::F64, 6});
}

TEST_F(Module_Conv1dXBackward, HalfTypesAndStridedInput) {
  for (const auto& dt : {DType(DTypeKind::F16), DType(DTypeKind::BF16)}) {
    SCOPED_TRACE(std::string(dt.name()));
    check_conv_backward<1>({{2, 2, 7}, {2, 2, 3}, geo({2}, {1}, {0}, {1}), false, dt, 2});
  }
  Case c{{2, 2, 7}, {2, 2, 3}, geo({2}, {1}, {0}, {1})};
  c.strided_x = true;
  check_conv_backward<1>(c);
}

class Module_Conv1dWeightBackward : public ConvCaseTest {};

TEST_F(Module_Conv1dWeightBackward, HandComputed) {
  // padded x = [0, 1, 2, 3, 4], output_grad = 1: gw[k] = Σ_o xpad[o + k] = [6, 10].
  const auto x = input({1, 1, 4}, {1, 2, 3, 4});
  const auto w = input({1, 1, 2}, {1, 10});
  const auto gy = input({1, 1, 4}, {1, 1, 1, 1});
  const auto gw = output({1, 1, 2});
  run(make_op<OpKind::Module_Conv1dWeightBackward>(
      {x, w, gy, conv_opts1(geo({1}, {1}, {0}, {1})), gw}));
  EXPECT_EQ(get(gw), (Values{6, 10}));
}

TEST_F(Module_Conv1dWeightBackward, MatchesReference) {
  // (the weight-grad checks of check_conv_backward run here too)
  check_conv_backward<1>(
      {{2, 4, 10}, {4, 1, 3}, geo({3}, {1}, {2}, {2}, 4), false, DTypeKind::F32, 11});
  check_conv_backward<1>(
      {{3, 2, 5}, {3, 2, 5}, geo({1}, {2}, {2}, {1}), false, DTypeKind::F16, 12});
}

class Module_Conv1dBiasBackward : public ConvCaseTest {};

TEST_F(Module_Conv1dBiasBackward, SumsOverBatchAndLength) {
  const auto x = input({2, 1, 3}, vals(6, 1));
  const auto b = input({2}, {0, 0});
  const auto gy = input({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const auto gb = output({2});
  run(make_op<OpKind::Module_Conv1dBiasBackward>({x, b, gy, gb}));
  EXPECT_EQ(get(gb), (Values{1 + 2 + 5 + 6, 3 + 4 + 7 + 8}));
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_bias_backward<OpKind::Module_Conv1dBiasBackward, Conv1dBiasBackwardOpIr>({3, 2, 9},
                                                                                   {3, 5, 7}, dt);
  }
}

// ================================================================================================
// Conv2d

class Module_Conv2d : public ConvCaseTest {};

TEST_F(Module_Conv2d, HandComputedSamePaddingEvenKernel) {
  // "same" padding for a 2x2 kernel is (0, 1) per dim (burn-nn puts the extra at the end).
  // x = [[1, 2], [3, 4]], w = [[1, 2], [3, 4]]:
  // y00 = 1·1 + 2·2 + 3·3 + 4·4 = 30, y01 = 2·1 + 0 + 4·3 + 0 = 14, y10 = 3·1 + 4·2 = 11, y11 = 4.
  const auto x = input({1, 1, 2, 2}, {1, 2, 3, 4});
  const auto w = input({1, 1, 2, 2}, {1, 2, 3, 4});
  const auto y = output({1, 1, 2, 2});
  run(make_op<OpKind::Module_Conv2d>(
      {x, w, std::nullopt, conv_opts2(geo({1, 1}, {0, 0}, {1, 1}, {1, 1})), y}));
  EXPECT_EQ(get(y), (Values{30, 14, 11, 4}));
  // The same padding at the beginning instead: y00 = 4·1 = 4, y01 = 3·1 + 4·2 = 11, ...
  const auto y2 = output({1, 1, 2, 2});
  run(make_op<OpKind::Module_Conv2d>(
      {x, w, std::nullopt, conv_opts2(geo({1, 1}, {1, 1}, {0, 0}, {1, 1})), y2}));
  EXPECT_EQ(get(y2), (Values{4, 11, 14, 30}));
}

TEST_F(Module_Conv2d, GroupsDilationStrideAsymmetricPaddingBias) {
  check_conv<2>({{2, 4, 7, 6}, {6, 2, 3, 2}, geo({1, 2}, {2, 0}, {1, 1}, {2, 1}, 2), true});
  check_conv<2>({{1, 3, 5, 5},
                 {3, 1, 2, 2},
                 geo({2, 1}, {1, 1}, {0, 0}, {1, 2}, 3),
                 false,
                 DTypeKind::F32,
                 3});
  check_conv<2>(
      {{1, 2, 4, 4}, {2, 2, 3, 3}, geo({1, 1}, {1, 1}, {1, 1}, {1, 1}), true, DTypeKind::F32, 4});
}

TEST_F(Module_Conv2d, EveryFloatDType) {
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_conv<2>(
        {{1, 2, 5, 4}, {2, 1, 2, 3}, geo({2, 1}, {0, 2}, {1, 0}, {1, 1}, 2), true, dt, 5});
  }
}

TEST_F(Module_Conv2d, NonContiguousInput) {
  Case c{{2, 2, 4, 5}, {3, 2, 2, 2}, geo({1, 2}, {1, 0}, {0, 1}, {1, 1}), true};
  c.strided_x = true;
  check_conv<2>(c);
}

class Module_Conv2dXBackward : public ConvCaseTest {};

TEST_F(Module_Conv2dXBackward, MatchesReference) {
  check_conv_backward<2>({{2, 4, 7, 6}, {6, 2, 3, 2}, geo({1, 2}, {2, 0}, {1, 1}, {2, 1}, 2)});
  // Stride 3 with 8 rows: the last rows are read by no window.
  check_conv_backward<2>(
      {{1, 2, 8, 5}, {2, 2, 2, 3}, geo({3, 2}, {0, 1}, {1, 0}, {1, 1}), false, DTypeKind::F32, 2});
  check_conv_backward<2>({{1, 2, 4, 4},
                          {2, 1, 3, 3},
                          geo({1, 1}, {1, 1}, {1, 1}, {1, 1}, 2),
                          false,
                          DTypeKind::F64,
                          3});
}

TEST_F(Module_Conv2dXBackward, HalfTypesAndStridedInput) {
  for (const auto& dt : {DType(DTypeKind::F16), DType(DTypeKind::BF16)}) {
    SCOPED_TRACE(std::string(dt.name()));
    check_conv_backward<2>(
        {{1, 2, 5, 4}, {2, 2, 2, 2}, geo({2, 1}, {0, 1}, {1, 0}, {1, 1}), false, dt, 4});
  }
  Case c{{1, 2, 5, 4}, {2, 2, 2, 2}, geo({2, 1}, {0, 1}, {1, 0}, {1, 1})};
  c.strided_x = true;
  check_conv_backward<2>(c);
}

TEST_F(Module_Conv2dXBackward, EmptyBatch) {
  // Also the weight gradient of an empty batch: zeros.
  const auto x = input({0, 2, 4, 4}, Values{});
  const auto w = input({3, 2, 2, 2}, vals(24, 1));
  const auto gy = input({0, 3, 3, 4}, Values{});
  const auto gx = output({0, 2, 4, 4}), gw = output({3, 2, 2, 2});
  const auto opts = conv_opts2(geo({1, 1}, {0, 0}, {0, 1}, {1, 1}));
  run(make_op<OpKind::Module_Conv2dXBackward>({x, w, gy, opts, gx}));
  run(make_op<OpKind::Module_Conv2dWeightBackward>({x, w, gy, opts, gw}));
  EXPECT_TRUE(get(gx).empty());
  EXPECT_EQ(get(gw), Values(24, 0.0));
}

class Module_Conv2dWeightBackward : public ConvCaseTest {};

TEST_F(Module_Conv2dWeightBackward, HandComputed) {
  // x = [[1, 2], [3, 4]] padded (0, 1) per dim, output_grad = 1 everywhere (2x2):
  // gw[i][j] = Σ_{oh, ow} xpad[oh + i][ow + j]: gw00 = 10, gw01 = 2 + 4 = 6, gw10 = 7, gw11 = 4.
  const auto x = input({1, 1, 2, 2}, {1, 2, 3, 4});
  const auto w = input({1, 1, 2, 2}, {1, 2, 3, 4});
  const auto gy = input({1, 1, 2, 2}, {1, 1, 1, 1});
  const auto gw = output({1, 1, 2, 2});
  run(make_op<OpKind::Module_Conv2dWeightBackward>(
      {x, w, gy, conv_opts2(geo({1, 1}, {0, 0}, {1, 1}, {1, 1})), gw}));
  EXPECT_EQ(get(gw), (Values{10, 6, 7, 4}));
}

TEST_F(Module_Conv2dWeightBackward, MatchesReference) {
  check_conv_backward<2>({{2, 6, 6, 5},
                          {4, 3, 2, 2},
                          geo({2, 1}, {1, 0}, {0, 2}, {1, 2}, 2),
                          false,
                          DTypeKind::F32,
                          21});
  check_conv_backward<2>({{1, 2, 4, 4},
                          {2, 2, 2, 2},
                          geo({1, 1}, {0, 0}, {0, 0}, {1, 1}),
                          false,
                          DTypeKind::BF16,
                          22});
}

class Module_Conv2dBiasBackward : public ConvCaseTest {};

TEST_F(Module_Conv2dBiasBackward, SumsOverBatchAndSpace) {
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_bias_backward<OpKind::Module_Conv2dBiasBackward, Conv2dBiasBackwardOpIr>(
        {2, 3, 5, 5}, {2, 4, 3, 2}, dt);
  }
}

// ================================================================================================
// Conv3d (symmetric padding in the IR)

class Module_Conv3d : public ConvCaseTest {};

TEST_F(Module_Conv3d, HandComputed) {
  // 2x2x2 ones input, 2x2x2 kernel of 1..8, padding 0: the single output is 1 + ... + 8 = 36;
  // padding 1 in depth only: [1,1 + d-windows] -> the two depth windows see one slab each:
  // window 0 reads kernel depth 1 (5 + 6 + 7 + 8 = 26), then both (36), then depth 0 (10).
  const auto x = input({1, 1, 2, 2, 2}, Values(8, 1.0));
  const auto w = input({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const auto y = output({1, 1, 1, 1, 1}), y2 = output({1, 1, 3, 1, 1});
  run(make_op<OpKind::Module_Conv3d>(
      {x, w, std::nullopt, conv_opts3(geo({1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1})), y}));
  run(make_op<OpKind::Module_Conv3d>(
      {x, w, std::nullopt, conv_opts3(geo({1, 1, 1}, {1, 0, 0}, {1, 0, 0}, {1, 1, 1})), y2}));
  EXPECT_EQ(get(y), (Values{36}));
  EXPECT_EQ(get(y2), (Values{26, 36, 10}));
}

TEST_F(Module_Conv3d, GroupsDilationStridePaddingBias) {
  check_conv<3>(
      {{2, 4, 5, 4, 6}, {4, 2, 2, 3, 2}, geo({1, 2, 2}, {1, 0, 1}, {1, 0, 1}, {2, 1, 1}, 2), true});
  check_conv<3>({{1, 3, 3, 3, 3},
                 {2, 3, 2, 2, 2},
                 geo({1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}),
                 false,
                 DTypeKind::F64,
                 2});
}

TEST_F(Module_Conv3d, HalfTypesAndStridedInput) {
  for (const auto& dt : {DType(DTypeKind::F16), DType(DTypeKind::BF16)}) {
    SCOPED_TRACE(std::string(dt.name()));
    check_conv<3>({{1, 2, 3, 4, 3},
                   {2, 1, 2, 2, 2},
                   geo({1, 1, 2}, {1, 0, 1}, {1, 0, 1}, {1, 2, 1}, 2),
                   true,
                   dt,
                   3});
  }
  Case c{{1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}, geo({1, 1, 1}, {1, 1, 0}, {1, 1, 0}, {1, 1, 1}), true};
  c.strided_x = true;
  check_conv<3>(c);
}

class Module_Conv3dXBackward : public ConvCaseTest {};

TEST_F(Module_Conv3dXBackward, MatchesReference) {
  check_conv_backward<3>(
      {{2, 4, 5, 4, 6}, {4, 2, 2, 3, 2}, geo({1, 2, 2}, {1, 0, 1}, {1, 0, 1}, {2, 1, 1}, 2)});
  check_conv_backward<3>({{1, 2, 5, 3, 4},
                          {2, 2, 2, 2, 2},
                          geo({2, 1, 3}, {0, 1, 0}, {0, 1, 0}, {1, 1, 1}),
                          false,
                          DTypeKind::F16,
                          2});
}

class Module_Conv3dWeightBackward : public ConvCaseTest {};

TEST_F(Module_Conv3dWeightBackward, MatchesReference) {
  check_conv_backward<3>({{1, 3, 4, 4, 4},
                          {3, 1, 2, 2, 2},
                          geo({2, 1, 1}, {1, 1, 0}, {1, 1, 0}, {1, 2, 1}, 3),
                          false,
                          DTypeKind::F32,
                          31});
  check_conv_backward<3>({{2, 2, 3, 3, 3},
                          {2, 2, 3, 3, 3},
                          geo({1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}),
                          false,
                          DTypeKind::F64,
                          32});
}

class Module_Conv3dBiasBackward : public ConvCaseTest {};

TEST_F(Module_Conv3dBiasBackward, SumsOverBatchAndSpace) {
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_bias_backward<OpKind::Module_Conv3dBiasBackward, Conv3dBiasBackwardOpIr>(
        {2, 3, 3, 3, 3}, {2, 4, 2, 3, 2}, dt);
  }
}

// ================================================================================================
// ConvTranspose (weight [C_in, C_out/groups, k...])

class Module_ConvTranspose1d : public ConvCaseTest {};

TEST_F(Module_ConvTranspose1d, HandComputed) {
  // x = [1, 2], w = [1, 10, 100], stride 2: full output [1, 10, 100 + 2, 20, 200].
  const auto x = input({1, 1, 2}, {1, 2});
  const auto w = input({1, 1, 3}, {1, 10, 100});
  const auto y = output({1, 1, 5});
  run(make_op<OpKind::Module_ConvTranspose1d>(
      {x, w, std::nullopt, transpose_opts<ConvTranspose1dOptionsIr, 1>(geo({2}, {0}, {0}, {1})),
       y}));
  EXPECT_EQ(get(y), (Values{1, 10, 102, 20, 200}));
  // padding 1 crops one at each end, padding_out 1 gives one back at the end; bias 0.5.
  const auto b = input({1}, {0.5});
  const auto y2 = output({1, 1, 4});
  run(make_op<OpKind::Module_ConvTranspose1d>(
      {x, w, b, transpose_opts<ConvTranspose1dOptionsIr, 1>(geo({2}, {1}, {1}, {1}, 1, {1})), y2}));
  EXPECT_EQ(get(y2), (Values{10.5, 102.5, 20.5, 200.5}));
}

TEST_F(Module_ConvTranspose1d, PaddingOutBeyondStride) {
  // Burn allows padding_out >= stride (ATen does not): the extra positions get no products.
  // stride 1: full output [1, 12, 120, 200]; padding_out 2 -> [1, 12, 120, 200, 0, 0] + bias;
  // padding 1, padding_out 3 -> [12, 120, 200, 0, 0].
  const auto x = input({1, 1, 2}, {1, 2});
  const auto w = input({1, 1, 3}, {1, 10, 100});
  const auto b = input({1}, {-1});
  const auto y = output({1, 1, 6}), y2 = output({1, 1, 5});
  run(make_op<OpKind::Module_ConvTranspose1d>(
      {x, w, b, transpose_opts<ConvTranspose1dOptionsIr, 1>(geo({1}, {0}, {0}, {1}, 1, {2})), y}));
  run(make_op<OpKind::Module_ConvTranspose1d>(
      {x, w, std::nullopt,
       transpose_opts<ConvTranspose1dOptionsIr, 1>(geo({1}, {1}, {1}, {1}, 1, {3})), y2}));
  EXPECT_EQ(get(y), (Values{0, 11, 119, 199, -1, -1}));
  EXPECT_EQ(get(y2), (Values{12, 120, 200, 0, 0}));
  check_conv_transpose<1>({{2, 4, 5}, {4, 3, 3}, geo({2}, {2}, {2}, {2}, 2, {3}), true});
}

TEST_F(Module_ConvTranspose1d, PaddingOutEqualToStride) {
  // stride 2, padding_out 2: x = [1, 2], w = [1, 10, 100] -> [1, 10, 102, 20, 200, 0, 0].
  const auto x = input({1, 1, 2}, {1, 2});
  const auto w = input({1, 1, 3}, {1, 10, 100});
  const auto y = output({1, 1, 7});
  run(make_op<OpKind::Module_ConvTranspose1d>(
      {x, w, std::nullopt,
       transpose_opts<ConvTranspose1dOptionsIr, 1>(geo({2}, {0}, {0}, {1}, 1, {2})), y}));
  EXPECT_EQ(get(y), (Values{1, 10, 102, 20, 200, 0, 0}));
  // padding_out = stride < dilation.
  check_conv_transpose<1>({{1, 2, 3}, {2, 2, 2}, geo({2}, {1}, {1}, {3}, 1, {2}), true});
}

TEST_F(Module_ConvTranspose1d, GroupsDilationStridePaddingOut) {
  check_conv_transpose<1>({{2, 4, 5}, {4, 3, 3}, geo({3}, {1}, {1}, {2}, 2, {2}), true});
  check_conv_transpose<1>(
      {{1, 3, 4}, {3, 2, 2}, geo({1}, {0}, {0}, {1}), false, DTypeKind::F32, 2});
}

TEST_F(Module_ConvTranspose1d, EveryFloatDTypeAndStridedInput) {
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_conv_transpose<1>({{2, 2, 4}, {2, 2, 3}, geo({2}, {1}, {1}, {1}, 2, {1}), true, dt, 3});
  }
  Case c{{2, 3, 4}, {3, 2, 2}, geo({2}, {0}, {0}, {1}, 1, {1}), true};
  c.strided_x = true;
  check_conv_transpose<1>(c);
}

class Module_ConvTranspose2d : public ConvCaseTest {};

TEST_F(Module_ConvTranspose2d, HandComputed) {
  // x = [[1, 2]], w 2x2 = [[1, 2], [3, 4]], stride (1, 2): rows y0 = [1, 2, 2, 4], y1 = [3, 4, 6,
  // 8].
  const auto x = input({1, 1, 1, 2}, {1, 2});
  const auto w = input({1, 1, 2, 2}, {1, 2, 3, 4});
  const auto y = output({1, 1, 2, 4});
  run(make_op<OpKind::Module_ConvTranspose2d>(
      {x, w, std::nullopt,
       transpose_opts<ConvTranspose2dOptionsIr, 2>(geo({1, 2}, {0, 0}, {0, 0}, {1, 1})), y}));
  EXPECT_EQ(get(y), (Values{1, 2, 2, 4, 3, 4, 6, 8}));
}

TEST_F(Module_ConvTranspose2d, GroupsDilationStridePaddingOut) {
  check_conv_transpose<2>(
      {{2, 4, 3, 4}, {4, 1, 3, 2}, geo({2, 3}, {1, 0}, {1, 0}, {1, 2}, 4, {1, 2}), true});
  // padding_out >= stride in one dim.
  check_conv_transpose<2>({{1, 2, 3, 3},
                           {2, 3, 2, 2},
                           geo({1, 2}, {1, 1}, {1, 1}, {2, 1}, 1, {2, 3}),
                           true,
                           DTypeKind::F32,
                           2});
}

TEST_F(Module_ConvTranspose2d, EveryFloatDTypeAndStridedInput) {
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_conv_transpose<2>(
        {{1, 2, 3, 3}, {2, 2, 2, 3}, geo({2, 1}, {0, 1}, {0, 1}, {1, 1}, 1, {1, 0}), true, dt, 3});
  }
  Case c{{2, 2, 3, 2}, {2, 2, 2, 2}, geo({2, 2}, {1, 0}, {1, 0}, {1, 1}, 2, {0, 1}), true};
  c.strided_x = true;
  check_conv_transpose<2>(c);
}

TEST_F(Module_ConvTranspose2d, EmptyBatch) {
  const auto x = input({0, 2, 2, 2}, Values{});
  const auto w = input({2, 3, 2, 2}, vals(24, 1));
  const auto b = input({3}, {1, 2, 3});
  const auto y = output({0, 3, 5, 5}), y2 = output({0, 3, 6, 5});
  run(make_op<OpKind::Module_ConvTranspose2d>(
      {x, w, b,
       transpose_opts<ConvTranspose2dOptionsIr, 2>(geo({2, 2}, {0, 0}, {0, 0}, {1, 1}, 1, {1, 1})),
       y}));
  run(make_op<OpKind::Module_ConvTranspose2d>(
      {x, w, b,
       transpose_opts<ConvTranspose2dOptionsIr, 2>(geo({2, 2}, {0, 0}, {0, 0}, {1, 1}, 1, {2, 1})),
       y2}));
  EXPECT_TRUE(get(y).empty());
  EXPECT_TRUE(get(y2).empty());
}

class Module_ConvTranspose3d : public ConvCaseTest {};

TEST_F(Module_ConvTranspose3d, GroupsDilationStridePaddingOut) {
  check_conv_transpose<3>({{2, 4, 2, 3, 2},
                           {4, 1, 2, 2, 3},
                           geo({2, 1, 2}, {1, 0, 1}, {1, 0, 1}, {1, 2, 1}, 2, {1, 0, 1}),
                           true});
  check_conv_transpose<3>({{1, 2, 2, 2, 2},
                           {2, 2, 2, 2, 2},
                           geo({1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1, {1, 0, 2}),
                           true,
                           DTypeKind::F64,
                           2});
}

TEST_F(Module_ConvTranspose3d, HalfTypesAndStridedInput) {
  for (const auto& dt : {DType(DTypeKind::F16), DType(DTypeKind::BF16)}) {
    SCOPED_TRACE(std::string(dt.name()));
    check_conv_transpose<3>({{1, 2, 2, 2, 3},
                             {2, 2, 2, 2, 2},
                             geo({2, 1, 1}, {0, 1, 0}, {0, 1, 0}, {1, 1, 1}, 1, {1, 0, 0}),
                             true,
                             dt,
                             3});
  }
  Case c{{1, 2, 2, 3, 2},
         {2, 1, 2, 2, 2},
         geo({1, 2, 1}, {0, 0, 1}, {0, 0, 1}, {1, 1, 1}, 2, {0, 1, 0}),
         true};
  c.strided_x = true;
  check_conv_transpose<3>(c);
}

class Module_ConvTranspose1dWeightBackward : public ConvCaseTest {};

TEST_F(Module_ConvTranspose1dWeightBackward, HandComputed) {
  // x = [1, 2], stride 2, kernel 3: y[2i + k] += x[i]·w[k], so gw[k] = Σ_i x[i]·gy[2i + k].
  // gy = [1, 2, 3, 4, 5]: gw = [1·1 + 2·3, 1·2 + 2·4, 1·3 + 2·5] = [7, 10, 13].
  const auto x = input({1, 1, 2}, {1, 2});
  const auto w = input({1, 1, 3}, {0, 0, 0});
  const auto gy = input({1, 1, 5}, {1, 2, 3, 4, 5});
  const auto gw = output({1, 1, 3});
  run(make_op<OpKind::Module_ConvTranspose1dWeightBackward>(
      {x, w, gy, transpose_opts<ConvTranspose1dOptionsIr, 1>(geo({2}, {0}, {0}, {1})), gw}));
  EXPECT_EQ(get(gw), (Values{7, 10, 13}));
}

TEST_F(Module_ConvTranspose1dWeightBackward, MatchesReference) {
  check_conv_transpose_weight_backward<1>({{2, 4, 5}, {4, 3, 3}, geo({3}, {1}, {1}, {2}, 2, {2})});
  check_conv_transpose_weight_backward<1>(
      {{2, 4, 5}, {4, 3, 3}, geo({2}, {2}, {2}, {2}, 2, {3}), false, DTypeKind::F32, 2});
  check_conv_transpose_weight_backward<1>(
      {{1, 2, 4}, {2, 2, 2}, geo({1}, {1}, {1}, {1}, 1, {2}), false, DTypeKind::F16, 3});
  // padding_out = stride, with and without dilation above it.
  check_conv_transpose_weight_backward<1>(
      {{1, 2, 3}, {2, 2, 2}, geo({2}, {1}, {1}, {1}, 1, {2}), false, DTypeKind::F32, 4});
  check_conv_transpose_weight_backward<1>(
      {{1, 2, 3}, {2, 2, 2}, geo({2}, {1}, {1}, {3}, 1, {2}), false, DTypeKind::F32, 5});
}

class Module_ConvTranspose1dBiasBackward : public ConvCaseTest {};

TEST_F(Module_ConvTranspose1dBiasBackward, SumsOverBatchAndLength) {
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_bias_backward<OpKind::Module_ConvTranspose1dBiasBackward,
                        ConvTranspose1dBiasBackwardOpIr>({2, 3, 4}, {2, 5, 9}, dt);
  }
}

class Module_ConvTranspose2dWeightBackward : public ConvCaseTest {};

TEST_F(Module_ConvTranspose2dWeightBackward, MatchesReference) {
  check_conv_transpose_weight_backward<2>(
      {{2, 4, 3, 4}, {4, 1, 3, 2}, geo({2, 3}, {1, 0}, {1, 0}, {1, 2}, 4, {1, 2})});
  check_conv_transpose_weight_backward<2>({{1, 2, 3, 3},
                                           {2, 3, 2, 2},
                                           geo({1, 2}, {1, 1}, {1, 1}, {2, 1}, 1, {2, 3}),
                                           false,
                                           DTypeKind::F64,
                                           2});
  Case c{{1, 2, 3, 2}, {2, 2, 2, 2}, geo({2, 2}, {1, 0}, {1, 0}, {1, 1}, 2, {0, 1})};
  c.strided_x = true;
  check_conv_transpose_weight_backward<2>(c);
}

class Module_ConvTranspose2dBiasBackward : public ConvCaseTest {};

TEST_F(Module_ConvTranspose2dBiasBackward, SumsOverBatchAndSpace) {
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_bias_backward<OpKind::Module_ConvTranspose2dBiasBackward,
                        ConvTranspose2dBiasBackwardOpIr>({2, 3, 2, 2}, {2, 4, 5, 3}, dt);
  }
}

class Module_ConvTranspose3dWeightBackward : public ConvCaseTest {};

TEST_F(Module_ConvTranspose3dWeightBackward, MatchesReference) {
  check_conv_transpose_weight_backward<3>(
      {{2, 4, 2, 3, 2},
       {4, 1, 2, 2, 3},
       geo({2, 1, 2}, {1, 0, 1}, {1, 0, 1}, {1, 2, 1}, 2, {1, 0, 1})});
  check_conv_transpose_weight_backward<3>(
      {{1, 2, 2, 2, 2},
       {2, 2, 2, 2, 2},
       geo({1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1, {1, 0, 2}),
       false,
       DTypeKind::BF16,
       2});
}

class Module_ConvTranspose3dBiasBackward : public ConvCaseTest {};

TEST_F(Module_ConvTranspose3dBiasBackward, SumsOverBatchAndSpace) {
  for (const auto& dt : kFloatTypes) {
    SCOPED_TRACE(std::string(dt.name()));
    check_bias_backward<OpKind::Module_ConvTranspose3dBiasBackward,
                        ConvTranspose3dBiasBackwardOpIr>({1, 2, 2, 2, 2}, {2, 3, 3, 2, 4}, dt);
  }
}

// ================================================================================================
// DeformableConv2d

// Offsets with fractional parts in [0.1, 0.9] (away from bilinear kinks, for finite differences),
// spread over [-3, 3] so that some samples fall outside the image.
Values offsets(std::size_t n, std::uint64_t seed) {
  Values v = vals(n, seed);
  Values f = vals(n, seed + 100);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = std::floor(v[i] * 1.5) + 0.5 + f[i] * 0.2;  // f in [-2, 2] -> frac in [0.1, 0.9]
  return v;
}

DeformData deform_case(Dims xs, Dims ws, DeformGeo g, bool mask, bool bias, std::uint64_t seed) {
  DeformData d;
  d.xs = xs;
  d.ws = ws;
  d.g = g;
  const Dims ys = conv_out_shape(xs, ws,
                                 geo({g.stride[0], g.stride[1]}, {g.padding[0], g.padding[1]},
                                     {g.padding[0], g.padding[1]}, {g.dilation[0], g.dilation[1]}));
  d.os = {xs[0], static_cast<std::uint64_t>(2 * g.offset_groups) * ws[2] * ws[3], ys[2], ys[3]};
  if (mask)
    d.ms = {xs[0], static_cast<std::uint64_t>(g.offset_groups) * ws[2] * ws[3], ys[2], ys[3]};
  d.x = vals(count(xs), seed);
  d.w = vals(count(ws), seed + 1);
  d.offset = offsets(count(d.os), seed + 2);
  if (mask) {
    d.mask = vals(count(d.ms), seed + 3);
    for (auto& m : d.mask) m = 0.5 + m / 4;  // in [0, 1]
  }
  if (bias) d.bias = vals(ws[0], seed + 4);
  return d;
}

DeformableConv2dOptionsIr deform_opts(const DeformGeo& g) {
  return {{static_cast<std::uint64_t>(g.stride[0]), static_cast<std::uint64_t>(g.stride[1])},
          {static_cast<std::uint64_t>(g.padding[0]), static_cast<std::uint64_t>(g.padding[1])},
          {static_cast<std::uint64_t>(g.dilation[0]), static_cast<std::uint64_t>(g.dilation[1])},
          static_cast<std::uint64_t>(g.weight_groups),
          static_cast<std::uint64_t>(g.offset_groups)};
}

class DeformTest : public ConvTest {
 protected:
  struct Inputs {
    TensorIr x, offset, weight;
    std::optional<TensorIr> mask, bias;
  };
  Inputs inputs(const DeformData& d, DType dt, bool strided_offset = false) {
    Inputs in{input(d.xs, d.x, dt),
              strided_offset ? strided_input(d.os, d.offset, dt) : input(d.os, d.offset, dt),
              input(d.ws, d.w, dt), std::nullopt, std::nullopt};
    if (!d.ms.empty()) in.mask = input(d.ms, d.mask, dt);
    in.bias = maybe_input({d.ws[0]}, d.bias, dt);
    return in;
  }
  Values forward(const DeformData& d, DType dt = DTypeKind::F32, bool strided_offset = false) {
    const auto in = inputs(d, dt, strided_offset);
    const auto y = output(d.out_shape(), dt);
    run(make_op<OpKind::Module_DeformableConv2d>(
        {in.x, in.offset, in.weight, in.mask, in.bias, deform_opts(d.g), y}));
    return get(y);
  }
};

class Module_DeformableConv2d : public DeformTest {};

TEST_F(Module_DeformableConv2d, HandComputedBilinearSamples) {
  // 1x1 kernel over x = [[1, 2, 3], [4, 5, 6]] (2x3), one output per pixel.
  // Offsets (dy, dx) = (0.5, 0.25) everywhere:
  //   (0, 0) samples (0.5, 0.25): 0.5·0.75·1 + 0.5·0.25·2 + 0.5·0.75·4 + 0.5·0.25·5 = 2.75
  //   (0, 2) samples (0.5, 2.25): corners (0, 3), (1, 3) are outside: 0.5·0.75·3 + 0.5·0.75·6
  //   = 3.375 (1, 1) samples (1.5, 1.25): only row 1 is inside: 0.5·0.75·5 + 0.5·0.25·6 = 2.625
  DeformData d;
  d.xs = {1, 1, 2, 3};
  d.ws = {1, 1, 1, 1};
  d.os = {1, 2, 2, 3};
  d.x = {1, 2, 3, 4, 5, 6};
  d.w = {1};
  d.offset = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25};
  const Values y = forward(d);
  ASSERT_EQ(y.size(), 6u);
  EXPECT_DOUBLE_EQ(y[0], 2.75);
  EXPECT_DOUBLE_EQ(y[2], 3.375);
  EXPECT_DOUBLE_EQ(y[4], 2.625);
  expect_near(y, ref_deform_forward(d));
  // Integer offsets shift: dx = 1 reads the right neighbour; x = W is outside (0).
  // Row 1 shifted by dy = -2 samples y = -1 exactly, which is outside too.
  d.offset = {0, 0, 0, -2, -2, -2, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(forward(d), (Values{2, 3, 0, 0, 0, 0}));
}

TEST_F(Module_DeformableConv2d, ZeroOffsetsAreAConvolution) {
  // No mask, zero offsets: a plain grouped convolution with symmetric padding.
  const Dims xs = {2, 4, 5, 6}, ws = {6, 2, 3, 2};
  const Geo cg = geo({2, 1}, {1, 0}, {1, 0}, {1, 2}, 2);
  DeformData d = deform_case(xs, ws, {{2, 1}, {1, 0}, {1, 2}, 2, 1}, false, true, 5);
  std::fill(d.offset.begin(), d.offset.end(), 0.0);
  const Dims ys = conv_out_shape(xs, ws, cg);
  expect_near(forward(d), ref_forward(conv_terms, xs, d.x, ws, d.w, ys, d.bias, cg), 1e-5);
}

TEST_F(Module_DeformableConv2d, MatchesReference) {
  // Offset groups, weight groups, mask, bias, stride, padding, dilation.
  const auto d1 =
      deform_case({2, 4, 5, 5}, {6, 2, 3, 3}, {{1, 2}, {1, 2}, {2, 1}, 2, 2}, true, true, 1);
  expect_near(forward(d1), ref_deform_forward(d1), 1e-5);
  const auto d2 =
      deform_case({1, 6, 4, 6}, {4, 6, 2, 3}, {{2, 1}, {0, 1}, {1, 1}, 1, 3}, false, false, 2);
  expect_near(forward(d2), ref_deform_forward(d2), 1e-5);
  const auto d3 =
      deform_case({1, 4, 4, 4}, {4, 1, 2, 2}, {{1, 1}, {1, 1}, {1, 1}, 4, 2}, true, false, 3);
  expect_near(forward(d3), ref_deform_forward(d3), 1e-5);
}

TEST_F(Module_DeformableConv2d, FloatDTypesAndStridedOffset) {
  const auto d =
      deform_case({1, 2, 4, 4}, {2, 2, 2, 2}, {{1, 1}, {1, 0}, {1, 1}, 1, 2}, true, true, 4);
  const Values expected = ref_deform_forward(d);
  expect_near(forward(d, DTypeKind::F64), expected, 1e-12);
  expect_near(forward(d, DTypeKind::Flex32), expected, 1e-5);
  // Inputs are rounded to the half type first: compare with a loose tolerance.
  expect_near(forward(d, DTypeKind::F16), expected, 2e-2);
  expect_near(forward(d, DTypeKind::BF16), expected, 8e-2);
  expect_near(forward(d, DTypeKind::F32, /*strided_offset=*/true), expected, 1e-5);
}

TEST_F(Module_DeformableConv2d, EmptyBatch) {
  auto d = deform_case({1, 2, 3, 3}, {2, 2, 2, 2}, {{1, 1}, {0, 0}, {1, 1}, 1, 1}, true, true, 1);
  d.xs[0] = d.os[0] = d.ms[0] = 0;
  d.x.clear();
  d.offset.clear();
  d.mask.clear();
  EXPECT_TRUE(forward(d).empty());
}

TEST_F(Module_DeformableConv2d, NaNOffsetGivesNaN) {
  DeformData d;
  d.xs = {1, 1, 2, 2};
  d.ws = {1, 1, 1, 1};
  d.os = {1, 2, 2, 2};
  d.x = {1, 2, 3, 4};
  d.w = {1};
  d.offset = {std::nan(""), 0, 0, 0, 0, 0, 0, 0};
  const Values y = forward(d);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 2);
  EXPECT_EQ(y[3], 4);
}

class Module_DeformableConv2dBackward : public DeformTest {
 protected:
  struct Outs {
    Values x, offset, w, mask, bias;
  };
  Outs backward(const DeformData& d, const Values& gy, DType dt = DTypeKind::F32) {
    const auto in = inputs(d, dt);
    const auto g = input(d.out_shape(), gy, dt);
    const auto gx = output(d.xs, dt), go = output(d.os, dt), gw = output(d.ws, dt);
    std::optional<TensorIr> gm, gb;
    if (in.mask) gm = output(d.ms, dt);
    if (in.bias) gb = output({d.ws[0]}, dt);
    run(make_op<OpKind::Module_DeformableConv2dBackward>(
        {in.x, in.offset, in.weight, in.mask, in.bias, g, deform_opts(d.g), gx, go, gw, gm, gb}));
    Outs o{get(gx), get(go), get(gw), {}, {}};
    if (gm) o.mask = get(*gm);
    if (gb) o.bias = get(*gb);
    return o;
  }
  void check(const DeformData& d, DType dt = DTypeKind::F32, double tol = 1e-5) {
    const Values gy = vals(count(d.out_shape()), 77);
    const DeformGrads e = ref_deform_backward(d, gy);
    const Outs o = backward(d, gy, dt);
    {
      SCOPED_TRACE("x_grad");
      expect_near(o.x, e.x, tol);
    }
    {
      SCOPED_TRACE("offset_grad");
      expect_near(o.offset, e.offset, tol);
    }
    {
      SCOPED_TRACE("weight_grad");
      expect_near(o.w, e.w, tol);
    }
    {
      SCOPED_TRACE("mask_grad");
      expect_near(o.mask, e.mask, tol);
    }
    {
      SCOPED_TRACE("bias_grad");
      expect_near(o.bias, e.bias, tol);
    }
  }
};

TEST_F(Module_DeformableConv2dBackward, HandComputed) {
  // x = [[1, 2], [3, 4]], 1x1 kernel w = 2, output_grad = 1 (so 2 per sample), offsets (dy, dx):
  //   out (0, 0): (-1, 0)    -> sample (-1, 0) is outside (y <= -1): no gradient at all
  //   out (0, 1): (-0.5, 0)  -> sample (-0.5, 1): only x01 (weight 0.5) is inside; value 1
  //   out (1, 0): (0, 0.5)   -> sample (1, 0.5): x10, x11 with 0.5 each; value 3.5
  //   out (1, 1): (0, 0)     -> sample (1, 1) = x11; value 4
  // x_grad: x01 += 0.5·2, x10 += 0.5·2, x11 += 0.5·2 + 2.
  // offset_grad (d/dy, d/dx of the bilinear form, corners outside count 0, times 2):
  //   (0, 1): dy = 1·(x01 − 0) = 2 -> 4, dx = 0.5·(0 − 0) + 0.5·(0 − x01) = −1 -> −2
  //   (1, 0): dy = 0.5·(0 − x10) + 0.5·(0 − x11) = −3.5 -> −7, dx = x11 − x10 = 1 -> 2
  //   (1, 1): dy = 0 − x11 = −4 -> −8, dx = 0 − x11 -> −8 (one-sided at integer points)
  // weight_grad = 0 + 1 + 3.5 + 4.
  DeformData d;
  d.xs = {1, 1, 2, 2};
  d.ws = {1, 1, 1, 1};
  d.os = {1, 2, 2, 2};
  d.x = {1, 2, 3, 4};
  d.w = {2};
  d.offset = {-1, -0.5, 0, 0, 0, 0, 0.5, 0};
  EXPECT_EQ(forward(d), (Values{0, 2, 7, 8}));
  const Outs o = backward(d, {1, 1, 1, 1});
  EXPECT_EQ(o.x, (Values{0, 1, 1, 3}));
  EXPECT_EQ(o.offset, (Values{0, 4, -7, -8, 0, -2, 2, -8}));
  EXPECT_EQ(o.w, (Values{8.5}));
  EXPECT_TRUE(o.mask.empty());
  EXPECT_TRUE(o.bias.empty());
  const DeformGrads e = ref_deform_backward(d, {1, 1, 1, 1});
  EXPECT_EQ(e.offset, o.offset);
  EXPECT_EQ(e.x, o.x);
}

TEST_F(Module_DeformableConv2dBackward, MatchesReference) {
  check(deform_case({2, 4, 5, 5}, {6, 2, 3, 3}, {{1, 2}, {1, 2}, {2, 1}, 2, 2}, true, true, 1));
  check(deform_case({1, 6, 4, 6}, {4, 6, 2, 3}, {{2, 1}, {0, 1}, {1, 1}, 1, 3}, false, false, 2));
  check(deform_case({1, 4, 4, 4}, {4, 1, 2, 2}, {{1, 1}, {1, 1}, {1, 1}, 4, 2}, true, false, 3));
}

TEST_F(Module_DeformableConv2dBackward, AgreesWithFiniteDifferences) {
  // Checks the reference (and so the lowering) against central differences of the forward.
  auto d = deform_case({1, 2, 4, 4}, {2, 2, 2, 2}, {{1, 1}, {1, 0}, {1, 1}, 1, 2}, true, true, 6);
  const Values gy = vals(count(d.out_shape()), 78);
  const Outs o = backward(d, gy, DTypeKind::F64);
  auto loss = [&](const DeformData& dd) {
    const Values y = ref_deform_forward(dd);
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * gy[i];
    return s;
  };
  const double eps = 1e-6;
  auto fd = [&](Values DeformData::*field, std::size_t i) {
    DeformData p = d, m = d;
    (p.*field)[i] += eps;
    (m.*field)[i] -= eps;
    return (loss(p) - loss(m)) / (2 * eps);
  };
  for (std::size_t i = 0; i < d.offset.size(); ++i)
    EXPECT_NEAR(o.offset[i], fd(&DeformData::offset, i), 1e-6) << "offset " << i;
  for (std::size_t i = 0; i < d.mask.size(); ++i)
    EXPECT_NEAR(o.mask[i], fd(&DeformData::mask, i), 1e-6) << "mask " << i;
  for (std::size_t i = 0; i < d.x.size(); ++i)
    EXPECT_NEAR(o.x[i], fd(&DeformData::x, i), 1e-6) << "x " << i;
  for (std::size_t i = 0; i < d.w.size(); ++i)
    EXPECT_NEAR(o.w[i], fd(&DeformData::w, i), 1e-6) << "w " << i;
}

TEST_F(Module_DeformableConv2dBackward, HalfTypes) {
  const auto d =
      deform_case({1, 2, 4, 4}, {2, 1, 2, 2}, {{1, 1}, {1, 1}, {1, 1}, 2, 1}, true, true, 8);
  const Values gy = vals(count(d.out_shape()), 79);
  const DeformGrads e = ref_deform_backward(d, gy);
  for (const auto& dt : {DType(DTypeKind::F16), DType(DTypeKind::BF16)}) {
    SCOPED_TRACE(std::string(dt.name()));
    const double tol = dt.kind == DTypeKind::F16 ? 3e-2 : 1.5e-1;
    const Outs o = backward(d, gy, dt);
    expect_near(o.x, e.x, tol);
    expect_near(o.w, e.w, tol);
    expect_near(o.bias, e.bias, tol);
    expect_near(o.mask, e.mask, tol);
    expect_near(o.offset, e.offset, tol);
  }
}

TEST_F(Module_DeformableConv2dBackward, EmptyBatch) {
  auto d = deform_case({1, 2, 3, 3}, {2, 2, 2, 2}, {{1, 1}, {0, 0}, {1, 1}, 1, 1}, true, true, 1);
  d.xs[0] = d.os[0] = d.ms[0] = 0;
  d.x.clear();
  d.offset.clear();
  d.mask.clear();
  const Outs o = backward(d, {});
  EXPECT_TRUE(o.x.empty());
  EXPECT_TRUE(o.offset.empty());
  EXPECT_TRUE(o.mask.empty());
  EXPECT_EQ(o.w, Values(16, 0.0));
  EXPECT_EQ(o.bias, Values(2, 0.0));
}

TEST_F(Module_DeformableConv2dBackward, MaskGradDeclaredWithoutMaskIsAnError) {
  const auto d = deform_case({1, 1, 3, 3}, {1, 1, 1, 1}, {}, false, false, 9);
  const auto in = inputs(d, DTypeKind::F32);
  const auto g = input(d.out_shape(), vals(9, 1));
  EXPECT_THAT(run_error(make_op<OpKind::Module_DeformableConv2dBackward>(
                  {in.x, in.offset, in.weight, std::nullopt, std::nullopt, g, deform_opts(d.g),
                   output(d.xs), output(d.os), output(d.ws), output(d.os), std::nullopt})),
              HasSubstr("mask_grad"));
}

}  // namespace
}  // namespace tb::test
