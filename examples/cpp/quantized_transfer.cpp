// Quantized tensors between devices and hosts: quantize on the host (Burn's per-tensor symmetric
// int8), move the quantized tensor to another device (and, given a second address, another
// host), and check that the int8 values and scale arrive unchanged and dequantize the same.
//
//   build/examples/cpp/tb_quantized_transfer ws://127.0.0.1:3000 [ws://OTHER:PORT]
//
// With one device on the host, the second session opens device 0 again: the tensor still moves
// host-side between sessions (ExposeTensorLocal / RegisterTensorLocal), never through here.
#include <cmath>
#include <cstdio>
#include <vector>

#include "torchbridge/client/client.hpp"

namespace tc = tb::client;

namespace {

int check(const char* what, const tc::Tensor& q, const tb::ir::TensorData& original,
          const std::vector<float>& dequantized) {
  auto data = q.to_data();
  if (!data) {
    std::fprintf(stderr, "%s: %s\n", what, data.error().what().c_str());
    return 1;
  }
  auto values = tc::q8_values(data.value());
  auto deq = q.dequantize().to_vector<float>();
  if (!values || !deq) {
    std::fprintf(stderr, "%s: %s\n", what, (!values ? values.error() : deq.error()).what().c_str());
    return 1;
  }
  const bool same_bytes = data.value() == original;
  const bool same_values = deq.value() == dequantized;
  std::printf("%-34s %s, scale %.6g, %zu int8 values %s, dequantized %s\n", what,
              q.device().address().c_str(), values.value().scale, values.value().values.size(),
              same_bytes ? "bit-identical" : "DIFFERENT", same_values ? "identical" : "DIFFERENT");
  return same_bytes && same_values ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  const char* address = argc > 1 ? argv[1] : "ws://127.0.0.1:3000";
  auto source = tc::Device::connect(address, 0);
  if (!source) {
    std::fprintf(stderr, "cannot open a session on %s: %s\n", address,
                 source.error().what().c_str());
    return 1;
  }
  const auto& src = source.value();
  const std::uint32_t target_index = src.device_count() > 1 ? 1 : 0;
  auto target = tc::Device::connect(address, target_index);
  if (!target) {
    std::fprintf(stderr, "%s\n", target.error().what().c_str());
    return 1;
  }

  std::vector<float> values(64);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = 2.0f * std::sin(0.37f * static_cast<float>(i)) + 0.01f * static_cast<float>(i);
  }
  auto x = tc::Tensor::from_vector(src, values, {8, 8});
  auto q = x.quantize_dynamic();  // QFloat(Q8S, native store, per-tensor f32 scale)
  auto original = q.to_data();
  auto dequantized = q.dequantize().to_vector<float>();
  if (!original || !dequantized) {
    std::fprintf(stderr, "quantizing failed: %s\n",
                 (!original ? original.error() : dequantized.error()).what().c_str());
    return 1;
  }
  float max_err = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    max_err = std::max(max_err, std::abs(values[i] - dequantized.value()[i]));
  }
  std::printf("quantized %zu floats on %s device 0 as %s; max |x - dequantize(q)| = %.4g\n",
              values.size(), src.address().c_str(), std::string(q.dtype().name()).c_str(), max_err);
  int rc = check("source", q, original.value(), dequantized.value());

  auto moved = q.to(target.value());
  rc |= check(target_index ? "-> device 1 of the same host" : "-> another session, same host",
              moved, original.value(), dequantized.value());
  if (argc > 2) {
    auto far = tc::Device::connect(argv[2], 0);
    if (!far) {
      std::fprintf(stderr, "%s\n", far.error().what().c_str());
      return 1;
    }
    auto there = moved.to(far.value());
    rc |= check("-> another host", there, original.value(), dequantized.value());
    rc |= check("-> and back", std::move(there).to(src), original.value(), dequantized.value());
  }
  return rc;
}
