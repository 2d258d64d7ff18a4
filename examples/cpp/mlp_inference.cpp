// MLP inference on a remote Burn host: weights uploaded once, a batch classified there, the
// result read back and checked against the same network computed here in plain C++.
//
//   build/examples/cpp/tb_mlp_inference ws://127.0.0.1:3000
#include <cmath>
#include <cstdio>
#include <vector>

#include "torchbridge/client/client.hpp"

namespace {

constexpr std::size_t kBatch = 4, kIn = 8, kHidden = 16, kOut = 3;

// Deterministic weights, so every run (and the local check) sees the same network.
std::vector<float> weights(std::size_t n, float phase) {
  std::vector<float> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = 0.5f * std::sin(0.7f * static_cast<float>(i) + phase);
  return w;
}

// x [b, in] @ w [in, out] + bias: Burn's linear layout.
std::vector<float> linear(const std::vector<float>& x, const std::vector<float>& w,
                          const std::vector<float>& bias, std::size_t b, std::size_t in,
                          std::size_t out) {
  std::vector<float> y(b * out);
  for (std::size_t r = 0; r < b; ++r)
    for (std::size_t o = 0; o < out; ++o) {
      float s = bias[o];
      for (std::size_t k = 0; k < in; ++k) s += x[r * in + k] * w[k * out + o];
      y[r * out + o] = s;
    }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  namespace tc = tb::client;
  const char* address = argc > 1 ? argv[1] : "ws://127.0.0.1:3000";
  auto device = tc::Device::connect(address, 0);
  if (!device) {
    std::fprintf(stderr, "cannot open a session on %s: %s\n", address,
                 device.error().what().c_str());
    return 1;
  }
  const auto& dev = device.value();
  std::printf("connected to %s device %u (%u device(s), float %s, int %s)\n", dev.address().c_str(),
              dev.index(), dev.device_count(), std::string(dev.float_dtype().name()).c_str(),
              std::string(dev.int_dtype().name()).c_str());

  const auto w1 = weights(kIn * kHidden, 0.1f), b1 = weights(kHidden, 1.3f);
  const auto w2 = weights(kHidden * kOut, 2.2f), b2 = weights(kOut, 0.4f);
  auto x = weights(kBatch * kIn, 3.7f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] *= (i / kIn % 2 ? -4.0f : 4.0f);

  auto fc1 = tc::Tensor::from_vector(dev, w1, {kIn, kHidden});
  auto fc1_bias = tc::Tensor::from_vector(dev, b1);
  auto fc2 = tc::Tensor::from_vector(dev, w2, {kHidden, kOut});
  auto fc2_bias = tc::Tensor::from_vector(dev, b2);
  auto input = tc::Tensor::from_vector(dev, x, {kBatch, kIn});

  auto hidden = tc::nn::linear(input, fc1, fc1_bias).relu();
  auto probs = tc::nn::linear(std::move(hidden), fc2, fc2_bias).softmax(1);
  auto classes = probs.argmax(1);

  auto p = std::move(probs).to_vector<float>();
  // Indices come in the host's int dtype (I64 on torchbridge, I32 on Burn's Flex).
  auto c = classes.dtype().kind == tb::ir::DTypeKind::I64
               ? std::move(classes).to_vector<std::int64_t>()
               : [&]() -> tb::Result<std::vector<std::int64_t>> {
    TB_TRY_ASSIGN(auto v, std::move(classes).to_vector<std::int32_t>());
    return std::vector<std::int64_t>(v.begin(), v.end());
  }();
  if (!p || !c) {
    std::fprintf(stderr, "inference failed: %s\n", (!p ? p.error() : c.error()).what().c_str());
    return 1;
  }

  // The same network here.
  auto h = linear(x, w1, b1, kBatch, kIn, kHidden);
  for (auto& v : h) v = v > 0 ? v : 0;
  auto logits = linear(h, w2, b2, kBatch, kHidden, kOut);
  float max_diff = 0;
  for (std::size_t r = 0; r < kBatch; ++r) {
    float m = logits[r * kOut], sum = 0;
    for (std::size_t o = 1; o < kOut; ++o) m = std::max(m, logits[r * kOut + o]);
    for (std::size_t o = 0; o < kOut; ++o) sum += std::exp(logits[r * kOut + o] - m);
    std::printf("sample %zu: class %lld  p = [", r, static_cast<long long>(c.value()[r]));
    for (std::size_t o = 0; o < kOut; ++o) {
      const float local = std::exp(logits[r * kOut + o] - m) / sum;
      max_diff = std::max(max_diff, std::abs(local - p.value()[r * kOut + o]));
      std::printf("%s%.5f", o ? ", " : "", p.value()[r * kOut + o]);
    }
    std::printf("]\n");
  }
  std::printf("largest difference from the same MLP computed locally: %.2e\n", max_diff);
  if (auto s = dev.sync(); !s) {
    std::fprintf(stderr, "the host reported: %s\n", s.error().what().c_str());
    return 1;
  }
  return max_diff < 1e-4f ? 0 : 2;
}
