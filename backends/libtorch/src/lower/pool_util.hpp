// Avg and max pooling behind the pool families (pool_family.hpp, pool_ops.cpp; 1-d pools run as
// 2-d) and the adaptive pools of lower_pool.cpp, with the semantics of Burn 0.23's reference
// backend, burn-flex 0.23.0-pre.1 src/ops/pool.rs, which runs every pool as a 3-d one. Private to
// this backend.
//
// Tensors are [N, C, spatial...] with 2 or 3 spatial dims. Conventions kept from Burn, where
// PyTorch differs:
// - Any padding is accepted (ATen refuses padding > kernel / 2): such cases are computed by
//   padding explicitly.
// - Avg pools take a dilation (ATen's have none): dilated window sums are composed from strided
//   views, one axis at a time (the window is a box, so its sum is separable).
// - Max-pool indices are flat indices into each input plane ((d * H + h) * W + w); a window with
//   no input element yields -inf and index -1, a window of -inf values the index of its first
//   input element, a window with NaNs NaN and the index of its last NaN (pool.rs:312).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"
#include "lower/pool_family.hpp"

namespace tb::backend::libtorch::pool {

inline std::int64_t extent(const Spec& p, std::size_t i) {
  return p.dilation[i] * (p.kernel[i] - 1) + 1;
}

// burn-flex pool_output_size (pool.rs:148); -1 where it panics.
inline std::int64_t out_size(const Spec& p, std::size_t i, std::int64_t in) {
  const auto padded = in + 2 * p.padding[i];
  const auto ext = extent(p, i);
  const auto s = p.stride[i];
  std::int64_t out;
  if (padded >= ext) {
    out = (padded - ext + (p.ceil_mode ? s - 1 : 0)) / s + 1;
  } else if (p.ceil_mode && ext - padded < s) {
    out = 1;
  } else {
    return -1;
  }
  return p.ceil_mode && (out - 1) * s >= in + p.padding[i] ? out - 1 : out;
}

inline Status check(OpContext& ctx, const Spec& p) {
  // Bounds that keep the window arithmetic in int64 (the u64 fields arrive cast).
  constexpr std::int64_t kMax = std::int64_t{1} << 31;
  for (std::size_t i = 0; i < p.rank(); ++i) {
    if (p.kernel[i] < 1 || p.stride[i] < 1 || p.dilation[i] < 1) {
      return ctx.invalid("pool kernel size, stride and dilation must be > 0");
    }
    if (p.kernel[i] > kMax || p.stride[i] > kMax || p.dilation[i] > kMax || p.padding[i] < 0 ||
        p.padding[i] > kMax) {
      return ctx.invalid("pool kernel size, stride, padding and dilation must be below 2^31");
    }
  }
  return ok();
}

// ATen pools refuse padding > kernel / 2; below that their windows, output sizes (= Burn's rule)
// and divisors are Burn's.
inline bool aten_ok(const Spec& p) {
  for (std::size_t i = 0; i < p.rank(); ++i)
    if (2 * p.padding[i] > p.kernel[i]) return false;
  return true;
}

inline Sizes shape_of(std::int64_t n, std::int64_t c, const Sizes& spatial) {
  Sizes s{n, c};
  s.insert(s.end(), spatial.begin(), spatial.end());
  return s;
}
inline Sizes spatial_of(const at::Tensor& t) {
  return Sizes(t.sizes().begin() + 2, t.sizes().end());
}

// A length-out[i] vector as a tensor broadcasting along spatial axis i.
inline at::Tensor along(const at::Tensor& v, std::size_t i, std::size_t rank) {
  Sizes shape(rank, 1);
  shape[i] = v.numel();
  return v.view(shape);
}

// Explicit padding (constant_pad_nd's list, last dim first): left = padding, right = whatever
// makes a floor-mode pool without padding produce `out` windows (negative crops).
inline Sizes explicit_pad(const Spec& p, const Sizes& in, const Sizes& out) {
  Sizes pad;
  for (std::size_t i = p.rank(); i-- > 0;) {
    pad.push_back(p.padding[i]);
    pad.push_back((out[i] - 1) * p.stride[i] + extent(p, i) - in[i] - p.padding[i]);
  }
  return pad;
}
inline Sizes negated(Sizes v) {
  for (auto& x : v) x = -x;
  return v;
}

// Per output position along axis i, the input coordinate of the window's first tap inside the
// input, or -1 when every tap misses it (burn-flex valid_kernel_range, pool.rs:223).
inline Sizes first_taps(const Spec& p, std::size_t i, std::int64_t in, std::int64_t out) {
  Sizes v(static_cast<std::size_t>(out));
  for (std::int64_t o = 0; o < out; ++o) {
    const auto start = o * p.stride[i] - p.padding[i];
    const auto skip = start < 0 ? (-start + p.dilation[i] - 1) / p.dilation[i] : 0;
    const auto first = start + skip * p.dilation[i];
    v[static_cast<std::size_t>(o)] = skip < p.kernel[i] && first < in ? first : -1;
  }
  return v;
}

// Whether some window has no tap inside the input (padding > kernel / 2, or a dilation that
// steps over a short input).
inline bool has_empty_windows(const Spec& p, const Sizes& in, const Sizes& out) {
  for (std::size_t i = 0; i < p.rank(); ++i) {
    const auto f = first_taps(p, i, in[i], out[i]);
    if (std::find(f.begin(), f.end(), -1) != f.end()) return true;
  }
  return false;
}

// The flat index (into an input plane) of each window's first tap inside the input, -1 for a
// window without one: Burn's index of a window whose values are all -inf.
inline at::Tensor first_index(const Spec& p, const Sizes& in, const Sizes& out,
                              const at::Device& device) {
  const auto opts = at::TensorOptions().device(device);
  auto index = at::zeros({}, opts.dtype(at::kLong));
  auto missing = at::zeros({}, opts.dtype(at::kBool));
  std::int64_t step = 1;
  for (std::size_t i = p.rank(); i-- > 0;) {
    const auto f = along(long_tensor(first_taps(p, i, in[i], out[i]), device), i, p.rank());
    index = index + f * step;
    missing = missing | (f < 0);
    step *= in[i];
  }
  return at::where(missing, at::full({}, -1, index.options()), index);
}

inline std::pair<at::Tensor, at::Tensor> aten_max_pool(const at::Tensor& x, const Spec& p,
                                                       const Sizes& padding, bool ceil) {
  auto r = p.rank() == 2
               ? at::max_pool2d_with_indices(x, p.kernel, p.stride, padding, p.dilation, ceil)
               : at::max_pool3d_with_indices(x, p.kernel, p.stride, padding, p.dilation, ceil);
  return {std::get<0>(r), std::get<1>(r)};
}

// Burn's max_pool{2,3}d_with_indices (burn-flex max_pool3d_with_indices_impl, pool.rs:251).
inline std::pair<at::Tensor, at::Tensor> max_pool(const at::Tensor& x_in, const Spec& p,
                                                  const Sizes& out) {
  const auto x = cpu_wide(x_in);
  const auto in = spatial_of(x);
  const auto shape = shape_of(x.size(0), x.size(1), out);
  const auto long_opts = x.options().dtype(at::kLong);
  if (numel(shape) == 0) return {at::empty(shape, x.options()), at::empty(shape, long_opts)};
  if (numel(in) == 0) return {at::full(shape, -kInf, x.options()), at::full(shape, -1, long_opts)};
  if (aten_ok(p)) {
    auto [y, idx] = aten_max_pool(x, p, p.padding, p.ceil_mode);
    // ATen's values agree (-inf) on a window without input, but its index then points past the
    // window; Burn's is -1.
    if (has_empty_windows(p, in, out)) {
      idx = at::where(first_index(p, in, out, x.device()) >= 0, idx, at::full({}, -1, long_opts));
    }
    return {y, idx};
  }
  const auto xp = at::constant_pad_nd(x, explicit_pad(p, in, out), -kInf);
  auto [y, ip] = aten_max_pool(xp, p, Sizes(p.rank(), 0), false);
  // Padded flat index -> input coordinates, axis by axis from the last.
  auto rest = ip;
  auto index = at::zeros_like(ip);
  auto valid = at::ones_like(ip, ip.options().dtype(at::kBool));
  std::int64_t step = 1;
  for (std::size_t i = p.rank(); i-- > 0;) {
    const auto len = xp.size(static_cast<std::int64_t>(2 + i));
    const auto coord = at::remainder(rest, len) - p.padding[i];
    rest = at::div(rest, len, "floor");
    valid = valid & (coord >= 0) & (coord < in[i]);
    index = index + coord * step;
    step *= in[i];
  }
  // A padding element won: the window holds no input element (-1) or only -inf ones (Burn
  // reports the first of them).
  return {y, at::where(valid, index, first_index(p, in, out, x.device()))};
}

// Burn's max-pool backward: out_grad added at the recorded flat indices, index < 0 skipped
// (burn-flex max_pool3d_backward_impl, pool.rs:1228).
inline at::Tensor max_pool_backward(const at::Tensor& x, const at::Tensor& grad_in,
                                    const at::Tensor& indices) {
  const auto grad = widen(grad_in);
  const auto n = x.size(0), c = x.size(1);
  const auto plane = n * c == 0 ? 0 : x.numel() / (n * c);
  auto result = at::zeros({n, c, plane}, grad.options());
  if (result.numel() == 0 || grad.numel() == 0) return result.reshape(x.sizes());
  const auto per = grad.numel() / (n * c);
  auto idx = indices.to(at::kLong).reshape({n, c, per});
  const auto valid = idx >= 0;
  idx = at::where(valid, idx, at::zeros({}, idx.options()));
  const auto src = at::where(valid, grad.reshape({n, c, per}), at::zeros({}, grad.options()));
  return result.scatter_add(2, idx, src).reshape(x.sizes());
}

// Per output position along axis i, Burn's divisor factor: the taps inside the padded input
// (count_include_pad; padded_len_avgpool, pool.rs:662) or inside the input (valid_kernel_range,
// pool.rs:223). Burn divides by the product over the axes, at least 1 (pool.rs:776-780).
inline std::vector<double> avg_counts(const Spec& p, std::size_t i, std::int64_t in,
                                      std::int64_t out, bool count_include_pad) {
  const auto k = p.kernel[i], s = p.stride[i], pad = p.padding[i], d = p.dilation[i];
  // Taps j in [0, k) with o * s + j * d < limit (padded coordinates).
  const auto below = [&](std::int64_t o, std::int64_t limit) {
    return std::clamp<std::int64_t>((limit - o * s + d - 1) / d, 0, k);
  };
  std::vector<double> v(static_cast<std::size_t>(out));
  for (std::int64_t o = 0; o < out; ++o) {
    const auto count = count_include_pad
                           ? (o * s < in + 2 * pad ? below(o, in + 2 * pad) : 0)
                           : std::max<std::int64_t>((o * s < in + pad ? below(o, in + pad) : 0) -
                                                        (o * s < pad ? below(o, pad) : 0),
                                                    0);
    v[static_cast<std::size_t>(o)] = static_cast<double>(count);
  }
  return v;
}

inline at::Tensor avg_divisor(const Spec& p, const Sizes& in, const Sizes& out, bool cip,
                              const at::Tensor& like) {
  const auto opts = at::TensorOptions().dtype(at::kDouble);
  auto div = at::ones({}, opts);
  for (std::size_t i = 0; i < p.rank(); ++i)
    div = div * along(at::tensor(avg_counts(p, i, in[i], out[i], cip), opts), i, p.rank());
  return div.clamp_min(1).to(like.device(), like.scalar_type());
}

// Sums over the windows of xp, padded so that a floor-mode pool without padding yields exactly
// the pool's windows.
inline at::Tensor window_sums(const at::Tensor& xp, const Spec& p) {
  const Sizes zero(p.rank(), 0);
  if (p.undilated()) {
    return p.rank() == 2 ? at::avg_pool2d(xp, p.kernel, p.stride, zero, false, true, 1)
                         : at::avg_pool3d(xp, p.kernel, p.stride, zero, false, true, 1);
  }
  auto sums = xp;
  for (std::size_t i = 0; i < p.rank(); ++i) {
    const auto dim = static_cast<std::int64_t>(2 + i);
    const auto ext = extent(p, i);
    sums = sums.unfold(dim, ext, p.stride[i]).slice(-1, 0, ext, p.dilation[i]).sum(-1);
  }
  return sums;
}

// The adjoint of window_sums: g [N, C, out...] spread over the padded shape.
inline at::Tensor window_sums_adjoint(const at::Tensor& g, const Spec& p, const Sizes& padded) {
  const Sizes zero(p.rank(), 0);
  if (p.undilated()) {
    const auto like = at::empty(padded, g.options());
    return p.rank() == 2
               ? at::avg_pool2d_backward(g, like, p.kernel, p.stride, zero, false, true, 1)
               : at::avg_pool3d_backward(g, like, p.kernel, p.stride, zero, false, true, 1);
  }
  auto spread = g;
  for (std::size_t i = p.rank(); i-- > 0;) {
    const auto dim = static_cast<std::int64_t>(2 + i);
    auto sizes = spread.sizes().vec();
    sizes[2 + i] = padded[2 + i];
    auto acc = at::zeros(sizes, spread.options());
    // Tap j of the windows reads a stride-s slice starting at j * d.
    const auto span = (spread.size(dim) - 1) * p.stride[i] + 1;
    for (std::int64_t j = 0; j < p.kernel[i]; ++j) {
      const auto start = j * p.dilation[i];
      acc.slice(dim, start, start + span, p.stride[i]).add_(spread);
    }
    spread = acc;
  }
  return spread;
}

// Burn's avg_pool{2,3}d (burn-flex avg_pool3d_impl, pool.rs:680).
inline at::Tensor avg_pool(const at::Tensor& x_in, const Spec& p, bool cip, const Sizes& out) {
  const auto x = cpu_wide(x_in);
  const auto in = spatial_of(x);
  const auto shape = shape_of(x.size(0), x.size(1), out);
  if (numel(shape) == 0 || numel(in) == 0) return at::zeros(shape, x.options());
  if (p.undilated() && aten_ok(p)) {
    return p.rank() == 2
               ? at::avg_pool2d(x, p.kernel, p.stride, p.padding, p.ceil_mode, cip, c10::nullopt)
               : at::avg_pool3d(x, p.kernel, p.stride, p.padding, p.ceil_mode, cip, c10::nullopt);
  }
  const auto sums = window_sums(at::constant_pad_nd(x, explicit_pad(p, in, out), 0), p);
  return sums / avg_divisor(p, in, out, cip, sums);
}

// Burn's avg_pool{2,3}d_backward (burn-flex avg_pool3d_backward_impl, pool.rs:1446): the
// windows are those of grad's output sizes, whatever ceil_mode says.
inline at::Tensor avg_pool_backward(const at::Tensor& x, const at::Tensor& grad_in, const Spec& p,
                                    bool cip) {
  const auto grad = cpu_wide(grad_in);
  const auto in = spatial_of(x), out = spatial_of(grad);
  if (x.numel() == 0 || grad.numel() == 0) return at::zeros(x.sizes(), grad.options());
  bool aten_sizes = p.undilated() && aten_ok(p);
  for (std::size_t i = 0; i < p.rank(); ++i) aten_sizes &= out_size(p, i, in[i]) == out[i];
  if (aten_sizes) {
    const auto xs = same_type(x, grad);
    return p.rank() == 2 ? at::avg_pool2d_backward(grad, xs, p.kernel, p.stride, p.padding,
                                                   p.ceil_mode, cip, c10::nullopt)
                         : at::avg_pool3d_backward(grad, xs, p.kernel, p.stride, p.padding,
                                                   p.ceil_mode, cip, c10::nullopt);
  }
  // Adjoint of avg_pool's explicit-padding form.
  const auto pad = explicit_pad(p, in, out);
  Sizes padded = in;
  for (std::size_t i = 0; i < p.rank(); ++i) {
    const auto j = 2 * (p.rank() - 1 - i);  // constant_pad_nd order
    padded[i] += pad[j] + pad[j + 1];
  }
  const auto scaled = grad / avg_divisor(p, in, out, cip, grad);
  const auto gp = window_sums_adjoint(scaled, p, shape_of(x.size(0), x.size(1), padded));
  return at::constant_pad_nd(gp, negated(pad), 0);
}

// ---- Op inputs and outputs. `rank` is the IR tensors' rank: 3 (1-d pools, run as [N, C, L, 1]),
// 4 or 5.

inline Result<at::Tensor> as_pool_input(OpContext& ctx, const at::Tensor& x, std::int64_t rank) {
  if (x.dim() != rank) return ctx.invalid("pool input must have rank {}, got {}", rank, x.dim());
  return rank == 3 ? x.unsqueeze(3) : x;
}
inline at::Tensor as_pool_output(const at::Tensor& y, std::int64_t rank) {
  return rank == 3 ? y.squeeze(3) : y;
}

}  // namespace tb::backend::libtorch::pool
