// ModuleOperationIr's attention leaves: Attention, AttentionWithLogsumexp and AttentionBackward,
// with the semantics of Burn 0.23.0-pre.1's reference: burn-backend's attention_fallback,
// attention_with_logsumexp_default and attention_backward_default
// (burn-backend-0.23.0-pre.1/src/backend/ops/modules/attention.rs, cited as attention.rs), which
// burn-flex runs for the last two (it overrides only `attention`, burn-flex src/ops/module.rs:873).
//
// Conventions kept from Burn, where PyTorch differs:
// - A true mask entry masks OUT; softcap (c * tanh(s / c)) applies to the scaled scores before any
//   masking, the additive bias after it (attention.rs:263-306).
// - is_causal masks key j of query i where j > i + offset: offset = seq_k - seq_q for
//   CausalAlignment::BottomRight (the default, and what 0.22.1 did), 0 for TopLeft (PyTorch's
//   is_causal=True) (burn-std-0.23.0-pre.1/src/ops.rs:761-788).
// - GQA / MQA: query head h reads key/value head h / (heads / kv_heads). The query heads sharing
//   a key/value head are stacked as the rows of one matrix (attention.rs:225-259), so the
//   backward's matmuls sum their key and value gradients.
// - A query that sees no key (fully masked, or seq_k = 0) gives 0, not NaN, and its logsumexp is
//   f32's lowest finite value: no score reaches it, so the backward reads its probabilities back
//   as 0 and its gradients are 0.
// f16/bf16 are computed in f32 (as burn-flex's attention does, burn-flex src/ops/attention.rs:77)
// and f64 in f64; out() rounds to the declared dtypes. Burn's default narrows an f64 softmax to
// f32 (attention.rs:132): ours is at least as precise and agrees within f32's rounding.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include <ATen/ATen.h>

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"

namespace tb::backend::libtorch {

namespace {

using at::Tensor;

// Burn's AttentionShapes (attention.rs:14-92), validated as its `new` asserts.
struct Shapes {
  std::int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim, val_dim;
  std::int64_t groups() const { return heads / kv_heads; }
  // [batch, kv_heads, groups * seq_q, last]: the query heads sharing a key/value head as rows.
  Sizes grouped(std::int64_t last) const { return {batch, kv_heads, groups() * seq_q, last}; }
  Sizes per_query(std::int64_t last) const { return {batch, heads, seq_q, last}; }
};

Result<Shapes> attention_shapes(OpContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) {
    return ctx.invalid("attention needs query, key and value of rank 4, got {}, {} and {}",
                       shape_string(q.sizes()), shape_string(k.sizes()), shape_string(v.sizes()));
  }
  const Shapes s{q.size(0), q.size(1), k.size(1), q.size(2), k.size(2), q.size(3), v.size(3)};
  if (k.size(0) != s.batch || v.size(0) != s.batch)
    return ctx.invalid("attention: batch sizes of query, key and value differ");
  if (k.size(3) != s.head_dim) return ctx.invalid("attention: key head_dim mismatch");
  if (s.head_dim == 0) return ctx.invalid("attention: head_dim must be non-zero");
  if (v.size(1) != s.kv_heads) return ctx.invalid("attention: key and value head counts differ");
  if (v.size(2) != s.seq_k) return ctx.invalid("attention: key and value sequence lengths differ");
  if (s.kv_heads == 0 || s.heads % s.kv_heads != 0) {
    return ctx.invalid("attention: {} query heads cannot share {} key/value heads", s.heads,
                       s.kv_heads);
  }
  return s;
}

// AttentionModuleOptions resolved against the shapes.
struct Options {
  double scale;
  std::optional<double> softcap;
  std::optional<std::int64_t> causal_offset;
};

Result<Options> attention_options(OpContext& ctx, const ir::AttentionOptionsIr& o,
                                  const Shapes& s) {
  Options r;
  // `1 / sqrt(head_dim)` unless given (attention.rs:38-43).
  r.scale = o.scale ? o.scale->as_double() : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  if (o.softcap) {
    r.softcap = o.softcap->as_double();
    if (!(*r.softcap > 0))
      return ctx.invalid("attention: softcap must be positive, got {}", *r.softcap);
  }
  if (o.is_causal) {
    // CausalAlignment::offset (burn-std-0.23.0-pre.1/src/ops.rs:782-787).
    r.causal_offset = o.causal_alignment == ir::CausalAlignment::TopLeft ? 0 : s.seq_k - s.seq_q;
  }
  return r;
}

// query · keyᵀ · scale as [batch, heads, seq_q, seq_k] (attention.rs:231-259).
Tensor scaled_products(const Tensor& q, const Tensor& k, const Shapes& s, double scale) {
  const auto qk = at::matmul(q.reshape(s.grouped(s.head_dim)), k.transpose(-2, -1));
  return (qk * scale).reshape(s.per_query(s.seq_k));
}

// The (capped) scores with the bool and causal masks, then the bias, in Burn's order
// (attention.rs:263-306).
Tensor masked_scores(Tensor scores, const Options& o, const Shapes& s,
                     const std::optional<Tensor>& mask, const std::optional<Tensor>& bias) {
  if (mask) scores = scores.masked_fill(mask->to(at::kBool), -kInf);
  if (o.causal_offset) {
    const auto long_opts = scores.options().dtype(at::kLong);
    const auto rows = at::arange(s.seq_q, long_opts).view({s.seq_q, 1}) + *o.causal_offset;
    const auto cols = at::arange(s.seq_k, long_opts).view({1, s.seq_k});
    scores = scores.masked_fill(cols > rows, -kInf);
  }
  if (bias) scores = scores + same_type(*bias, scores);
  return scores;
}

// Softcap before any masking, so that tanh never turns -inf into a finite score (attention.rs:270).
Tensor capped(const Tensor& products, const Options& o) {
  return o.softcap ? at::tanh(products / *o.softcap) * *o.softcap : products;
}

// Burn's NaN-safe Softmax (attention.rs:318-341): the max clamped to `lowest` and the sum to
// `tiny`, so that a fully masked row gives probabilities 0 and logsumexp max + log(sum).
struct Softmax {
  Tensor probabilities, max, sum;
};
Softmax safe_softmax(const Tensor& scores, double lowest, double tiny) {
  Softmax r;
  r.max = scores.amax(-1, true).clamp_min(lowest);
  const auto numerator = at::exp(scores - r.max);
  r.sum = numerator.sum(-1, true).clamp_min(tiny);
  r.probabilities = numerator / r.sum;
  return r;
}

// probabilities · value as [batch, heads, seq_q, val_dim] (attention.rs:345-360).
Tensor context(const Tensor& probabilities, const Tensor& v, const Shapes& s) {
  return at::matmul(probabilities.reshape(s.grouped(s.seq_k)), v).reshape(s.per_query(s.val_dim));
}

struct Qkv {
  Tensor q, k, v;
};
Qkv qkv_in(OpContext& ctx, const ir::TensorIr& q, const ir::TensorIr& k, const ir::TensorIr& v) {
  Qkv r;
  r.q = widen(ctx.in(q));
  r.k = same_type(ctx.in(k), r.q);
  r.v = same_type(ctx.in(v), r.q);
  return r;
}

constexpr double kF32Lowest = std::numeric_limits<float>::lowest();
constexpr double kF32Tiny = std::numeric_limits<float>::min();

}  // namespace

// Burn's attention_fallback (attention.rs:99-112); burn-flex's kernel (src/ops/attention.rs:
// 248-416) agrees, giving 0 for fully masked rows and for seq_k = 0.
Status lower_Module_Attention(OpContext& ctx, const ir::AttentionOpIr& op) {
  const auto in = qkv_in(ctx, op.query, op.key, op.value);
  TB_TRY_ASSIGN(const auto s, attention_shapes(ctx, in.q, in.k, in.v));
  TB_TRY_ASSIGN(const auto o, attention_options(ctx, op.options, s));
  if (s.seq_k == 0 || s.batch * s.heads * s.seq_q * s.val_dim == 0)
    return ctx.out(op.out, at::zeros(s.per_query(s.val_dim), in.q.options()));
  const auto scores = masked_scores(capped(scaled_products(in.q, in.k, s, o.scale), o), o, s,
                                    ctx.in(op.mask), ctx.in(op.attn_bias));
  // The softmax in the computation's own precision, as attention_fallback's Softmax::new.
  const bool f64 = scores.scalar_type() == at::kDouble;
  const auto softmax =
      safe_softmax(scores, f64 ? std::numeric_limits<double>::lowest() : kF32Lowest,
                   f64 ? std::numeric_limits<double>::min() : kF32Tiny);
  return ctx.out(op.out, context(softmax.probabilities, in.v, s));
}

// attention_with_logsumexp_default (attention.rs:122-139): no mask, no bias; logsumexp
// [batch, heads, seq_q] in f32 (burn-ir-0.23.0-pre.1/src/builder.rs:1658-1660).
Status lower_Module_AttentionWithLogsumexp(OpContext& ctx,
                                           const ir::AttentionWithLogsumexpOpIr& op) {
  const auto in = qkv_in(ctx, op.query, op.key, op.value);
  TB_TRY_ASSIGN(const auto s, attention_shapes(ctx, in.q, in.k, in.v));
  TB_TRY_ASSIGN(const auto o, attention_options(ctx, op.options, s));
  const Sizes lse_shape{s.batch, s.heads, s.seq_q};
  if (s.batch * s.heads * s.seq_q * s.seq_k == 0) {
    // No key at all reads as a fully masked row (burn-flex would panic in max_dim over an empty
    // axis, src/ops/reduce.rs:1605-1609): output 0, logsumexp what a fully masked row holds.
    TB_TRY(ctx.out(op.out, at::zeros(s.per_query(s.val_dim), in.q.options())));
    return ctx.out(op.logsumexp, at::full(lse_shape, kF32Lowest, in.q.options()));
  }
  const auto scores =
      masked_scores(capped(scaled_products(in.q, in.k, s, o.scale), o), o, s, {}, {});
  // f32's clamps whatever the computation's type, since Burn's softmax here runs in f32: a fully
  // masked row's logsumexp is f32::MIN + log(f32::MIN_POSITIVE), which rounds to f32::MIN.
  const auto softmax = safe_softmax(scores, kF32Lowest, kF32Tiny);
  TB_TRY(ctx.out(op.out, context(softmax.probabilities, in.v, s)));
  return ctx.out(op.logsumexp, (softmax.max + at::log(softmax.sum)).reshape(lse_shape));
}

// attention_backward_default (attention.rs:150-223). As there, the probabilities are read back
// from the given logsumexp, p = exp(score - logsumexp), and delta = sum(out_grad * out) uses the
// given out: for the forward's out and logsumexp, these are the exact gradients,
//   dV = pᵀ dO,  dS = p ⊙ (dO Vᵀ − delta) ⊙ (1 − tanh²(s / c)) · scale,  dQ = dS K,  dK = dSᵀ Q,
// with a masked score's p = 0 giving it no gradient.
Status lower_Module_AttentionBackward(OpContext& ctx, const ir::AttentionBackwardOpIr& op) {
  const auto in = qkv_in(ctx, op.query, op.key, op.value);
  TB_TRY_ASSIGN(const auto s, attention_shapes(ctx, in.q, in.k, in.v));
  TB_TRY_ASSIGN(const auto o, attention_options(ctx, op.options, s));
  const auto out = same_type(ctx.in(op.out), in.q);
  const auto out_grad = same_type(ctx.in(op.out_grad), in.q);
  const auto logsumexp = same_type(ctx.in(op.logsumexp), in.q);
  const auto expected = s.per_query(s.val_dim);
  if (out.sizes() != at::IntArrayRef(expected) || out_grad.sizes() != at::IntArrayRef(expected)) {
    return ctx.invalid("attention_backward: out and out_grad must be {}, got {} and {}",
                       shape_string(expected), shape_string(out.sizes()),
                       shape_string(out_grad.sizes()));
  }
  if (logsumexp.numel() != s.batch * s.heads * s.seq_q) {
    return ctx.invalid("attention_backward: logsumexp must be [{}, {}, {}], got {}", s.batch,
                       s.heads, s.seq_q, shape_string(logsumexp.sizes()));
  }
  if (s.batch * s.heads * s.seq_q * s.seq_k * s.val_dim == 0) {
    // Nothing reaches the output (no query, key or value component): every gradient is 0.
    TB_TRY(ctx.out(op.query_grad, at::zeros_like(in.q)));
    TB_TRY(ctx.out(op.key_grad, at::zeros_like(in.k)));
    return ctx.out(op.value_grad, at::zeros_like(in.v));
  }
  const auto products = scaled_products(in.q, in.k, s, o.scale);
  // tanh(s / c) of the scaled products, for the softcap and its derivative (attention.rs:172).
  Tensor tanh;
  if (o.softcap) tanh = at::tanh(products / *o.softcap);
  const auto scores = masked_scores(o.softcap ? tanh * *o.softcap : products, o, s, {}, {});
  const auto p = at::exp(scores - logsumexp.reshape(s.per_query(1))).reshape(s.grouped(s.seq_k));
  const auto delta = (out_grad * out).sum(-1, true).reshape(s.grouped(1));
  const auto dout = out_grad.reshape(s.grouped(s.val_dim));
  const auto value_grad = at::matmul(p.transpose(-2, -1), dout);
  auto scores_grad = p * (at::matmul(dout, in.v.transpose(-2, -1)) - delta);
  // d(c · tanh(s / c)) / ds = 1 − tanh²(s / c) (attention.rs:197-208).
  if (o.softcap) scores_grad = scores_grad * (1 - tanh * tanh).reshape(s.grouped(s.seq_k));
  scores_grad = scores_grad * o.scale;
  const auto query_grad = at::matmul(scores_grad, in.k).reshape(s.per_query(s.head_dim));
  const auto key_grad =
      at::matmul(scores_grad.transpose(-2, -1), in.q.reshape(s.grouped(s.head_dim)));
  TB_TRY(ctx.out(op.query_grad, query_grad));
  TB_TRY(ctx.out(op.key_grad, key_grad));
  return ctx.out(op.value_grad, value_grad);
}

}  // namespace tb::backend::libtorch
