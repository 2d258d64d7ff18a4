// Tensor's member forms against our host in-process: each gives the values its free function
// gives and the values worked out here, and hands its tensor over exactly when the free function
// given std::move(x) would.
#include "torchbridge/client/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "client/host_util.hpp"
#include "client/program.hpp"

namespace tb::test {
namespace {

using client::Device;
using client::Tensor;

Device connect_device(const ClientTestHost& host) {
  auto d = Device::connect(host.address());
  EXPECT_TRUE(d) << (d ? "" : d.error().what());
  return d ? d.value() : Device();
}

template <class T>
std::vector<double> read_as(Tensor t) {
  auto v = std::move(t).to_vector<T>();
  EXPECT_TRUE(v) << v.error().what();
  return v ? std::vector<double>(v.value().begin(), v.value().end()) : std::vector<double>{};
}

// Float values, or indices in the device's int dtype.
std::vector<double> read(Tensor t) {
  switch (t.dtype().kind) {
    case ir::DTypeKind::I64:
      return read_as<std::int64_t>(std::move(t));
    case ir::DTypeKind::I32:
      return read_as<std::int32_t>(std::move(t));
    default:
      return read_as<float>(std::move(t));
  }
}

// The member form, the free form and the local values agree.
void expect_case(const char* name, Tensor member, Tensor free, const std::vector<double>& expected,
                 double tolerance = 1e-5) {
  EXPECT_EQ(member.shape(), free.shape()) << name;
  EXPECT_EQ(member.dtype(), free.dtype()) << name;
  EXPECT_EQ(mismatch(read(std::move(member)), expected, tolerance), "") << name << " (member)";
  EXPECT_EQ(mismatch(read(std::move(free)), expected, tolerance), "") << name << " (free)";
}

template <class F>
std::vector<double> map(const std::vector<float>& v, F f) {
  std::vector<double> out;
  for (float x : v) out.push_back(f(static_cast<double>(x)));
  return out;
}

// m [2, 3] row-major, reduced along `dim` with `f` starting from the first element.
template <class F>
std::vector<double> reduce(const std::vector<float>& m, int dim, F f) {
  std::vector<double> out;
  if (dim == 1) {
    for (int r = 0; r < 2; ++r) {
      double acc = m[r * 3];
      for (int c = 1; c < 3; ++c) acc = f(acc, m[r * 3 + c]);
      out.push_back(acc);
    }
  } else {
    for (int c = 0; c < 3; ++c) out.push_back(f(m[c], m[3 + c]));
  }
  return out;
}

const std::vector<float> kM{0.5f, -1.25f, 2.0f, 3.5f, 0.25f, -0.75f};

// README's "From C++" example, line for line (keep the two the same).
TEST(ClientMembers, ReadmeExample) {
  ClientTestHost host;
  namespace tc = tb::client;
  auto dev = tc::Device::connect(host.address(), /*device index*/ 0).value();
  auto x = tc::Tensor::from_vector<float>(dev, {1, 2, 3, 4}, {2, 2});
  auto w = tc::Tensor::from_vector<float>(dev, {1, 0, 0, 1}, {2, 2});
  auto y = tc::nn::linear(x, w).relu().softmax(1);  // runs on the host
  auto values = std::move(y).to_vector<float>();    // tb::Result<std::vector<float>>
  ASSERT_TRUE(values) << values.error().what();
  // Each row [a, a + 1]: softmax [1 / (1 + e), e / (1 + e)].
  const double low = 1 / (1 + std::exp(1.0));
  EXPECT_EQ(mismatch(std::vector<double>(values.value().begin(), values.value().end()),
                     {low, 1 - low, low, 1 - low}, 1e-5),
            "");
}

TEST(ClientMembers, ChainsMatchFreeFunctionsAndLocalMath) {
  ClientTestHost host;
  auto dev = connect_device(host);
  auto m = Tensor::from_vector<float>(dev, kM, {2, 3});
  std::vector<double> chained;
  for (int r = 0; r < 2; ++r) {
    double s = 0;
    for (int c = 0; c < 3; ++c) s += std::exp(kM[r * 3 + c]);
    chained.push_back(s);
  }
  expect_case("exp().sum_dim(1)", m.exp().sum_dim(1), client::sum_dim(client::exp(m), 1), chained);
  EXPECT_EQ(m.exp().sum_dim(1).shape(), (client::Shape{2, 1}));
  // relu, then a matmul with its transpose: [2, 3] x [3, 2].
  const auto relu = map(std::vector<float>(kM), [](double x) { return x > 0 ? x : 0; });
  std::vector<double> gram(4, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) gram[i * 2 + j] += relu[i * 3 + k] * relu[j * 3 + k];
  expect_case("relu().matmul(relu().transpose())", m.relu().matmul(m.relu().transpose()),
              client::matmul(client::relu(m), client::transpose(client::relu(m))), gram);
  std::vector<double> scaled_mean{(kM[0] + kM[1] + kM[2] + kM[3] + kM[4] + kM[5]) * 2.0 / 6};
  expect_case("(m * 2).reshape({3, 2}).mean()", (m * 2.0).reshape({3, 2}).mean(),
              client::mean(client::reshape(m * 2.0, {3, 2})), scaled_mean);
}

TEST(ClientMembers, UnaryAndCast) {
  ClientTestHost host;
  auto dev = connect_device(host);
  const std::vector<float> pos{0.25f, 1.0f, 4.0f};
  auto p = Tensor::from_vector<float>(dev, pos);
  auto m = Tensor::from_vector<float>(dev, kM);
  expect_case("exp", m.exp(), client::exp(m), map(kM, [](double x) { return std::exp(x); }));
  expect_case("log", p.log(), client::log(p), map(pos, [](double x) { return std::log(x); }));
  expect_case("sqrt", p.sqrt(), client::sqrt(p), map(pos, [](double x) { return std::sqrt(x); }));
  expect_case("tanh", m.tanh(), client::tanh(m), map(kM, [](double x) { return std::tanh(x); }));
  expect_case("abs", m.abs(), client::abs(m), map(kM, [](double x) { return std::abs(x); }));
  expect_case("relu", m.relu(), client::relu(m), map(kM, [](double x) { return x > 0 ? x : 0; }));
  expect_case("sigmoid", m.sigmoid(), client::sigmoid(m),
              map(kM, [](double x) { return 1 / (1 + std::exp(-x)); }));
  expect_case("gelu", m.gelu(), client::gelu(m),
              map(kM, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }), 1e-4);
  // Float to int truncates toward zero, into the device's int dtype.
  expect_case("cast", m.cast(dev.int_dtype()), client::cast(m, dev.int_dtype()),
              map(kM, [](double x) { return std::trunc(x); }));
}

TEST(ClientMembers, Reductions) {
  ClientTestHost host;
  auto dev = connect_device(host);
  auto m = Tensor::from_vector<float>(dev, kM, {2, 3});
  const double total = std::accumulate(kM.begin(), kM.end(), 0.0);
  expect_case("sum", m.sum(), client::sum(m), {total});
  expect_case("mean", m.mean(), client::mean(m), {total / 6});
  expect_case("max", m.max(), client::max(m), {*std::max_element(kM.begin(), kM.end())});
  expect_case("min", m.min(), client::min(m), {*std::min_element(kM.begin(), kM.end())});
  const auto add = [](double a, double b) { return a + b; };
  const auto bigger = [](double a, double b) { return std::max(a, b); };
  const auto smaller = [](double a, double b) { return std::min(a, b); };
  expect_case("sum_dim(0)", m.sum_dim(0), client::sum_dim(m, 0), reduce(kM, 0, add));
  auto means = reduce(kM, 1, add);
  for (auto& v : means) v /= 3;
  expect_case("mean_dim(1)", m.mean_dim(1), client::mean_dim(m, 1), means);
  expect_case("max_dim(1)", m.max_dim(1), client::max_dim(m, 1), reduce(kM, 1, bigger));
  expect_case("min_dim(0)", m.min_dim(0), client::min_dim(m, 0), reduce(kM, 0, smaller));
  // Rows [0.5, -1.25, 2] and [3.5, 0.25, -0.75].
  expect_case("argmax(1)", m.argmax(1), client::argmax(m, 1), {2, 0});
  expect_case("argmin(1)", m.argmin(1), client::argmin(m, 1), {1, 2});
}

TEST(ClientMembers, ShapesAndActivations) {
  ClientTestHost host;
  auto dev = connect_device(host);
  auto m = Tensor::from_vector<float>(dev, kM, {2, 3});
  const std::vector<double> all(kM.begin(), kM.end());
  const std::vector<double> transposed{kM[0], kM[3], kM[1], kM[4], kM[2], kM[5]};
  expect_case("reshape", m.reshape({3, -1}), client::reshape(m, {3, -1}), all);
  EXPECT_EQ(m.reshape({3, -1}).shape(), (client::Shape{3, 2}));
  expect_case("transpose", m.transpose(), client::transpose(m), transposed);
  expect_case("swap_dims", m.swap_dims(0, 1), client::swap_dims(m, 0, 1), transposed);
  expect_case("permute", m.permute({1, 0}), client::permute(m, {1, 0}), transposed);
  expect_case("slice", m.slice({{0, std::nullopt}, {1, 3}}),
              client::slice(m, {{0, std::nullopt}, {1, 3}}), {kM[1], kM[2], kM[4], kM[5]});
  std::vector<double> soft;
  std::vector<double> log_soft;
  for (int r = 0; r < 2; ++r) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(kM[r * 3 + c]);
    for (int c = 0; c < 3; ++c) {
      soft.push_back(std::exp(kM[r * 3 + c]) / z);
      log_soft.push_back(kM[r * 3 + c] - std::log(z));
    }
  }
  expect_case("softmax(1)", m.softmax(1), client::nn::softmax(m, 1), soft);
  expect_case("log_softmax(1)", m.log_softmax(1), client::nn::log_softmax(m, 1), log_soft);
}

TEST(ClientMembers, QuantizationMatchesBitForBit) {
  ClientTestHost host;
  auto dev = connect_device(host);
  auto x = Tensor::from_vector<float>(dev, kM, {2, 3});
  auto member = x.quantize_dynamic().to_data();
  auto free = client::quantize_dynamic(x).to_data();
  ASSERT_TRUE(member && free);
  EXPECT_EQ(member.value(), free.value());
  auto q8 = client::q8_values(member.value());
  ASSERT_TRUE(q8) << q8.error().what();
  // Burn's per-tensor symmetric scale: 2 max|x| / 254.
  EXPECT_NEAR(q8.value().scale, 2.0f * 3.5f / 254.0f, 1e-8);
  // A scale that puts no value on a rounding tie: x / 0.4 rounds to [1, -3, 5, 9, 1, -2].
  auto scale = Tensor::from_vector<float>(dev, {0.4f});
  auto fixed = x.quantize(scale);
  const std::vector<double> dequantized{0.4, -1.2, 2.0, 3.6, 0.4, -0.8};
  expect_case("quantize(scale).dequantize()", fixed.dequantize(),
              client::dequantize(client::quantize(x, scale)), dequantized);
}

TEST(ClientMembers, RvaluesHandOverAndLvaluesKeep) {
  ClientTestHost host;
  auto dev = connect_device(host);
  auto live = [&] { return host.live_tensors(dev); };
  auto x = Tensor::from_vector<float>(dev, {1, 4, 9});
  auto kept = x.sqrt();  // x stays
  EXPECT_EQ(live(), 2u);
  EXPECT_TRUE(x.ok());
  // The intermediate of a chain, and x itself, are handed over and freed by the host.
  auto chained = std::move(x).sqrt().sum();
  EXPECT_FALSE(x.defined());  // NOLINT(bugprone-use-after-move): the hand-over is the point
  EXPECT_EQ(live(), 2u);      // kept and chained
  EXPECT_EQ(read(std::move(chained)), (std::vector<double>{6}));
  EXPECT_EQ(read(std::move(kept)), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(live(), 0u);
}

TEST(ClientMembers, ErrorsFlowThroughMemberChains) {
  ClientTestHost host;
  auto dev = connect_device(host);
  auto m = Tensor::from_vector<float>(dev, kM, {2, 3});
  auto bad = m.sum_dim(2).exp().reshape({-1});
  ASSERT_NE(bad.error(), nullptr);
  EXPECT_NE(bad.error()->what().find("sum_dim"), std::string::npos) << bad.error()->what();
  EXPECT_FALSE(m.sum_dim(-1).ok());
  EXPECT_FALSE(m.permute({0, -1}).ok());
  EXPECT_FALSE(Tensor::zeros(dev, {2, -3}).ok());
  EXPECT_FALSE(Tensor::from_vector<float>(dev, {1, 2}, {-1, -2}).ok());
  EXPECT_FALSE(Tensor().exp().ok());
}

}  // namespace
}  // namespace tb::test
