// ActivationOperationIr: the activation functions and their backward passes, with burn-flex's
// formulas (which override the ActivationOps defaults where they differ: exact erf GELU gradient,
// NaN-preserving ReLU backward, numerically stable sigmoid / log-sigmoid).
//
// f16 / bf16 are computed in f32 and rounded once when stored, as burn-flex's fused kernels do.
#include <cmath>

#include "lowering.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::OpKind;

bool is_half(at::ScalarType st) {
  return st == at::kHalf || st == at::kBFloat16;
}

at::Tensor widen(const at::Tensor& t) {
  return is_half(t.scalar_type()) ? t.to(at::kFloat) : t;
}

// Two operands in one compute type (f64 if either is f64, f32 otherwise).
std::pair<at::Tensor, at::Tensor> widen2(const at::Tensor& a, const at::Tensor& b) {
  at::ScalarType st = at::promote_types(a.scalar_type(), b.scalar_type());
  if (is_half(st) || !at::isFloatingType(st)) st = at::kFloat;
  return {a.to(st), b.to(st)};
}

// burn-flex sigmoid_f32/f64: 1 / (1 + e^−x) for x ≥ 0, e^x / (1 + e^x) otherwise, so neither
// branch overflows and tiny results keep their precision.
at::Tensor stable_sigmoid(const at::Tensor& x) {
  const at::Tensor e = at::exp(x);
  return at::where(x.ge(0), at::reciprocal(1 + at::exp(-x)), e / (1 + e));
}

template <OpKind K, class F>
void unary(LoweringTable& t, F f) {
  t.on<K>([f](OpContext& ctx, const ir::UnaryOpIr& op) -> Status {
    return ctx.out(op.out, f(widen(ctx.in(op.input))));
  });
}

template <OpKind K, class F>
void binary(LoweringTable& t, F f) {
  t.on<K>([f](OpContext& ctx, const ir::BinaryOpIr& op) -> Status {
    const auto [lhs, rhs] = widen2(ctx.in(op.lhs), ctx.in(op.rhs));
    return ctx.out(op.out, f(lhs, rhs));
  });
}

template <OpKind K, class F>
void along_dim(LoweringTable& t, F f) {
  t.on<K>([f](OpContext& ctx, const ir::DimOpIr& op) -> Status {
    const at::Tensor x = widen(ctx.in(op.input));
    const auto dim = static_cast<std::int64_t>(op.axis);
    if (dim >= x.dim()) {
      return ctx.invalid("axis {} is out of range for a tensor of rank {}", dim, x.dim());
    }
    return ctx.out(op.out, f(x, dim));
  });
}

}  // namespace

void register_activation_ops(LoweringTable& t) {
  // x ≤ 0 → 0 (so −0 → +0), NaN propagates: exactly ATen's threshold(x, 0, 0) (`x <= 0 ? 0 :
  // x`), one kernel where a where/le pair took three (relu is the commonest op in a model).
  unary<OpKind::Activation_Relu>(t, [](const at::Tensor& x) { return at::threshold(x, 0, 0); });
  // lhs = the forward OUTPUT: the gradient passes where it is > 0 or NaN (burn-flex), which is
  // threshold_backward's `y <= 0 ? 0 : g` (NaN compares false).
  binary<OpKind::Activation_ReluBackward>(
      t, [](const at::Tensor& y, const at::Tensor& g) { return at::threshold_backward(g, y, 0); });
  t.on<OpKind::Activation_LeakyRelu>([](OpContext& ctx, const ir::ScalarOpIr& op) -> Status {
    const at::Tensor x = widen(ctx.in(op.lhs));
    return ctx.out(op.out, at::where(x.ge(0), x, x * op.rhs.as_double()));
  });
  // alpha arrives shaped for broadcasting ([1, C, 1, …] or all ones) by burn-tensor.
  binary<OpKind::Activation_PRelu>(t, [](const at::Tensor& x, const at::Tensor& alpha) {
    return at::where(x.ge(0), x, alpha * x);
  });
  // Exact (erf) GELU: 0.5·x·(1 + erf(x/√2)).
  unary<OpKind::Activation_Gelu>(
      t, [](const at::Tensor& x) { return 0.5 * x * (1 + at::erf(x / M_SQRT2)); });
  // lhs = the forward INPUT; the exact derivative (burn-flex and burn-tch; the trait default
  // uses a tanh approximation): grad · (Φ(x) + x·φ(x)).
  binary<OpKind::Activation_GeluBackward>(t, [](const at::Tensor& x, const at::Tensor& g) {
    const at::Tensor cdf = 0.5 * (1 + at::erf(x / M_SQRT2));
    const at::Tensor pdf = at::exp(-0.5 * x * x) * (1.0 / std::sqrt(2.0 * M_PI));
    return g * (cdf + x * pdf);
  });
  unary<OpKind::Activation_Sigmoid>(t, stable_sigmoid);
  // lhs = the forward OUTPUT s: grad · s · (1 − s).
  binary<OpKind::Activation_SigmoidBackward>(
      t, [](const at::Tensor& s, const at::Tensor& g) { return g * s * (1 - s); });
  // clamp(alpha·x + beta, 0, 1) with free alpha / beta (not at::hardsigmoid).
  t.on<OpKind::Activation_HardSigmoid>([](OpContext& ctx, const ir::HardSigmoidOpIr& op) -> Status {
    const at::Tensor x = widen(ctx.in(op.tensor));
    return ctx.out(op.out, (x * op.alpha.as_double() + op.beta.as_double()).clamp(0.0, 1.0));
  });
  // burn-flex: −log1p(e^−x) for x ≥ 0, x − log1p(e^x) otherwise.
  unary<OpKind::Activation_LogSigmoid>(t, [](const at::Tensor& x) {
    return at::where(x.ge(0), -at::log1p(at::exp(-x)), x - at::log1p(at::exp(x)));
  });
  // lhs = the forward INPUT: grad · σ(−x).
  binary<OpKind::Activation_LogSigmoidBackward>(
      t, [](const at::Tensor& x, const at::Tensor& g) { return g * stable_sigmoid(-x); });
  along_dim<OpKind::Activation_Softmax>(
      t, [](const at::Tensor& x, std::int64_t dim) { return at::softmax(x, dim); });
  along_dim<OpKind::Activation_LogSoftmax>(
      t, [](const at::Tensor& x, std::int64_t dim) { return at::log_softmax(x, dim); });
  along_dim<OpKind::Activation_Softmin>(
      t, [](const at::Tensor& x, std::int64_t dim) { return at::softmax(-x, dim); });
}

}  // namespace tb::backend::libtorch
