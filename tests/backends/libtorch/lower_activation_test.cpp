// ActivationOperationIr lowering (lower_activation.cpp). Expected values follow burn-flex's
// activation kernels (exact GELU gradient, NaN-preserving ReLU backward, stable sigmoid /
// log-sigmoid) computed here in double precision.
#include <cmath>
#include <limits>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

double f16(double v) {
  return static_cast<float>(c10::Half(static_cast<float>(v)));
}
double bf16(double v) {
  return static_cast<float>(c10::BFloat16(static_cast<float>(v)));
}
double sigmoid(double x) {
  return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
}
double log_sigmoid(double x) {
  return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x));
}
double gelu(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
double gelu_grad(double x) {
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
         x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
}
std::vector<double> map(const std::vector<double>& x, double (*f)(double)) {
  std::vector<double> out;
  for (double v : x) out.push_back(f(v));
  return out;
}

class ActivationOp : public OpTest {
 protected:
  TensorIr input(Dims dims, DType dtype, const std::vector<double>& values) {
    auto t = tir(next_++, std::move(dims), dtype);
    put(t, values);
    return t;
  }
  TensorIr output(Dims dims, DType dtype) { return out(next_++, std::move(dims), dtype); }

  template <OpKind K>
  std::vector<double> unary(const std::vector<double>& x, DType d = DTypeKind::F32) {
    const auto a = input({x.size()}, d, x);
    const auto o = output({x.size()}, d);
    run(make_op<K>(UnaryOpIr{a, o}));
    return get(o);
  }
  template <OpKind K>
  std::vector<double> binary(const std::vector<double>& l, const std::vector<double>& r,
                             DType d = DTypeKind::F32) {
    const auto a = input({l.size()}, d, l);
    const auto b = input({r.size()}, d, r);
    const auto o = output({l.size()}, d);
    run(make_op<K>(BinaryOpIr{a, b, o}));
    return get(o);
  }
  template <OpKind K>
  std::vector<double> along(Dims dims, const std::vector<double>& x, std::uint64_t axis,
                            DType d = DTypeKind::F32) {
    const auto a = input(dims, d, x);
    const auto o = output(dims, d);
    run(make_op<K>(DimOpIr{a, o, axis}));
    return get(o);
  }

  std::uint64_t next_ = 1;
};

// ---- ReLU family
// -----------------------------------------------------------------------------------

class Activation_Relu : public ActivationOp {};
TEST_F(Activation_Relu, ZeroesNonPositivesKeepsNaN) {
  const std::vector<double> x = {-2, -0.0, 0, 3, kNaN, -kInf, kInf, 1e-30};
  const std::vector<double> want = {0, 0, 0, 3, kNaN, 0, kInf, static_cast<float>(1e-30)};
  expect_near(unary<OpKind::Activation_Relu>(x), want, 0);
  EXPECT_FALSE(std::signbit(unary<OpKind::Activation_Relu>({-0.0})[0])) << "-0 → +0";
  expect_near(unary<OpKind::Activation_Relu>({-1, 2.5, kNaN}, DTypeKind::F16), {0, 2.5, kNaN}, 0);
  expect_near(unary<OpKind::Activation_Relu>({-1, 2.5}, DTypeKind::BF16), {0, 2.5}, 0);
  expect_near(unary<OpKind::Activation_Relu>({-1, 1e300}, DTypeKind::F64), {0, 1e300}, 0);
}
TEST_F(Activation_Relu, RankZeroEmptyNonContiguousReadWrite) {
  EXPECT_TRUE(unary<OpKind::Activation_Relu>({}).empty());
  const auto s = input({}, DTypeKind::F32, {-3});
  const auto so = output({}, DTypeKind::F32);
  const auto live = exec->stats().live_tensors;
  run(make_op<OpKind::Activation_Relu>(UnaryOpIr{rw(s), so}));
  EXPECT_EQ(get(so), (std::vector<double>{0}));
  EXPECT_EQ(exec->stats().live_tensors, live) << "the ReadWrite input was freed";
  const auto m = input({2, 2}, DTypeKind::F32, {-1, 2, 3, -4});
  const auto o = output({2, 2}, DTypeKind::F32);
  run(make_op<OpKind::Activation_Relu>(UnaryOpIr{transposed(m), o}));
  EXPECT_EQ(get(o), (std::vector<double>{0, 3, 2, 0}));
}

// Long enough for ATen's vectorised kernels (several SIMD widths plus a tail): -0, NaN and the
// infinities in every lane position keep Burn's semantics there too.
TEST_F(Activation_Relu, VectorisedLanesKeepBurnSemantics) {
  const std::vector<double> pattern = {-2, -0.0, 0, 3, kNaN, -kInf, kInf, 1e-30, -1e-30};
  std::vector<double> x, want;
  for (int i = 0; i < 67; ++i) {
    const double v = pattern[i % pattern.size()];
    x.push_back(v);
    want.push_back(std::isnan(v) ? v : (v <= 0 ? 0.0 : static_cast<float>(v)));
  }
  const auto got = unary<OpKind::Activation_Relu>(x);
  expect_near(got, want, 0);
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_FALSE(std::signbit(got[i])) << "at " << i << ": -0 and negatives become +0";
}

class Activation_ReluBackward : public ActivationOp {};
TEST_F(Activation_ReluBackward, LhsIsTheForwardOutput) {
  // The gradient passes where the output is > 0 or NaN (burn-flex), not where it is 0.
  expect_near(binary<OpKind::Activation_ReluBackward>({-1, 0, 2, kNaN}, {5, 5, 5, 5}), {0, 0, 5, 5},
              0);
  expect_near(binary<OpKind::Activation_ReluBackward>({0, 0.5}, {1.5, kNaN}, DTypeKind::F16),
              {0, kNaN}, 0);
  expect_near(binary<OpKind::Activation_ReluBackward>({3, 0}, {-2, 7}, DTypeKind::F64), {-2, 0}, 0);
}

TEST_F(Activation_ReluBackward, VectorisedLanesPassNaNOutputsAndStopAtZero) {
  const std::vector<double> outputs = {-1, 0, -0.0, 2, kNaN, kInf};
  std::vector<double> y, g, want;
  for (int i = 0; i < 61; ++i) {
    const double v = outputs[i % outputs.size()];
    y.push_back(v);
    g.push_back(i % 7 == 3 ? kNaN : i - 30.5);
    want.push_back(v > 0 || std::isnan(v) ? g.back() : 0.0);
  }
  expect_near(binary<OpKind::Activation_ReluBackward>(y, g), want, 0);
}

class Activation_LeakyRelu : public ActivationOp {
 protected:
  std::vector<double> leaky(const std::vector<double>& x, ScalarIr slope,
                            DType d = DTypeKind::F32) {
    const auto a = input({x.size()}, d, x);
    const auto o = output({x.size()}, d);
    run(make_op<OpKind::Activation_LeakyRelu>(ScalarOpIr{a, slope, o}));
    return get(o);
  }
};
TEST_F(Activation_LeakyRelu, ScalesNegatives) {
  expect_near(leaky({-2, 0, 3, kNaN, -kInf}, ScalarIr::f(0.1)),
              {static_cast<float>(-2 * static_cast<float>(0.1)), 0, 3, kNaN, -kInf});
  expect_near(leaky({-4, 4}, ScalarIr::i(2), DTypeKind::F64), {-8, 4}, 0);
  expect_near(leaky({-3, 1.5}, ScalarIr::f(0.01), DTypeKind::BF16), {bf16(-0.03), 1.5}, 1e-2);
}

class Activation_PRelu : public ActivationOp {};
TEST_F(Activation_PRelu, PerChannelAlphaBroadcasts) {
  // x [1, 2, 1, 2], alpha [1, 2, 1, 1] as burn-tensor ships it.
  const auto x = input({1, 2, 1, 2}, DTypeKind::F32, {-2, 3, -4, 5});
  const auto alpha = input({1, 2, 1, 1}, DTypeKind::F32, {0.1, 0.5});
  const auto o = output({1, 2, 1, 2}, DTypeKind::F32);
  run(make_op<OpKind::Activation_PRelu>(BinaryOpIr{x, alpha, o}));
  expect_near(get(o), {-0.2, 3, -2, 5});
  // A single weight reshaped to all ones; NaN stays NaN.
  const auto y = input({2, 2}, DTypeKind::F16, {-2, kNaN, 0, 1});
  const auto a1 = input({1, 1}, DTypeKind::F16, {0.25});
  const auto o1 = output({2, 2}, DTypeKind::F16);
  run(make_op<OpKind::Activation_PRelu>(BinaryOpIr{y, a1, o1}));
  expect_near(get(o1), {-0.5, kNaN, 0, 1}, 0);
}

// ---- GELU ---------------------------------------------------------------------------------------

class Activation_Gelu : public ActivationOp {};
TEST_F(Activation_Gelu, ExactErfForm) {
  const std::vector<double> x = {0, 1, -1, 3, -3, 0.5, kNaN, kInf, -kInf};
  std::vector<double> want = map(x, gelu);
  want[8] = kNaN;  // −inf · (1 + erf(−inf)) = −inf · 0
  expect_near(unary<OpKind::Activation_Gelu>(x), want, 1e-6);
  expect_near(unary<OpKind::Activation_Gelu>(x, DTypeKind::F64), want, 1e-14);
  expect_near(unary<OpKind::Activation_Gelu>({1, -1}, DTypeKind::F16),
              {f16(gelu(1)), f16(gelu(-1))}, 1e-3);
  expect_near(unary<OpKind::Activation_Gelu>({2}, DTypeKind::BF16), {bf16(gelu(2))}, 1e-2);
}

class Activation_GeluBackward : public ActivationOp {};
TEST_F(Activation_GeluBackward, ExactDerivativeNotTheTanhApproximation) {
  // At x = 1 the exact derivative is 1.0833; the trait default's tanh approximation gives 1.0830.
  const std::vector<double> x = {0, 1, -2, 0.5, 4};
  const std::vector<double> g = {1, 2, 3, -1, 1};
  std::vector<double> want;
  for (std::size_t i = 0; i < x.size(); ++i) want.push_back(g[i] * gelu_grad(x[i]));
  expect_near(binary<OpKind::Activation_GeluBackward>(x, g), want, 1e-6);
  expect_near(binary<OpKind::Activation_GeluBackward>(x, g, DTypeKind::F64), want, 1e-14);
  expect_near(binary<OpKind::Activation_GeluBackward>({1}, {1}, DTypeKind::F16),
              {f16(gelu_grad(1))}, 1e-3);
}

// ---- Sigmoid family -----------------------------------------------------------------------------

class Activation_Sigmoid : public ActivationOp {};
TEST_F(Activation_Sigmoid, StableForLargeMagnitudes) {
  const std::vector<double> x = {0, 2, -2, -100, 100, kNaN, -kInf, kInf};
  expect_near(unary<OpKind::Activation_Sigmoid>(x), map(x, sigmoid), 1e-6);
  expect_near(unary<OpKind::Activation_Sigmoid>(x, DTypeKind::F64), map(x, sigmoid), 1e-14);
  // Tiny results survive (1/(1 + e^90) would be 1/inf = 0 in f32; e^−720 is a subnormal f64).
  EXPECT_GT(unary<OpKind::Activation_Sigmoid>({-90})[0], 0);
  const auto tiny = unary<OpKind::Activation_Sigmoid>({-720}, DTypeKind::F64)[0];
  EXPECT_NEAR(tiny / std::exp(-720.0), 1, 1e-3);
  expect_near(unary<OpKind::Activation_Sigmoid>({1, -3}, DTypeKind::F16),
              {f16(sigmoid(1)), f16(sigmoid(-3))}, 1e-3);
  expect_near(unary<OpKind::Activation_Sigmoid>({1}, DTypeKind::BF16), {bf16(sigmoid(1))}, 1e-2);
}

class Activation_SigmoidBackward : public ActivationOp {};
TEST_F(Activation_SigmoidBackward, LhsIsTheForwardOutput) {
  expect_near(binary<OpKind::Activation_SigmoidBackward>({0.5, 0.2, 1, 0}, {1, 2, 3, 4}),
              {0.25, 0.32, 0, 0});
  expect_near(binary<OpKind::Activation_SigmoidBackward>({0.5}, {2}, DTypeKind::BF16), {0.5}, 0);
  expect_near(binary<OpKind::Activation_SigmoidBackward>({0.9}, {1}, DTypeKind::F64), {0.09},
              1e-14);
}

class Activation_HardSigmoid : public ActivationOp {
 protected:
  std::vector<double> hard(const std::vector<double>& x, ScalarIr alpha, ScalarIr beta,
                           DType d = DTypeKind::F32) {
    const auto a = input({x.size()}, d, x);
    const auto o = output({x.size()}, d);
    run(make_op<OpKind::Activation_HardSigmoid>(HardSigmoidOpIr{a, alpha, beta, o}));
    return get(o);
  }
};
TEST_F(Activation_HardSigmoid, FreeAlphaAndBeta) {
  // Not at::hardsigmoid (fixed 1/6, 1/2).
  expect_near(hard({-5, 0, 1, 5, kNaN, kInf}, ScalarIr::f(0.2), ScalarIr::f(0.5)),
              {0, 0.5, 0.7, 1, kNaN, 1});
  expect_near(hard({-1, 0.25}, ScalarIr::i(2), ScalarIr::f(0.5), DTypeKind::F64), {0, 1}, 0);
  expect_near(hard({0.5}, ScalarIr::f(1), ScalarIr::f(0.25), DTypeKind::F16), {0.75}, 0);
}

class Activation_LogSigmoid : public ActivationOp {};
TEST_F(Activation_LogSigmoid, StableForLargeMagnitudes) {
  const std::vector<double> x = {0, 2, -2, -100, 100, kNaN, -kInf, kInf, -200};
  expect_near(unary<OpKind::Activation_LogSigmoid>(x), map(x, log_sigmoid), 1e-6);
  expect_near(unary<OpKind::Activation_LogSigmoid>(x, DTypeKind::F64), map(x, log_sigmoid), 1e-14);
  expect_near(unary<OpKind::Activation_LogSigmoid>({-1, 30}, DTypeKind::F16),
              {f16(log_sigmoid(-1)), f16(log_sigmoid(30))}, 1e-3);
}

class Activation_LogSigmoidBackward : public ActivationOp {};
TEST_F(Activation_LogSigmoidBackward, LhsIsTheForwardInput) {
  const std::vector<double> x = {0, 2, -2, -200, 200};
  const std::vector<double> g = {1, 1, 2, 1, 3};
  std::vector<double> want;
  for (std::size_t i = 0; i < x.size(); ++i) want.push_back(g[i] * sigmoid(-x[i]));
  expect_near(binary<OpKind::Activation_LogSigmoidBackward>(x, g), want, 1e-6);
  expect_near(binary<OpKind::Activation_LogSigmoidBackward>(x, g, DTypeKind::F64), want, 1e-14);
  expect_near(binary<OpKind::Activation_LogSigmoidBackward>({1}, {1}, DTypeKind::F16),
              {f16(sigmoid(-1))}, 1e-3);
}

// ---- Softmax family ---------------------------------------------------------------------------

std::vector<double> softmax_rows(const std::vector<double>& x, std::size_t row) {
  std::vector<double> out(x.size());
  for (std::size_t r = 0; r < x.size() / row; ++r) {
    double m = -kInf, s = 0;
    for (std::size_t i = 0; i < row; ++i) m = std::max(m, x[r * row + i]);
    for (std::size_t i = 0; i < row; ++i) s += std::exp(x[r * row + i] - m);
    for (std::size_t i = 0; i < row; ++i) out[r * row + i] = std::exp(x[r * row + i] - m) / s;
  }
  return out;
}

class Activation_Softmax : public ActivationOp {};
TEST_F(Activation_Softmax, AlongEitherDimAndStable) {
  const std::vector<double> x = {1, 2, 3, 1000, 1000, -kInf};
  const auto want = softmax_rows(x, 3);
  expect_near(along<OpKind::Activation_Softmax>({2, 3}, x, 1), want);
  expect_near(along<OpKind::Activation_Softmax>({2, 3}, x, 1, DTypeKind::F64), want, 1e-14);
  // dim 0 of [2, 3]: each column is a row of the transpose.
  expect_near(along<OpKind::Activation_Softmax>({2, 3}, {0, 1, 2, 0, 1, 2}, 0),
              {0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  expect_near(along<OpKind::Activation_Softmax>({3}, {1, 2, 3}, 0, DTypeKind::F16),
              {f16(want[0]), f16(want[1]), f16(want[2])}, 1e-3);
  // A NaN poisons its row only.
  expect_near(along<OpKind::Activation_Softmax>({2, 2}, {kNaN, 0, 0, 0}, 1),
              {kNaN, kNaN, 0.5, 0.5});
}
TEST_F(Activation_Softmax, NonContiguousAndBadAxis) {
  const auto m = input({2, 2}, DTypeKind::F32, {0, 0, 1, 1});
  const auto o = output({2, 2}, DTypeKind::F32);
  run(make_op<OpKind::Activation_Softmax>(DimOpIr{transposed(m), o, 1}));  // rows (0, 1), (0, 1)
  const double e = 1 / (1 + std::exp(1.0));
  expect_near(get(o), {e, 1 - e, e, 1 - e});
  EXPECT_THAT(
      run_error(make_op<OpKind::Activation_Softmax>(DimOpIr{m, output({2, 2}, DTypeKind::F32), 2})),
      HasSubstr("out of range"));
}

class Activation_LogSoftmax : public ActivationOp {};
TEST_F(Activation_LogSoftmax, StableLogSumExp) {
  const std::vector<double> x = {1, 2, 3, 1000, 1000, -kInf};
  auto want = softmax_rows(x, 3);
  for (double& v : want) v = std::log(v);
  expect_near(along<OpKind::Activation_LogSoftmax>({2, 3}, x, 1), want);
  expect_near(along<OpKind::Activation_LogSoftmax>({2, 3}, x, 1, DTypeKind::F64), want, 1e-14);
  expect_near(along<OpKind::Activation_LogSoftmax>({3, 1}, {-1000, 0, 5}, 0, DTypeKind::BF16),
              {bf16(-1005 - std::log1p(std::exp(-5.0) + std::exp(-1005.0))),
               bf16(-5 - std::log1p(std::exp(-5.0))), bf16(-std::log1p(std::exp(-5.0)))},
              1e-2);
}

class Activation_Softmin : public ActivationOp {};
TEST_F(Activation_Softmin, IsSoftmaxOfTheNegation) {
  const std::vector<double> x = {1, 2, 3, -1000, -1000, kInf};
  const auto want = softmax_rows({-1, -2, -3, 1000, 1000, -kInf}, 3);
  expect_near(along<OpKind::Activation_Softmin>({2, 3}, x, 1), want);
  expect_near(along<OpKind::Activation_Softmin>({2, 3}, x, 1, DTypeKind::F16),
              {f16(want[0]), f16(want[1]), f16(want[2]), 0.5, 0.5, 0}, 1e-3);
}

}  // namespace
}  // namespace tb::test
