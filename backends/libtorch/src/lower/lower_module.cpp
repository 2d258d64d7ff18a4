// ModuleOperationIr except the convolutions (lower_conv.cpp, lower_deform_conv.cpp), pooling
// (lower_pool.cpp), interpolation (lower_interpolate.cpp) and attention (lower_attention.cpp):
// normalisation, embedding, linear, CTC loss and unfold, with the semantics of Burn 0.22.1's
// ModuleOps (trait defaults and burn-flex, the reference backend).
//
// Conventions kept from Burn, where PyTorch differs:
// - Linear's weight is [d_input, d_output]: y = x @ W (+ b).
// - CtcLoss: log_probs [T, N, C], per-sample loss [N]; an input length of 0 reads alpha at t = 0
//   like Burn's default (decomposed) implementation. CtcLossBackward is Burn's
//   ctc_grad_from_alpha_beta_default: PyTorch's gradient with samples of infinite loss zeroed.
// Half-precision inputs are computed in f32 (on CPU always, since several ATen CPU kernels lack
// f16; for the numerically sensitive ops everywhere, as burn-flex does) and cast back by out().
#include <algorithm>
#include <vector>

#include <ATen/ATen.h>

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"

namespace tb::backend::libtorch {

namespace {

using at::Tensor;

// Lengths and the like, read to the host.
std::vector<std::int64_t> host_longs(const Tensor& t) {
  const auto c = t.to(at::kCPU, at::kLong).contiguous();
  return std::vector<std::int64_t>(c.data_ptr<std::int64_t>(),
                                   c.data_ptr<std::int64_t>() + c.numel());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BatchNorm, LayerNorm

Status lower_Module_BatchNorm(OpContext& ctx, const ir::BatchNormOpIr& op) {
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

Status lower_Module_LayerNorm(OpContext& ctx, const ir::LayerNormOpIr& op) {
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

Status lower_Module_Embedding(OpContext& ctx, const ir::EmbeddingOpIr& op) {
  const auto& w = ctx.in(op.weights);
  const auto& idx = ctx.in(op.indices);
  if (w.dim() != 2 || idx.dim() != 2) {
    return ctx.invalid("embedding needs weights [n, d] and indices [batch, seq], got {} and {}",
                       shape_string(w.sizes()), shape_string(idx.sizes()));
  }
  const auto rows = w.index_select(0, idx.reshape({idx.numel()}).to(at::kLong));
  return ctx.out(op.out, rows.reshape({idx.size(0), idx.size(1), w.size(1)}));
}

Status lower_Module_EmbeddingBackward(OpContext& ctx, const ir::EmbeddingBackwardOpIr& op) {
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

namespace {

// `t` as [rows, last] where rows is the product of the leading dims.
Tensor flatten_leading(const Tensor& t) {
  const auto last = t.dim() == 0 ? 1 : t.size(-1);
  std::int64_t rows = 1;
  for (std::int64_t i = 0; i + 1 < t.dim(); ++i) rows *= t.size(i);
  return t.reshape({rows, last});
}

}  // namespace

Status lower_Module_Linear(OpContext& ctx, const ir::LinearOpIr& op) {
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

Status lower_Module_LinearXBackward(OpContext& ctx, const ir::LinearXBackwardOpIr& op) {
  const auto g = cpu_wide(ctx.in(op.output_grad));
  const auto w = same_type(ctx.in(op.weight), g);
  if (g.dim() < 1 || w.dim() != 2)
    return ctx.invalid("linear_x_backward needs weight [d_in, d_out]");
  return ctx.out(op.out, at::matmul(g, w.t()));
}

Status lower_Module_LinearWeightBackward(OpContext& ctx, const ir::LinearWeightBackwardOpIr& op) {
  const auto g = cpu_wide(ctx.in(op.output_grad));
  const auto x = same_type(ctx.in(op.x), g);
  if (g.dim() < 1 || x.dim() < 1) return ctx.invalid("linear_weight_backward needs rank >= 1");
  // x^T @ output_grad over the flattened batch dims.
  return ctx.out(op.out, at::matmul(flatten_leading(x).t(), flatten_leading(g)));
}

Status lower_Module_LinearBiasBackward(OpContext& ctx, const ir::LinearBiasBackwardOpIr& op) {
  const auto g = widen(ctx.in(op.output_grad));
  if (g.dim() < 1) return ctx.invalid("linear_bias_backward needs rank >= 1");
  return ctx.out(op.out, flatten_leading(g).sum(0));
}

// ---------------------------------------------------------------------------------------------
// CTC loss

namespace {

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

}  // namespace

Status lower_Module_CtcLoss(OpContext& ctx, const ir::CtcLossOpIr& op) {
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

Status lower_Module_CtcLossBackward(OpContext& ctx, const ir::CtcLossBackwardOpIr& op) {
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

Status lower_Module_Unfold4d(OpContext& ctx, const ir::Unfold4dOpIr& op) {
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

}  // namespace tb::backend::libtorch
