// Helpers shared by the module lowering files (lower_module.cpp, lower_pool.cpp,
// lower_interpolate.cpp, lower_conv.cpp, lower_deform_conv.cpp). Private to this backend.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "lower/lower_families.hpp"

namespace tb::backend::libtorch {

// ---- Module ops (lower_module, lower_pool, lower_interpolate) -----------------------------------

using Sizes = std::vector<std::int64_t>;

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// f16/bf16 -> f32 on CPU (ATen CPU kernels without half support).
inline at::Tensor cpu_wide(const at::Tensor& t) {
  return t.device().is_cpu() ? widen(t) : t;
}
// `t` in the floating type `like` computes in.
inline at::Tensor same_type(const at::Tensor& t, const at::Tensor& like) {
  return t.scalar_type() == like.scalar_type() ? t : t.to(like.scalar_type());
}

inline std::int64_t numel(const Sizes& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
inline at::Tensor long_tensor(const std::vector<std::int64_t>& v, const at::Device& device) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(device);
}

// ---- Convolutions (lower_conv, lower_deform_conv) -----------------------------------------------

using Ints = std::vector<std::int64_t>;

// The type a convolution of these tensors is computed in: their promoted float type, with f16 and
// bf16 widened to f32 on CPU (or everywhere when `widen_half`).
inline at::ScalarType compute_type(std::initializer_list<const at::Tensor*> ts,
                                   const at::Device& device, bool widen_half = false) {
  at::ScalarType t = at::ScalarType::Undefined;
  for (const at::Tensor* p : ts) {
    if (!p || !p->defined()) continue;
    t = t == at::ScalarType::Undefined ? p->scalar_type() : at::promote_types(t, p->scalar_type());
  }
  if (t == at::ScalarType::Undefined || !c10::isFloatingType(t)) t = at::kFloat;
  if (is_half(t) && (widen_half || device.is_cpu())) t = at::kFloat;
  return t;
}

inline at::Tensor as_type(const at::Tensor& t, at::ScalarType type) {
  return t.scalar_type() == type ? t : t.to(type);
}
inline std::optional<at::Tensor> as_type(const std::optional<at::Tensor>& t, at::ScalarType type) {
  if (!t) return std::nullopt;
  return as_type(*t, type);
}

// [1, C, 1, ...] view of a bias for a rank-`rank` output.
inline at::Tensor bias_view(const at::Tensor& bias, std::int64_t rank) {
  Ints shape(static_cast<std::size_t>(rank), 1);
  shape[1] = -1;
  return bias.reshape(shape);
}

// Burn's conv*_bias_backward: output_grad summed over every dim but the channels.
inline at::Tensor bias_backward(const at::Tensor& output_grad) {
  Ints dims;
  for (std::int64_t d = 0; d < output_grad.dim(); ++d)
    if (d != 1) dims.push_back(d);
  const auto acc = is_half(output_grad.scalar_type()) ? at::kFloat : output_grad.scalar_type();
  return at::sum(output_grad, dims, /*keepdim=*/false, acc);
}

}  // namespace tb::backend::libtorch
