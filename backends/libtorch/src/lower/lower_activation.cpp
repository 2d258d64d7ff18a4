// ActivationOperationIr: the activation functions and their backward passes, with burn-flex's
// formulas (which override the ActivationOps defaults where they differ: exact erf GELU gradient,
// NaN-preserving ReLU backward, numerically stable sigmoid / log-sigmoid).
//
// f16 / bf16 are computed in f32 and rounded once when stored, as burn-flex's fused kernels do.
#include <cmath>

#include "lower/lower_families.hpp"

namespace tb::backend::libtorch {

namespace {

using ir::OpKind;

// burn-flex sigmoid_f32/f64: 1 / (1 + e^−x) for x ≥ 0, e^x / (1 + e^x) otherwise, so neither
// branch overflows and tiny results keep their precision.
at::Tensor stable_sigmoid(const at::Tensor& x) {
  const at::Tensor e = at::exp(x);
  return at::where(x.ge(0), at::reciprocal(1 + at::exp(-x)), e / (1 + e));
}

}  // namespace

// x ≤ 0 → 0 (so −0 → +0), NaN propagates: exactly ATen's threshold(x, 0, 0) (`x <= 0 ? 0 :
// x`), one kernel where a where/le pair took three (relu is the commonest op in a model).
Status lower_Activation_Relu(OpContext& ctx, const ir::UnaryOpIr& op) {
  return unary_float(ctx, op, [](const at::Tensor& x) { return at::threshold(x, 0, 0); });
}

// lhs = the forward OUTPUT: the gradient passes where it is > 0 or NaN (burn-flex), which is
// threshold_backward's `y <= 0 ? 0 : g` (NaN compares false).
Status lower_Activation_ReluBackward(OpContext& ctx, const ir::BinaryOpIr& op) {
  return binary_float(ctx, op, [](const at::Tensor& y, const at::Tensor& g) {
    return at::threshold_backward(g, y, 0);
  });
}

Status lower_Activation_LeakyRelu(OpContext& ctx, const ir::ScalarOpIr& op) {
  const at::Tensor x = widen(ctx.in(op.lhs));
  return ctx.out(op.out, at::where(x.ge(0), x, x * op.rhs.as_double()));
}

// alpha arrives shaped for broadcasting ([1, C, 1, …] or all ones) by burn-tensor.
Status lower_Activation_PRelu(OpContext& ctx, const ir::BinaryOpIr& op) {
  return binary_float(ctx, op, [](const at::Tensor& x, const at::Tensor& alpha) {
    return at::where(x.ge(0), x, alpha * x);
  });
}

// Exact (erf) GELU: 0.5·x·(1 + erf(x/√2)).
Status lower_Activation_Gelu(OpContext& ctx, const ir::UnaryOpIr& op) {
  return unary_float(ctx, op,
                     [](const at::Tensor& x) { return 0.5 * x * (1 + at::erf(x / M_SQRT2)); });
}

// lhs = the forward INPUT; the exact derivative (burn-flex and burn-tch; the trait default
// uses a tanh approximation): grad · (Φ(x) + x·φ(x)).
Status lower_Activation_GeluBackward(OpContext& ctx, const ir::BinaryOpIr& op) {
  return binary_float(ctx, op, [](const at::Tensor& x, const at::Tensor& g) {
    const at::Tensor cdf = 0.5 * (1 + at::erf(x / M_SQRT2));
    const at::Tensor pdf = at::exp(-0.5 * x * x) * (1.0 / std::sqrt(2.0 * M_PI));
    return g * (cdf + x * pdf);
  });
}

Status lower_Activation_Sigmoid(OpContext& ctx, const ir::UnaryOpIr& op) {
  return unary_float(ctx, op, stable_sigmoid);
}

// lhs = the forward OUTPUT s: grad · s · (1 − s).
Status lower_Activation_SigmoidBackward(OpContext& ctx, const ir::BinaryOpIr& op) {
  return binary_float(ctx, op,
                      [](const at::Tensor& s, const at::Tensor& g) { return g * s * (1 - s); });
}

// clamp(alpha·x + beta, 0, 1) with free alpha / beta (not at::hardsigmoid).
Status lower_Activation_HardSigmoid(OpContext& ctx, const ir::HardSigmoidOpIr& op) {
  const at::Tensor x = widen(ctx.in(op.tensor));
  return ctx.out(op.out, (x * op.alpha.as_double() + op.beta.as_double()).clamp(0.0, 1.0));
}

// burn-flex: −log1p(e^−x) for x ≥ 0, x − log1p(e^x) otherwise.
Status lower_Activation_LogSigmoid(OpContext& ctx, const ir::UnaryOpIr& op) {
  return unary_float(ctx, op, [](const at::Tensor& x) {
    return at::where(x.ge(0), -at::log1p(at::exp(-x)), x - at::log1p(at::exp(x)));
  });
}

// lhs = the forward INPUT: grad · σ(−x).
Status lower_Activation_LogSigmoidBackward(OpContext& ctx, const ir::BinaryOpIr& op) {
  return binary_float(
      ctx, op, [](const at::Tensor& x, const at::Tensor& g) { return g * stable_sigmoid(-x); });
}

Status lower_Activation_Softmin(OpContext& ctx, const ir::DimOpIr& op) {
  return along_dim(ctx, op,
                   [](const at::Tensor& x, std::int64_t dim) { return at::softmax(-x, dim); });
}

}  // namespace tb::backend::libtorch
