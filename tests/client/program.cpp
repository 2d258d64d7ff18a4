#include "client/program.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tb::test {

namespace {

using client::Tensor;

Result<std::vector<double>> read_values(Tensor t) {
  if (!t.defined()) return make_error(ErrorCode::kInvalidArgument, "undefined tensor");
  if (const Error* e = t.error()) return *e;
  const auto kind = t.dtype().kind;
  std::vector<double> out;
  if (kind == ir::DTypeKind::F32) {
    TB_TRY_ASSIGN(auto v, std::move(t).to_vector<float>());
    out.assign(v.begin(), v.end());
  } else if (kind == ir::DTypeKind::F64) {
    TB_TRY_ASSIGN(out, std::move(t).to_vector<double>());
  } else if (kind == ir::DTypeKind::I32) {
    TB_TRY_ASSIGN(auto v, std::move(t).to_vector<std::int32_t>());
    out.assign(v.begin(), v.end());
  } else if (kind == ir::DTypeKind::I64) {
    TB_TRY_ASSIGN(auto v, std::move(t).to_vector<std::int64_t>());
    out.assign(v.begin(), v.end());
  } else if (kind == ir::DTypeKind::Bool) {
    TB_TRY_ASSIGN(auto v, std::move(t).to_vector<bool>());
    for (bool b : v) out.push_back(b ? 1.0 : 0.0);
  } else {
    return make_error(ErrorCode::kUnsupported, "the program reads no {} tensors", t.dtype().name());
  }
  return out;
}

class Recorder {
 public:
  void add(std::string name, Tensor t, std::vector<double> expected, double tolerance = 1e-4) {
    results_.push_back(
        CaseResult{std::move(name), read_values(std::move(t)), std::move(expected), tolerance});
  }
  std::vector<CaseResult> take() { return std::move(results_); }

 private:
  std::vector<CaseResult> results_;
};

std::vector<float> iota(int n, float from = 0) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = from + static_cast<float>(i);
  return v;
}

}  // namespace

std::string mismatch(const std::vector<double>& values, const std::vector<double>& expected,
                     double tolerance) {
  if (values.size() != expected.size()) {
    return fmt::format("{} values [{}], expected {} [{}]", values.size(), fmt::join(values, ", "),
                       expected.size(), fmt::join(expected, ", "));
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double diff = std::abs(values[i] - expected[i]);
    if (!(diff <= tolerance * (1.0 + std::abs(expected[i])))) {
      return fmt::format("[{}] differs at {}: {} vs {}", fmt::join(values, ", "), i, values[i],
                         expected[i]);
    }
  }
  return {};
}

std::vector<CaseResult> run_program(const client::Device& dev, const client::Device& other) {
  using namespace client;
  Recorder r;
  auto a = Tensor::from_vector<float>(dev, {1, 2, 3, 4}, {2, 2});
  auto b = Tensor::from_vector<float>(dev, {10, 20, 30, 40}, {2, 2});

  // Elementwise and matmul.
  r.add("add", a + b, {11, 22, 33, 44});
  r.add("sub", a - b, {-9, -18, -27, -36});
  r.add("mul", a * b, {10, 40, 90, 160});
  r.add("div", b / a, {10, 10, 10, 10});
  r.add("scalar_chain", a * 2.0 + 1.0, {3, 5, 7, 9});
  r.add("scalar_rsub", 10.0 - a, {9, 8, 7, 6});
  r.add("temporaries", (a + b) * (b - a) / 3.0, {33, 132, 297, 528});
  r.add("broadcast", a + Tensor::from_vector<float>(dev, {100, 200}, {2, 1}), {101, 102, 203, 204});
  r.add("matmul", matmul(a, b), {70, 100, 150, 220});
  auto batched = Tensor::from_vector<float>(dev, iota(8, 1), {2, 2, 2});
  r.add("matmul_batched", matmul(batched, batched), {7, 10, 15, 22, 67, 78, 91, 106});

  // Reductions.
  auto m = Tensor::from_vector<float>(dev, {1, 5, 2, 7, 0, 3}, {2, 3});
  r.add("sum", sum(m), {18});
  r.add("mean", mean(m), {3});
  r.add("max", max(m), {7});
  r.add("min", min(m), {0});
  r.add("sum_dim0", sum_dim(m, 0), {8, 5, 5});
  r.add("mean_dim1", mean_dim(m, 1), {8.0 / 3, 10.0 / 3});
  r.add("max_dim1", max_dim(m, 1), {5, 7});
  r.add("argmax_dim1", argmax(m, 1), {1, 0});
  r.add("argmin_dim0", argmin(m, 0), {0, 1, 0});

  // Shapes.
  auto x = Tensor::from_vector<float>(dev, iota(12), {3, 4});
  const auto flat = iota(12);
  r.add("reshape", reshape(x, {2, -1}), std::vector<double>(flat.begin(), flat.end()));
  r.add("slice", slice(x, {{1, 3}, {0, std::nullopt, 2}}), {4, 6, 8, 10});
  r.add("slice_negative", slice(x, {{-1, std::nullopt}, {-2, std::nullopt}}), {10, 11});
  r.add("cat_dim0", cat({a, b}, 0), {1, 2, 3, 4, 10, 20, 30, 40});
  r.add("cat_dim1", cat({a, b}, 1), {1, 2, 10, 20, 3, 4, 30, 40});
  r.add("transpose", transpose(x), {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  r.add("permute", permute(reshape(x, {1, 3, 4}), {2, 0, 1}),
        {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  auto transposed_sum = sum_dim(transpose(x), 1);
  r.add("shape_after_transpose", std::move(transposed_sum), {12, 15, 18, 21});

  // Unary functions and casts.
  auto u = Tensor::from_vector<float>(dev, {-1, 0, 1, 2});
  r.add("exp", exp(u), {std::exp(-1.0), 1, std::exp(1.0), std::exp(2.0)});
  r.add("log", log(Tensor::from_vector<float>(dev, {1, 4})), {0, std::log(4.0)});
  r.add("sqrt", sqrt(Tensor::from_vector<float>(dev, {4, 9})), {2, 3});
  r.add("tanh", tanh(u), {std::tanh(-1.0), 0, std::tanh(1.0), std::tanh(2.0)});
  r.add("abs", abs(u), {1, 0, 1, 2});
  r.add("relu", relu(u), {0, 0, 1, 2});
  r.add("sigmoid", sigmoid(u),
        {1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(-2.0))});
  r.add("gelu", gelu(u), {-0.158655254, 0, 0.841344746, 1.954499736}, 1e-3);
  r.add("into_int", cast(Tensor::from_vector<float>(dev, {1.7f, -1.7f, 3}), dev.int_dtype()),
        {1, -1, 3});
  r.add("into_float",
        cast(Tensor::from_vector<std::int32_t>(dev, {3, -4}), ir::DType(ir::DTypeKind::F32)) * 0.5,
        {1.5, -2});
  r.add("full", Tensor::full(dev, {2, 2}, 2.5), {2.5, 2.5, 2.5, 2.5});
  r.add("zeros_plus_ones", Tensor::zeros(dev, {3}) + Tensor::ones(dev, {3}), {1, 1, 1});
  r.add("int_arith",
        Tensor::from_vector<std::int32_t>(dev, {1, 2, 3}) *
                Tensor::from_vector<std::int32_t>(dev, {4, 5, 6}) +
            1.0,
        {5, 11, 19});

  // nn.
  auto xin = Tensor::from_vector<float>(dev, {1, 2}, {1, 2});
  auto w = Tensor::from_vector<float>(dev, {1, 0, 1, 0, 1, 1}, {2, 3});
  auto bias3 = Tensor::from_vector<float>(dev, {0.5f, 0.5f, 0.5f});
  r.add("linear", nn::linear(xin, w, bias3), {1.5, 2.5, 3.5});
  r.add("linear_nobias", nn::linear(xin, w), {1, 2, 3});
  auto img = Tensor::from_vector<float>(dev, iota(9, 1), {1, 1, 3, 3});
  auto kernel = Tensor::ones(dev, {1, 1, 2, 2});
  auto cbias = Tensor::from_vector<float>(dev, {0.5f});
  r.add("conv2d", nn::conv2d(img, kernel, cbias), {12.5, 16.5, 24.5, 28.5});
  nn::Conv2dOptions strided;
  strided.stride = {2, 2};
  strided.padding = {{{1, 1}, {1, 1}}};
  r.add("conv2d_padded", nn::conv2d(img, kernel, cbias, strided), {1.5, 5.5, 11.5, 28.5});
  auto grid = Tensor::from_vector<float>(dev, iota(16, 1), {1, 1, 4, 4});
  r.add("max_pool2d", nn::max_pool2d(grid), {6, 8, 14, 16});
  r.add("avg_pool2d", nn::avg_pool2d(grid), {3.5, 5.5, 11.5, 13.5});
  nn::Pool2dOptions pool3;
  pool3.kernel = {3, 3};
  pool3.stride = {1, 1};
  pool3.padding = {1, 1};
  r.add("max_pool2d_padded", nn::max_pool2d(img, pool3), {5, 6, 6, 8, 9, 9, 8, 9, 9});
  auto logits = Tensor::from_vector<float>(dev, {0, std::log(3.0f)}, {1, 2});
  r.add("softmax", nn::softmax(logits, 1), {0.25, 0.75});
  r.add("log_softmax", nn::log_softmax(logits, 1), {std::log(0.25), std::log(0.75)});
  auto row = Tensor::from_vector<float>(dev, {1, 2, 3}, {1, 3});
  r.add("layer_norm", nn::layer_norm(row, Tensor::ones(dev, {3}), Tensor::zeros(dev, {3}), 1e-5),
        {-1.2247357, 0, 1.2247357}, 1e-3);
  auto q = Tensor::from_vector<float>(dev, {1, 0}, {1, 1, 2, 1});
  auto v = Tensor::from_vector<float>(dev, {10, 20}, {1, 1, 2, 1});
  const double sig = 1 / (1 + std::exp(-1.0));
  r.add("attention", nn::attention(q, q, v), {10 * sig + 20 * (1 - sig), 15});
  nn::AttentionOptions causal;
  causal.is_causal = true;
  r.add("attention_causal", nn::attention(q, q, v, std::nullopt, std::nullopt, causal), {10, 15});

  // Transfers: to another device and back, the source kept, then handed over.
  if (other.valid()) {
    auto moved = a.to(other);
    r.add("to_other", moved * 2.0, {2, 4, 6, 8});
    r.add("to_other_and_back", (moved + 1.0).to(dev) + a, {3, 5, 7, 9});
    r.add("to_other_last_reference", sum(std::move(b).to(other)), {100});
  }
  return r.take();
}

}  // namespace tb::test
