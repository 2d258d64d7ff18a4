// ModuleOperationIr pooling: {Avg,Max}Pool{1,2}d (max with indices), AdaptiveAvgPool{1,2,3}d and
// their backward ops, with Burn 0.22.1's semantics (split from lower_module.cpp).
#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "lower_families.hpp"
#include "module_util.hpp"

namespace tb::backend::libtorch {

namespace {

using at::Tensor;

// ---------------------------------------------------------------------------------------------
// Pooling. Everything runs on 4-d [N, C, H, W] (1-d as [N, C, L, 1]).
//
// Convention kept from Burn, where PyTorch differs:
// - Pools accept any padding (ATen refuses padding > kernel / 2): such cases are computed by
//   padding explicitly. Max-pool indices are flat indices into each input plane (h * W + w); a
//   window with no input element yields -inf and index -1, a window of -inf values the index of
//   its first input element.

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

}  // namespace

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

}  // namespace tb::backend::libtorch
