// ModuleOperationIr except the convolutions: normalisation, embedding, linear, pooling,
// interpolation, attention, CTC loss and unfold, with the semantics of Burn 0.22.1's ModuleOps
// (trait defaults and burn-flex, the reference backend).
//
// Conventions kept from Burn, where PyTorch differs:
// - Linear's weight is [d_input, d_output]: y = x @ W (+ b).
// - Pools accept any padding (ATen refuses padding > kernel / 2): such cases are computed by
//   padding explicitly. Max-pool indices are flat indices into each input plane (h * W + w); a
//   window with no input element yields -inf and index -1, a window of -inf values the index of
//   its first input element.
// - Interpolate Nearest maps dst -> min(floor(dst * (in / out)), in - 1) in f64 (burn-flex);
//   NearestExact dst -> min(((2 dst + 1) in) / (2 out), in - 1) (cubek, the only Burn backend
//   implementing it); Lanczos3 (not in ATen) is a separable 6-tap sinc window that skips taps
//   outside the input and renormalises. Backward passes are the exact adjoints of the forwards.
// - Attention: a true mask entry masks OUT; is_causal masks col > row + (Sk - Sq) (bottom-right
//   aligned); softcap applies to the scaled scores before masking; the additive bias after;
//   fully masked rows give 0.
// - CtcLoss: log_probs [T, N, C], per-sample loss [N]; an input length of 0 reads alpha at t = 0
//   like Burn's default (decomposed) implementation. CtcLossBackward is Burn's
//   ctc_grad_from_alpha_beta_default: PyTorch's gradient with samples of infinite loss zeroed.
// Half-precision inputs are computed in f32 (on CPU always, since several ATen CPU kernels lack
// f16; for the numerically sensitive ops everywhere, as burn-flex does) and cast back by out().
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "lower_families.hpp"

namespace tb::backend::libtorch {

namespace {

using at::Tensor;
using Sizes = std::vector<std::int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

// f16/bf16 -> f32 on CPU (ATen CPU kernels without half support).
Tensor cpu_wide(const Tensor& t) {
  return t.device().is_cpu() ? widen(t) : t;
}
// `t` in the floating type `like` computes in.
Tensor same_type(const Tensor& t, const Tensor& like) {
  return t.scalar_type() == like.scalar_type() ? t : t.to(like.scalar_type());
}

std::int64_t numel(const Sizes& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
Tensor long_tensor(const std::vector<std::int64_t>& v, const at::Device& device) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(device);
}
// Lengths and the like, read to the host.
std::vector<std::int64_t> host_longs(const Tensor& t) {
  const auto c = t.to(at::kCPU, at::kLong).contiguous();
  return std::vector<std::int64_t>(c.data_ptr<std::int64_t>(),
                                   c.data_ptr<std::int64_t>() + c.numel());
}

// ---------------------------------------------------------------------------------------------
// BatchNorm, LayerNorm

Status lower_batch_norm(OpContext& ctx, const ir::BatchNormOpIr& op) {
  const auto x = widen(ctx.in(op.x));
  if (x.dim() < 2) return ctx.invalid("batch_norm needs an input of rank >= 2, got {}", x.dim());
  Sizes per_channel(x.dim(), 1);
  per_channel[1] = x.size(1);
  auto param = [&](const ir::TensorIr& t) { return same_type(ctx.in(t), x).reshape(per_channel); };
  const double eps = op.epsilon.as_double();
  // Burn: (x - mean) / sqrt(variance + epsilon) * gamma + beta.
  const auto normalized = (x - param(op.mean)) / (param(op.variance) + eps).sqrt();
  return ctx.out(op.out, normalized * param(op.gamma) + param(op.beta));
}

Status lower_layer_norm(OpContext& ctx, const ir::LayerNormOpIr& op) {
  const auto x = cpu_wide(ctx.in(op.input));
  if (x.dim() < 1) return ctx.invalid("layer_norm needs an input of rank >= 1");
  if (x.numel() == 0) return ctx.out(op.out, x);
  // Over the last dim only, biased variance (Burn's ModuleOps::layer_norm).
  const auto d = x.size(-1);
  const auto gamma = same_type(ctx.in(op.gamma), x).reshape({d});
  Tensor beta;  // undefined: no beta
  if (op.beta) beta = same_type(ctx.in(*op.beta), x).reshape({d});
  return ctx.out(op.out, at::layer_norm(x, {d}, gamma, beta, op.epsilon.as_double()));
}

// ---------------------------------------------------------------------------------------------
// Embedding

Status lower_embedding(OpContext& ctx, const ir::EmbeddingOpIr& op) {
  const auto& w = ctx.in(op.weights);
  const auto& idx = ctx.in(op.indices);
  if (w.dim() != 2 || idx.dim() != 2) {
    return ctx.invalid("embedding needs weights [n, d] and indices [batch, seq], got {} and {}",
                       shape_string(w.sizes()), shape_string(idx.sizes()));
  }
  const auto rows = w.index_select(0, idx.reshape({idx.numel()}).to(at::kLong));
  return ctx.out(op.out, rows.reshape({idx.size(0), idx.size(1), w.size(1)}));
}

Status lower_embedding_backward(OpContext& ctx, const ir::EmbeddingBackwardOpIr& op) {
  const auto& w = ctx.in(op.weights);
  const auto grad = widen(ctx.in(op.out_grad));
  const auto& idx = ctx.in(op.indices);
  if (w.dim() != 2 || idx.dim() != 2) {
    return ctx.invalid("embedding_backward needs weights [n, d] and indices [batch, seq]");
  }
  const auto d = w.size(1);
  // Rows of out_grad added at their indices (repeated indices accumulate).
  const auto result =
      at::zeros({w.size(0), d}, grad.options())
          .index_add(0, idx.reshape({idx.numel()}).to(at::kLong), grad.reshape({idx.numel(), d}));
  return ctx.out(op.out, result);
}

// ---------------------------------------------------------------------------------------------
// Linear (weight [d_input, d_output])

// `t` as [rows, last] where rows is the product of the leading dims.
Tensor flatten_leading(const Tensor& t) {
  const auto last = t.dim() == 0 ? 1 : t.size(-1);
  std::int64_t rows = 1;
  for (std::int64_t i = 0; i + 1 < t.dim(); ++i) rows *= t.size(i);
  return t.reshape({rows, last});
}

Status lower_linear(OpContext& ctx, const ir::LinearOpIr& op) {
  const auto x = cpu_wide(ctx.in(op.x));
  const auto w = same_type(ctx.in(op.weight), x);
  if (x.dim() < 1 || w.dim() != 2)
    return ctx.invalid("linear needs x [..., d_in], weight [d_in, d_out]");
  if (op.bias && x.dim() >= 2) {
    const auto b = same_type(ctx.in(*op.bias), x);
    if (b.dim() <= 1) {
      // One GEMM with the bias as its accumulator (what PyTorch's linear does) instead of a
      // matmul plus a separate add over the whole output.
      auto y = at::addmm(b, flatten_leading(x), w);
      auto sizes = x.sizes().vec();
      sizes.back() = w.size(1);
      return ctx.out(op.out, y.view(sizes));
    }
  }
  auto y = at::matmul(x, w);
  if (op.bias) y = y + same_type(ctx.in(*op.bias), y);
  return ctx.out(op.out, y);
}

Status lower_linear_x_backward(OpContext& ctx, const ir::LinearXBackwardOpIr& op) {
  const auto g = cpu_wide(ctx.in(op.output_grad));
  const auto w = same_type(ctx.in(op.weight), g);
  if (g.dim() < 1 || w.dim() != 2)
    return ctx.invalid("linear_x_backward needs weight [d_in, d_out]");
  return ctx.out(op.out, at::matmul(g, w.t()));
}

Status lower_linear_weight_backward(OpContext& ctx, const ir::LinearWeightBackwardOpIr& op) {
  const auto g = cpu_wide(ctx.in(op.output_grad));
  const auto x = same_type(ctx.in(op.x), g);
  if (g.dim() < 1 || x.dim() < 1) return ctx.invalid("linear_weight_backward needs rank >= 1");
  // x^T @ output_grad over the flattened batch dims.
  return ctx.out(op.out, at::matmul(flatten_leading(x).t(), flatten_leading(g)));
}

Status lower_linear_bias_backward(OpContext& ctx, const ir::LinearBiasBackwardOpIr& op) {
  const auto g = widen(ctx.in(op.output_grad));
  if (g.dim() < 1) return ctx.invalid("linear_bias_backward needs rank >= 1");
  return ctx.out(op.out, flatten_leading(g).sum(0));
}

// ---------------------------------------------------------------------------------------------
// Pooling. Everything runs on 4-d [N, C, H, W] (1-d as [N, C, L, 1]).

struct Pool2d {
  std::array<std::int64_t, 2> kernel, stride, padding, dilation{1, 1};
  bool ceil_mode = false;
};

Pool2d pool1d(std::uint64_t k, std::uint64_t s, std::uint64_t p, std::uint64_t d, bool ceil) {
  return Pool2d{{static_cast<std::int64_t>(k), 1},
                {static_cast<std::int64_t>(s), 1},
                {static_cast<std::int64_t>(p), 0},
                {static_cast<std::int64_t>(d), 1},
                ceil};
}
Pool2d pool2d(const ir::Usizes<2>& k, const ir::Usizes<2>& s, const ir::Usizes<2>& p,
              const ir::Usizes<2>& d, bool ceil) {
  Pool2d r;
  for (int i = 0; i < 2; ++i) {
    r.kernel[i] = static_cast<std::int64_t>(k[i]);
    r.stride[i] = static_cast<std::int64_t>(s[i]);
    r.padding[i] = static_cast<std::int64_t>(p[i]);
    r.dilation[i] = static_cast<std::int64_t>(d[i]);
  }
  r.ceil_mode = ceil;
  return r;
}

std::int64_t extent(const Pool2d& p, int i) {
  return p.dilation[i] * (p.kernel[i] - 1) + 1;
}

// Burn's calculate_pool_output_size (the client's shape rule); -1 where it is undefined.
std::int64_t pool_out_size(const Pool2d& p, int i, std::int64_t in) {
  const auto padded = in + 2 * p.padding[i];
  const auto ext = extent(p, i);
  const auto s = p.stride[i];
  if (p.ceil_mode) {
    if (padded + s - 1 < ext) return -1;
    const auto out = (padded + s - 1 - ext) / s + 1;
    return (out - 1) * s >= in + p.padding[i] ? out - 1 : out;
  }
  if (padded < ext) return -1;
  return (padded - ext) / s + 1;
}

Status check_pool(OpContext& ctx, const Pool2d& p) {
  for (int i = 0; i < 2; ++i) {
    if (p.kernel[i] < 1 || p.stride[i] < 1 || p.dilation[i] < 1) {
      return ctx.invalid("pool kernel size, stride and dilation must be > 0");
    }
  }
  return ok();
}

// ATen pools refuse padding > kernel / 2; below that their windows, output sizes (= Burn's rule)
// and divisors are Burn's.
bool aten_pool_ok(const Pool2d& p) {
  return 2 * p.padding[0] <= p.kernel[0] && 2 * p.padding[1] <= p.kernel[1];
}

// Explicit padding (left = padding, right = whatever makes a floor-mode pool produce `out`
// windows; negative crops) for the cases ATen refuses.
std::array<std::int64_t, 4> explicit_pad(const Pool2d& p, std::int64_t h, std::int64_t w,
                                         std::int64_t oh, std::int64_t ow) {
  const auto right = [&](int i, std::int64_t in, std::int64_t out) {
    return (out - 1) * p.stride[i] + extent(p, i) - in - p.padding[i];
  };
  // constant_pad_nd order: last dim first.
  return {p.padding[1], right(1, w, ow), p.padding[0], right(0, h, oh)};
}

// Burn's max_pool2d_with_indices on x [N, C, H, W].
std::pair<Tensor, Tensor> max_pool(const Tensor& x_in, const Pool2d& p, std::int64_t oh,
                                   std::int64_t ow) {
  const auto x = cpu_wide(x_in);
  const auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const auto long_opts = x.options().dtype(at::kLong);
  if (n * c * oh * ow == 0) {
    return {at::empty({n, c, oh, ow}, x.options()), at::empty({n, c, oh, ow}, long_opts)};
  }
  if (h * w == 0) {
    return {at::full({n, c, oh, ow}, -kInf, x.options()), at::full({n, c, oh, ow}, -1, long_opts)};
  }
  if (aten_pool_ok(p)) {
    auto r = at::max_pool2d_with_indices(x, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
    return {std::get<0>(r), std::get<1>(r)};
  }
  const auto pad = explicit_pad(p, h, w, oh, ow);
  const auto xp = at::constant_pad_nd(x, {pad[0], pad[1], pad[2], pad[3]}, -kInf);
  auto r = at::max_pool2d_with_indices(xp, p.kernel, p.stride, {0, 0}, p.dilation, false);
  const auto wp = xp.size(3);
  const auto& ip = std::get<1>(r);
  const auto ih = at::div(ip, wp, "floor") - p.padding[0];
  const auto iw = at::remainder(ip, wp) - p.padding[1];
  const auto valid = (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w);
  // A padding element won: the window holds no input element (-1) or only -inf ones (Burn
  // reports the first of them).
  const auto first = [&](int i, std::int64_t out, std::int64_t in) {
    std::vector<std::int64_t> v(out);
    for (std::int64_t o = 0; o < out; ++o) {
      auto start = o * p.stride[i] - p.padding[i];
      if (start < 0) start += (-start + p.dilation[i] - 1) / p.dilation[i] * p.dilation[i];
      const bool inside = start < in && start <= o * p.stride[i] - p.padding[i] + extent(p, i) - 1;
      v[o] = inside ? start : -1;
    }
    return long_tensor(v, x.device());
  };
  const auto fh = first(0, oh, h).view({oh, 1});
  const auto fw = first(1, ow, w).view({1, ow});
  const auto fallback = at::where((fh >= 0) & (fw >= 0), fh * w + fw, at::full({}, -1, long_opts));
  return {std::get<0>(r), at::where(valid, ih * w + iw, fallback)};
}

// Burn's max-pool backward: out_grad added at the recorded flat indices (index -1 is skipped).
Tensor max_pool_backward(const Tensor& x, const Tensor& grad_in, const Tensor& indices) {
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

// Per-axis divisors of Burn's avg pool: window positions inside the padded input
// (count_include_pad) or inside the input.
std::vector<double> avg_counts(const Pool2d& p, int i, std::int64_t in, std::int64_t out,
                               bool count_include_pad) {
  std::vector<double> v(out);
  for (std::int64_t o = 0; o < out; ++o) {
    const auto start = o * p.stride[i];  // in padded coordinates
    std::int64_t count;
    if (count_include_pad) {
      count = std::clamp<std::int64_t>(in + 2 * p.padding[i] - start, 0, p.kernel[i]);
    } else {
      const auto lo = std::max<std::int64_t>(start - p.padding[i], 0);
      const auto hi = std::min<std::int64_t>(start - p.padding[i] + p.kernel[i], in);
      count = std::max<std::int64_t>(hi - lo, 0);
    }
    v[o] = static_cast<double>(count);
  }
  return v;
}

Tensor avg_divisor(const Pool2d& p, std::int64_t h, std::int64_t w, std::int64_t oh,
                   std::int64_t ow, bool cip, const Tensor& like) {
  const auto opts = at::TensorOptions().dtype(at::kDouble);
  const auto ch = at::tensor(avg_counts(p, 0, h, oh, cip), opts).view({oh, 1});
  const auto cw = at::tensor(avg_counts(p, 1, w, ow, cip), opts).view({1, ow});
  return (ch * cw).clamp_min(1).to(like.device(), like.scalar_type());
}

Tensor avg_pool(const Tensor& x_in, const Pool2d& p, bool cip, std::int64_t oh, std::int64_t ow) {
  const auto x = cpu_wide(x_in);
  const auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (n * c * oh * ow == 0 || h * w == 0) return at::zeros({n, c, oh, ow}, x.options());
  if (aten_pool_ok(p)) {
    return at::avg_pool2d(x, p.kernel, p.stride, p.padding, p.ceil_mode, cip, {});
  }
  const auto pad = explicit_pad(p, h, w, oh, ow);
  const auto xp = at::constant_pad_nd(x, {pad[0], pad[1], pad[2], pad[3]}, 0);
  const auto sums = at::avg_pool2d(xp, p.kernel, p.stride, {0, 0}, false, true, 1);
  return sums / avg_divisor(p, h, w, oh, ow, cip, sums);
}

Tensor avg_pool_backward(const Tensor& x, const Tensor& grad_in, const Pool2d& p, bool cip) {
  const auto grad = cpu_wide(grad_in);
  const auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const auto oh = grad.size(2), ow = grad.size(3);
  if (x.numel() == 0 || grad.numel() == 0) return at::zeros(x.sizes(), grad.options());
  if (aten_pool_ok(p) && pool_out_size(p, 0, h) == oh && pool_out_size(p, 1, w) == ow) {
    return at::avg_pool2d_backward(grad, same_type(x, grad), p.kernel, p.stride, p.padding,
                                   p.ceil_mode, cip, {});
  }
  // Adjoint of avg_pool's explicit-padding form.
  const auto pad = explicit_pad(p, h, w, oh, ow);
  const auto padded = at::empty({n, c, h + pad[2] + pad[3], w + pad[0] + pad[1]}, grad.options());
  const auto scaled = grad / avg_divisor(p, h, w, oh, ow, cip, grad);
  const auto gp =
      at::avg_pool2d_backward(scaled, padded, p.kernel, p.stride, {0, 0}, false, true, 1);
  return at::constant_pad_nd(gp, {-pad[0], -pad[1], -pad[2], -pad[3]}, 0);
}

// The pooled output sizes for x [N, C, H, W], validated.
Result<std::pair<std::int64_t, std::int64_t>> pool_sizes(OpContext& ctx, const Tensor& x4,
                                                         const Pool2d& p) {
  TB_TRY(check_pool(ctx, p));
  const auto oh = pool_out_size(p, 0, x4.size(2));
  const auto ow = pool_out_size(p, 1, x4.size(3));
  if (oh < 0 || ow < 0) {
    return ctx.invalid("pool kernel larger than the padded input {}", shape_string(x4.sizes()));
  }
  return std::make_pair(oh, ow);
}

Result<Tensor> as_4d(OpContext& ctx, const Tensor& x, std::int64_t rank) {
  if (x.dim() != rank) return ctx.invalid("pool input must have rank {}, got {}", rank, x.dim());
  return rank == 3 ? x.unsqueeze(3) : x;
}

// Max pool (with or without indices), 1-d or 2-d.
Status max_pool_op(OpContext& ctx, const ir::TensorIr& x_ir, const Pool2d& p, std::int64_t rank,
                   const ir::TensorIr& out, const ir::TensorIr* out_indices) {
  TB_TRY_ASSIGN(auto x, as_4d(ctx, ctx.in(x_ir), rank));
  TB_TRY_ASSIGN(auto sizes, pool_sizes(ctx, x, p));
  auto [y, idx] = max_pool(x, p, sizes.first, sizes.second);
  if (rank == 3) {
    y = y.squeeze(3);
    idx = idx.squeeze(3);
  }
  TB_TRY(ctx.out(out, y));
  if (out_indices) TB_TRY(ctx.out(*out_indices, idx));
  return ok();
}

Status max_pool_backward_op(OpContext& ctx, const ir::TensorIr& x_ir, const ir::TensorIr& grad,
                            const ir::TensorIr& indices, std::int64_t rank,
                            const ir::TensorIr& out) {
  const auto& x = ctx.in(x_ir);
  if (x.dim() != rank) return ctx.invalid("pool input must have rank {}, got {}", rank, x.dim());
  return ctx.out(out, max_pool_backward(x, ctx.in(grad), ctx.in(indices)));
}

Status avg_pool_op(OpContext& ctx, const ir::TensorIr& x_ir, const Pool2d& p, bool cip,
                   std::int64_t rank, const ir::TensorIr& out) {
  TB_TRY_ASSIGN(auto x, as_4d(ctx, ctx.in(x_ir), rank));
  TB_TRY_ASSIGN(auto sizes, pool_sizes(ctx, x, p));
  auto y = avg_pool(x, p, cip, sizes.first, sizes.second);
  return ctx.out(out, rank == 3 ? y.squeeze(3) : y);
}

Status avg_pool_backward_op(OpContext& ctx, const ir::TensorIr& x_ir, const ir::TensorIr& grad_ir,
                            const Pool2d& p, bool cip, std::int64_t rank, const ir::TensorIr& out) {
  TB_TRY(check_pool(ctx, p));
  TB_TRY_ASSIGN(auto x, as_4d(ctx, ctx.in(x_ir), rank));
  TB_TRY_ASSIGN(auto grad, as_4d(ctx, ctx.in(grad_ir), rank));
  auto g = avg_pool_backward(x, grad, p, cip);
  return ctx.out(out, rank == 3 ? g.squeeze(3) : g);
}

// Adaptive average pooling: the windows [floor(o * in / out), ceil((o + 1) * in / out)) of
// PyTorch and Burn.
Tensor adaptive_avg_pool(const Tensor& x_in, const Sizes& out_spatial) {
  const auto x = cpu_wide(x_in);
  Sizes out_shape(x.sizes().begin(), x.sizes().begin() + 2);
  out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
  if (x.numel() == 0 || numel(out_shape) == 0) return at::zeros(out_shape, x.options());
  return out_spatial.size() == 2 ? at::adaptive_avg_pool2d(x, out_spatial)
                                 : at::adaptive_avg_pool3d(x, out_spatial);
}

Tensor adaptive_avg_pool_backward(const Tensor& x, const Tensor& grad_in) {
  const auto grad = cpu_wide(grad_in);
  if (x.numel() == 0 || grad.numel() == 0) return at::zeros(x.sizes(), grad.options());
  const auto xs = same_type(x, grad);
  return x.dim() == 4 ? at::_adaptive_avg_pool2d_backward(grad, xs)
                      : at::_adaptive_avg_pool3d_backward(grad, xs);
}

// ---------------------------------------------------------------------------------------------
// Interpolate

// One axis of a separable resampling: out[o] = sum_j weight[o][j] * in[index[o][j]] over the
// valid taps (an invalid tap contributes nothing, not even 0 * inf).
struct Taps {
  std::int64_t out = 0, per = 0;  // output size, taps per output
  std::vector<std::int64_t> index;
  std::vector<double> weight;
  std::vector<std::uint8_t> valid;
  std::vector<double> weight_sum;  // sum over the valid taps of each output
  bool unit = true;                // one valid tap of weight 1 per output
};

Taps nearest_taps(std::int64_t in, std::int64_t out, bool exact) {
  Taps t;
  t.out = out;
  t.per = 1;
  const double ratio = static_cast<double>(in) / static_cast<double>(out);
  for (std::int64_t o = 0; o < out; ++o) {
    const std::int64_t src =
        exact ? ((2 * o + 1) * in) / (2 * out)
              : static_cast<std::int64_t>(std::floor(static_cast<double>(o) * ratio));
    t.index.push_back(std::min(src, in - 1));
    t.weight.push_back(1.0);
    t.valid.push_back(1);
    t.weight_sum.push_back(1.0);
  }
  return t;
}

double lanczos3(double x) {
  if (x == 0.0) return 1.0;
  if (std::abs(x) >= 3.0) return 0.0;
  const double pi_x = kPi * x;
  const double pi_x3 = pi_x / 3.0;
  return std::sin(pi_x) * std::sin(pi_x3) / (pi_x * pi_x3);
}

// burn-flex's coordinate mapping.
double map_coord(std::int64_t o, std::int64_t in, std::int64_t out, bool align_corners) {
  if (align_corners) {
    const double ratio =
        (static_cast<double>(in) - 1.0) / static_cast<double>(std::max<std::int64_t>(out - 1, 1));
    return static_cast<double>(o) * ratio;
  }
  const double ratio = static_cast<double>(in) / static_cast<double>(out);
  return (static_cast<double>(o) + 0.5) * ratio - 0.5;
}

Taps lanczos3_taps(std::int64_t in, std::int64_t out, bool align_corners) {
  Taps t;
  t.out = out;
  t.per = 6;
  t.unit = false;
  for (std::int64_t o = 0; o < out; ++o) {
    const double coord = map_coord(o, in, out, align_corners);
    const double base = std::floor(coord);
    double sum = 0;
    for (std::int64_t off = -2; off <= 3; ++off) {
      const auto index = static_cast<std::int64_t>(base) + off;
      const bool ok = index >= 0 && index < in;
      const double wgt = ok ? lanczos3(coord - (base + static_cast<double>(off))) : 0.0;
      t.index.push_back(ok ? index : 0);
      t.weight.push_back(wgt);
      t.valid.push_back(ok ? 1 : 0);
      sum += wgt;
    }
    t.weight_sum.push_back(sum);
  }
  return t;
}

// x resampled along `dim` (size in -> t.out).
Tensor apply_taps(const Tensor& x, std::int64_t dim, const Taps& t) {
  const auto index = long_tensor(t.index, x.device());
  if (t.unit) return x.index_select(dim, index);
  Sizes split(x.sizes().begin(), x.sizes().end());
  split[dim] = t.out;
  split.insert(split.begin() + dim + 1, t.per);
  Sizes wshape{t.out, t.per};
  for (std::int64_t i = dim + 1; i < x.dim(); ++i) wshape.push_back(1);
  const auto weight =
      at::tensor(t.weight, at::kDouble).to(x.device(), x.scalar_type()).view(wshape);
  const auto valid =
      at::tensor(std::vector<std::int64_t>(t.valid.begin(), t.valid.end()), at::kLong)
          .to(x.device())
          .ne(0)
          .view(wshape);
  const auto gathered = x.index_select(dim, index).view(split);
  return (at::where(valid, gathered, at::zeros({}, x.options())) * weight).sum(dim + 1);
}

// The adjoint of apply_taps: g (size t.out along dim) -> size `in` along dim.
Tensor apply_taps_adjoint(const Tensor& g, std::int64_t dim, const Taps& t, std::int64_t in) {
  Sizes shape(g.sizes().begin(), g.sizes().end());
  shape[dim] = in;
  auto result = at::zeros(shape, g.options());
  const auto index = long_tensor(t.index, g.device());
  if (t.unit) return result.index_add(dim, index, g);
  Sizes wshape{t.out, t.per};
  for (std::int64_t i = dim + 1; i < g.dim(); ++i) wshape.push_back(1);
  std::vector<double> w = t.weight;  // invalid taps already weigh 0
  const auto weight = at::tensor(w, at::kDouble).to(g.device(), g.scalar_type()).view(wshape);
  Sizes flat(g.sizes().begin(), g.sizes().end());
  flat[dim] = t.out * t.per;
  const auto spread = (g.unsqueeze(dim + 1) * weight).reshape(flat);
  return result.index_add(dim, index, spread);
}

// Lanczos3 renormalisation: the product of the two axes' weight sums where nonzero.
Tensor lanczos_norm(const Taps& ty, const Taps& tx, const Tensor& like) {
  const auto opts = at::TensorOptions().dtype(at::kDouble);
  auto d = at::tensor(ty.weight_sum, opts).view({ty.out, 1}) *
           at::tensor(tx.weight_sum, opts).view({1, tx.out});
  d = at::where(d != 0, d, at::ones({}, opts));
  return d.to(like.device(), like.scalar_type());
}

using Mode = ir::InterpolateModeIr;

Status check_interpolate(OpContext& ctx, const Tensor& x) {
  if (x.dim() != 4)
    return ctx.invalid("interpolate needs an input [N, C, H, W], got rank {}", x.dim());
  return ok();
}

Status lower_interpolate(OpContext& ctx, const ir::InterpolateOpIr& op) {
  const auto& x_in = ctx.in(op.x);
  TB_TRY(check_interpolate(ctx, x_in));
  const auto oh = static_cast<std::int64_t>(op.output_size[0]);
  const auto ow = static_cast<std::int64_t>(op.output_size[1]);
  const auto n = x_in.size(0), c = x_in.size(1), h = x_in.size(2), w = x_in.size(3);
  if (n * c * oh * ow == 0) return ctx.out(op.out, at::zeros({n, c, oh, ow}, x_in.options()));
  if (h * w == 0) return ctx.invalid("interpolate: input spatial dimensions must be > 0");
  const bool ac = op.options.align_corners;
  switch (op.options.mode) {
    case Mode::Nearest:
    case Mode::NearestExact: {
      const bool exact = op.options.mode == Mode::NearestExact;
      const auto y = apply_taps(apply_taps(x_in, 2, nearest_taps(h, oh, exact)), 3,
                                nearest_taps(w, ow, exact));
      return ctx.out(op.out, y);
    }
    case Mode::Bilinear:
      return ctx.out(op.out, at::upsample_bilinear2d(cpu_wide(x_in), {oh, ow}, ac, {}, {}));
    case Mode::Bicubic:
      return ctx.out(op.out, at::upsample_bicubic2d(cpu_wide(x_in), {oh, ow}, ac, {}, {}));
    case Mode::Lanczos3: {
      const auto x = widen(x_in);
      const auto ty = lanczos3_taps(h, oh, ac), tx = lanczos3_taps(w, ow, ac);
      const auto y = apply_taps(apply_taps(x, 2, ty), 3, tx);
      return ctx.out(op.out, y / lanczos_norm(ty, tx, y));
    }
  }
  return ctx.invalid("unknown interpolate mode");
}

Status lower_interpolate_backward(OpContext& ctx, const ir::InterpolateBackwardOpIr& op) {
  const auto& x = ctx.in(op.x);
  TB_TRY(check_interpolate(ctx, x));
  const auto grad = widen(ctx.in(op.grad));
  const auto oh = static_cast<std::int64_t>(op.output_size[0]);
  const auto ow = static_cast<std::int64_t>(op.output_size[1]);
  const auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (grad.dim() != 4 || grad.size(2) != oh || grad.size(3) != ow) {
    return ctx.invalid("interpolate_backward: grad {} does not match output size [{}, {}]",
                       shape_string(grad.sizes()), oh, ow);
  }
  if (n * c * h * w == 0 || grad.numel() == 0)
    return ctx.out(op.out, at::zeros(x.sizes(), grad.options()));
  const bool ac = op.options.align_corners;
  switch (op.options.mode) {
    case Mode::Nearest:
    case Mode::NearestExact: {
      const bool exact = op.options.mode == Mode::NearestExact;
      const auto gx = apply_taps_adjoint(apply_taps_adjoint(grad, 3, nearest_taps(w, ow, exact), w),
                                         2, nearest_taps(h, oh, exact), h);
      return ctx.out(op.out, gx);
    }
    case Mode::Bilinear:
      return ctx.out(op.out,
                     at::upsample_bilinear2d_backward(grad, {oh, ow}, {n, c, h, w}, ac, {}, {}));
    case Mode::Bicubic:
      return ctx.out(op.out,
                     at::upsample_bicubic2d_backward(grad, {oh, ow}, {n, c, h, w}, ac, {}, {}));
    case Mode::Lanczos3: {
      const auto ty = lanczos3_taps(h, oh, ac), tx = lanczos3_taps(w, ow, ac);
      const auto scaled = grad / lanczos_norm(ty, tx, grad);
      return ctx.out(op.out, apply_taps_adjoint(apply_taps_adjoint(scaled, 3, tx, w), 2, ty, h));
    }
  }
  return ctx.invalid("unknown interpolate mode");
}

// ---------------------------------------------------------------------------------------------
// Attention (Burn's attention_fallback, with burn-flex's GQA support)

Status lower_attention(OpContext& ctx, const ir::AttentionOpIr& op) {
  auto q = widen(ctx.in(op.query));
  auto k = same_type(ctx.in(op.key), q);
  auto v = same_type(ctx.in(op.value), q);
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) {
    return ctx.invalid("attention needs query, key and value of rank 4");
  }
  const auto batch = q.size(0), heads = q.size(1), seq_q = q.size(2), head_dim = q.size(3);
  const auto kv_heads = k.size(1), seq_k = k.size(2), val_dim = v.size(3);
  if (kv_heads != heads) {
    // GQA / MQA: query head h reads key/value head h / (heads / kv_heads).
    if (kv_heads == 0 || heads % kv_heads != 0 || v.size(1) != kv_heads) {
      return ctx.invalid("attention: {} query heads cannot share {} key/value heads", heads,
                         kv_heads);
    }
    k = k.repeat_interleave(heads / kv_heads, 1);
    v = v.repeat_interleave(heads / kv_heads, 1);
  }
  std::optional<double> softcap;
  if (op.options.softcap) {
    softcap = op.options.softcap->as_double();
    if (!(*softcap > 0))
      return ctx.invalid("attention: softcap must be positive, got {}", *softcap);
  }
  if (seq_k == 0 || batch * heads * seq_q * val_dim == 0) {
    return ctx.out(op.out, at::zeros({batch, heads, seq_q, val_dim}, q.options()));
  }
  const double scale = op.options.scale ? op.options.scale->as_double()
                                        : 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto scores = at::matmul(q, k.transpose(-2, -1)) * scale;
  if (softcap) scores = at::tanh(scores / *softcap) * *softcap;
  if (op.mask) scores = scores.masked_fill(ctx.in(*op.mask).to(at::kBool), -kInf);
  if (op.options.is_causal) {
    const auto long_opts = q.options().dtype(at::kLong);
    const auto rows = at::arange(seq_q, long_opts).view({seq_q, 1}) + (seq_k - seq_q);
    const auto cols = at::arange(seq_k, long_opts).view({1, seq_k});
    scores = scores.masked_fill(cols > rows, -kInf);
  }
  if (op.attn_bias) scores = scores + same_type(ctx.in(*op.attn_bias), scores);
  // NaN-safe softmax: a fully masked row gives 0.
  const bool f64 = scores.scalar_type() == at::kDouble;
  const double lowest =
      f64 ? std::numeric_limits<double>::lowest() : std::numeric_limits<float>::lowest();
  const double tiny = f64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  const auto numerator = at::exp(scores - scores.amax(-1, true).clamp_min(lowest));
  const auto probs = numerator / numerator.sum(-1, true).clamp_min(tiny);
  return ctx.out(op.out, at::matmul(probs, v));
}

// ---------------------------------------------------------------------------------------------
// CTC loss

struct CtcInputs {
  Tensor log_probs, targets;
  std::vector<std::int64_t> input_lengths, target_lengths;
};

Result<CtcInputs> ctc_inputs(OpContext& ctx, const ir::TensorIr& lp_ir, const ir::TensorIr& tg_ir,
                             const ir::TensorIr& il_ir, const ir::TensorIr& tl_ir,
                             std::uint64_t blank) {
  CtcInputs r;
  r.log_probs = widen(ctx.in(lp_ir));
  r.targets = ctx.in(tg_ir).to(at::kLong);
  const auto& lp = r.log_probs;
  if (lp.dim() != 3 || r.targets.dim() != 2) {
    return ctx.invalid("ctc_loss needs log_probs [T, N, C] and targets [N, S], got {} and {}",
                       shape_string(lp.sizes()), shape_string(r.targets.sizes()));
  }
  const auto t = lp.size(0), n = lp.size(1), c = lp.size(2), s = r.targets.size(1);
  r.input_lengths = host_longs(ctx.in(il_ir));
  r.target_lengths = host_longs(ctx.in(tl_ir));
  if (r.targets.size(0) != n || static_cast<std::int64_t>(r.input_lengths.size()) != n ||
      static_cast<std::int64_t>(r.target_lengths.size()) != n) {
    return ctx.invalid("ctc_loss: batch sizes of log_probs, targets and lengths differ");
  }
  if (t == 0) return ctx.invalid("ctc_loss needs at least one time step");
  if (blank >= static_cast<std::uint64_t>(c)) {
    return ctx.invalid("ctc_loss: blank {} is not a class of {}", blank, c);
  }
  for (std::int64_t b = 0; b < n; ++b) {
    if (r.target_lengths[b] < 0 || r.target_lengths[b] > s) {
      return ctx.invalid("ctc_loss: target length {} of sample {} is outside [0, {}]",
                         r.target_lengths[b], b, s);
    }
  }
  if (n > 0 && s > 0) {
    // Labels within each target length must be classes (ATen does not check them).
    const auto cols = at::arange(s, r.targets.options()).view({1, s});
    const auto used = cols < long_tensor(r.target_lengths, r.targets.device()).view({n, 1});
    const auto bad = used & ((r.targets < 0) | (r.targets >= c));
    if (bad.any().item<bool>())
      return ctx.invalid("ctc_loss: a target label is not a class of {}", c);
  }
  return r;
}

Status lower_ctc_loss(OpContext& ctx, const ir::CtcLossOpIr& op) {
  TB_TRY_ASSIGN(auto in, ctc_inputs(ctx, op.log_probs, op.targets, op.input_lengths,
                                    op.target_lengths, op.blank));
  if (in.log_probs.size(1) == 0) return ctx.out(op.out, at::zeros({0}, in.log_probs.options()));
  // Burn's default implementation updates alpha while t < input_length and reads the loss off
  // the last row it wrote: an input length outside [1, T] acts as the nearest bound.
  auto lengths = in.input_lengths;
  const auto t = in.log_probs.size(0);
  for (auto& l : lengths) l = std::clamp<std::int64_t>(l, 1, t);
  const auto r = at::_ctc_loss(in.log_probs, in.targets, lengths, in.target_lengths,
                               static_cast<std::int64_t>(op.blank), false);
  return ctx.out(op.out, std::get<0>(r));
}

Status lower_ctc_loss_backward(OpContext& ctx, const ir::CtcLossBackwardOpIr& op) {
  TB_TRY_ASSIGN(auto in, ctc_inputs(ctx, op.log_probs, op.targets, op.input_lengths,
                                    op.target_lengths, op.blank));
  if (in.log_probs.size(1) == 0) return ctx.out(op.out, at::zeros_like(in.log_probs));
  const auto blank = static_cast<std::int64_t>(op.blank);
  // Burn's gradient zeroes the steps t >= input_length: lengths outside [0, T] act as the bound.
  for (auto& l : in.input_lengths) l = std::clamp<std::int64_t>(l, 0, in.log_probs.size(0));
  const auto grad_loss =
      same_type(ctx.in(op.grad_loss), in.log_probs).reshape({in.log_probs.size(1)});
  const auto r =
      at::_ctc_loss(in.log_probs, in.targets, in.input_lengths, in.target_lengths, blank, false);
  // zero_infinity: Burn zeroes the gradient of samples whose loss is infinite.
  const auto grad =
      at::_ctc_loss_backward(grad_loss, in.log_probs, in.targets, in.input_lengths,
                             in.target_lengths, std::get<0>(r), std::get<1>(r), blank, true);
  return ctx.out(op.out, grad);
}

// ---------------------------------------------------------------------------------------------
// Unfold4d (im2col: [N, C * kh * kw, L], rows in (c, kh, kw) order)

Status lower_unfold4d(OpContext& ctx, const ir::Unfold4dOpIr& op) {
  const auto x = cpu_wide(ctx.in(op.x));
  if (x.dim() != 4)
    return ctx.invalid("unfold4d needs an input [N, C, H, W], got rank {}", x.dim());
  std::array<std::int64_t, 2> k, s, p, d, blocks;
  for (int i = 0; i < 2; ++i) {
    k[i] = static_cast<std::int64_t>(op.kernel_size[i]);
    s[i] = static_cast<std::int64_t>(op.options.stride[i]);
    p[i] = static_cast<std::int64_t>(op.options.padding[i]);
    d[i] = static_cast<std::int64_t>(op.options.dilation[i]);
    if (k[i] < 1 || s[i] < 1 || d[i] < 1) {
      return ctx.invalid("unfold4d kernel size, stride and dilation must be > 0");
    }
    const auto span = x.size(2 + i) + 2 * p[i] - d[i] * (k[i] - 1) - 1;
    if (span < 0) return ctx.invalid("unfold4d kernel larger than the padded input");
    blocks[i] = span / s[i] + 1;
  }
  const Sizes shape{x.size(0), x.size(1) * k[0] * k[1], blocks[0] * blocks[1]};
  if (x.numel() == 0 || numel(shape) == 0) return ctx.out(op.out, at::zeros(shape, x.options()));
  return ctx.out(op.out, at::im2col(x, k, d, p, s));
}

}  // namespace

Status lower_Module_BatchNorm(OpContext& ctx, const ir::BatchNormOpIr& op) {
  return lower_batch_norm(ctx, op);
}

Status lower_Module_LayerNorm(OpContext& ctx, const ir::LayerNormOpIr& op) {
  return lower_layer_norm(ctx, op);
}

Status lower_Module_Embedding(OpContext& ctx, const ir::EmbeddingOpIr& op) {
  return lower_embedding(ctx, op);
}

Status lower_Module_EmbeddingBackward(OpContext& ctx, const ir::EmbeddingBackwardOpIr& op) {
  return lower_embedding_backward(ctx, op);
}

Status lower_Module_Linear(OpContext& ctx, const ir::LinearOpIr& op) {
  return lower_linear(ctx, op);
}

Status lower_Module_LinearXBackward(OpContext& ctx, const ir::LinearXBackwardOpIr& op) {
  return lower_linear_x_backward(ctx, op);
}

Status lower_Module_LinearWeightBackward(OpContext& ctx, const ir::LinearWeightBackwardOpIr& op) {
  return lower_linear_weight_backward(ctx, op);
}

Status lower_Module_LinearBiasBackward(OpContext& ctx, const ir::LinearBiasBackwardOpIr& op) {
  return lower_linear_bias_backward(ctx, op);
}

Status lower_Module_AvgPool1d(OpContext& ctx, const ir::AvgPool1dOpIr& op) {
  return avg_pool_op(ctx, op.x, pool1d(op.kernel_size, op.stride, op.padding, 1, op.ceil_mode),
                     op.count_include_pad, 3, op.out);
}

Status lower_Module_AvgPool2d(OpContext& ctx, const ir::AvgPool2dOpIr& op) {
  return avg_pool_op(ctx, op.x, pool2d(op.kernel_size, op.stride, op.padding, {1, 1}, op.ceil_mode),
                     op.count_include_pad, 4, op.out);
}

Status lower_Module_AvgPool1dBackward(OpContext& ctx, const ir::AvgPool1dBackwardOpIr& op) {
  return avg_pool_backward_op(ctx, op.x, op.grad,
                              pool1d(op.kernel_size, op.stride, op.padding, 1, op.ceil_mode),
                              op.count_include_pad, 3, op.out);
}

Status lower_Module_AvgPool2dBackward(OpContext& ctx, const ir::AvgPool2dBackwardOpIr& op) {
  return avg_pool_backward_op(ctx, op.x, op.grad,
                              pool2d(op.kernel_size, op.stride, op.padding, {1, 1}, op.ceil_mode),
                              op.count_include_pad, 4, op.out);
}

Status lower_Module_AdaptiveAvgPool1d(OpContext& ctx, const ir::AdaptiveAvgPool1dOpIr& op) {
  TB_TRY_ASSIGN(auto x, as_4d(ctx, ctx.in(op.x), 3));
  const auto y = adaptive_avg_pool(x, {static_cast<std::int64_t>(op.output_size), 1});
  return ctx.out(op.out, y.squeeze(3));
}

Status lower_Module_AdaptiveAvgPool2d(OpContext& ctx, const ir::AdaptiveAvgPool2dOpIr& op) {
  TB_TRY_ASSIGN(auto x, as_4d(ctx, ctx.in(op.x), 4));
  return ctx.out(op.out, adaptive_avg_pool(x, {static_cast<std::int64_t>(op.output_size[0]),
                                               static_cast<std::int64_t>(op.output_size[1])}));
}

Status lower_Module_AdaptiveAvgPool3d(OpContext& ctx, const ir::AdaptiveAvgPool3dOpIr& op) {
  const auto& x = ctx.in(op.x);
  if (x.dim() != 5) return (ctx.invalid("adaptive_avg_pool3d needs rank 5, got {}", x.dim()));
  return ctx.out(op.out, adaptive_avg_pool(x, {static_cast<std::int64_t>(op.output_size[0]),
                                               static_cast<std::int64_t>(op.output_size[1]),
                                               static_cast<std::int64_t>(op.output_size[2])}));
}

Status lower_Module_AdaptiveAvgPool1dBackward(OpContext& ctx,
                                              const ir::AdaptiveAvgPool1dBackwardOpIr& op) {
  TB_TRY_ASSIGN(auto x, as_4d(ctx, ctx.in(op.x), 3));
  TB_TRY_ASSIGN(auto grad, as_4d(ctx, ctx.in(op.grad), 3));
  return ctx.out(op.out, adaptive_avg_pool_backward(x, grad).squeeze(3));
}

Status lower_Module_AdaptiveAvgPool2dBackward(OpContext& ctx,
                                              const ir::AdaptiveAvgPool2dBackwardOpIr& op) {
  TB_TRY_ASSIGN(auto x, as_4d(ctx, ctx.in(op.x), 4));
  TB_TRY_ASSIGN(auto grad, as_4d(ctx, ctx.in(op.grad), 4));
  return ctx.out(op.out, adaptive_avg_pool_backward(x, grad));
}

Status lower_Module_AdaptiveAvgPool3dBackward(OpContext& ctx,
                                              const ir::AdaptiveAvgPool3dBackwardOpIr& op) {
  const auto& x = ctx.in(op.x);
  const auto& grad = ctx.in(op.grad);
  if (x.dim() != 5 || grad.dim() != 5) {
    return (ctx.invalid("adaptive_avg_pool3d_backward needs rank 5"));
  }
  return ctx.out(op.out, adaptive_avg_pool_backward(x, grad));
}

Status lower_Module_MaxPool1d(OpContext& ctx, const ir::MaxPool1dOpIr& op) {
  return max_pool_op(ctx, op.x,
                     pool1d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode), 3,
                     op.out, nullptr);
}

Status lower_Module_MaxPool1dWithIndices(OpContext& ctx, const ir::MaxPool1dWithIndicesOpIr& op) {
  return max_pool_op(ctx, op.x,
                     pool1d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode), 3,
                     op.out, &op.out_indices);
}

Status lower_Module_MaxPool1dWithIndicesBackward(OpContext& ctx,
                                                 const ir::MaxPool1dWithIndicesBackwardOpIr& op) {
  return max_pool_backward_op(ctx, op.x, op.grad, op.indices, 3, op.out);
}

Status lower_Module_MaxPool2d(OpContext& ctx, const ir::MaxPool2dOpIr& op) {
  return max_pool_op(ctx, op.x,
                     pool2d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode), 4,
                     op.out, nullptr);
}

Status lower_Module_MaxPool2dWithIndices(OpContext& ctx, const ir::MaxPool2dWithIndicesOpIr& op) {
  return max_pool_op(ctx, op.x,
                     pool2d(op.kernel_size, op.stride, op.padding, op.dilation, op.ceil_mode), 4,
                     op.out, &op.out_indices);
}

Status lower_Module_MaxPool2dWithIndicesBackward(OpContext& ctx,
                                                 const ir::MaxPool2dWithIndicesBackwardOpIr& op) {
  return max_pool_backward_op(ctx, op.x, op.grad, op.indices, 4, op.out);
}

Status lower_Module_Interpolate(OpContext& ctx, const ir::InterpolateOpIr& op) {
  return lower_interpolate(ctx, op);
}

Status lower_Module_InterpolateBackward(OpContext& ctx, const ir::InterpolateBackwardOpIr& op) {
  return lower_interpolate_backward(ctx, op);
}

Status lower_Module_Attention(OpContext& ctx, const ir::AttentionOpIr& op) {
  return lower_attention(ctx, op);
}

Status lower_Module_CtcLoss(OpContext& ctx, const ir::CtcLossOpIr& op) {
  return lower_ctc_loss(ctx, op);
}

Status lower_Module_CtcLossBackward(OpContext& ctx, const ir::CtcLossBackwardOpIr& op) {
  return lower_ctc_loss_backward(ctx, op);
}

Status lower_Module_Unfold4d(OpContext& ctx, const ir::Unfold4dOpIr& op) {
  return lower_unfold4d(ctx, op);
}

}  // namespace tb::backend::libtorch
