// The convolution families: what the Conv{1,2,3}d and ConvTranspose{1,2,3}d rows of
// module_ops.def expand to (lowering.cpp), one template per family serving every rank's payload.
// The rows name the family in their Lowering column (conv, conv_backward, conv_bias_backward,
// conv_transpose, conv_transpose_weight_backward) and conv_backward's gradient in Fn (kX,
// kWeight). The computations, and Burn's semantics they follow, are in lower_conv.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include <ATen/ATen.h>

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"

namespace tb::backend::libtorch::conv {

template <std::size_t N>
Ints to_ints(const std::array<std::uint64_t, N>& a) {
  Ints v(N);
  for (std::size_t i = 0; i < N; ++i) v[i] = static_cast<std::int64_t>(a[i]);
  return v;
}

// ---- Convolution --------------------------------------------------------------------------------

struct ConvParams {
  Ints stride, pad_begin, pad_end, dilation;
  std::int64_t groups = 1;

  std::size_t dims() const { return stride.size(); }
  // The symmetric part given to ATen.
  Ints symmetric() const {
    Ints p(dims());
    for (std::size_t i = 0; i < dims(); ++i) p[i] = std::min(pad_begin[i], pad_end[i]);
    return p;
  }
  bool asymmetric() const { return pad_begin != pad_end; }
};

template <std::size_t N>
ConvParams conv_params(const std::array<std::uint64_t, N>& stride,
                       const std::array<ir::UsizePair, N>& padding,
                       const std::array<std::uint64_t, N>& dilation, std::uint64_t groups) {
  ConvParams p;
  p.stride = to_ints(stride);
  p.dilation = to_ints(dilation);
  for (const auto& [b, e] : padding) {
    p.pad_begin.push_back(static_cast<std::int64_t>(b));
    p.pad_end.push_back(static_cast<std::int64_t>(e));
  }
  p.groups = static_cast<std::int64_t>(groups);
  return p;
}
inline ConvParams params_of(const ir::Conv1dOptionsIr& o) {
  return conv_params<1>(o.stride, o.padding, o.dilation, o.groups);
}
inline ConvParams params_of(const ir::Conv2dOptionsIr& o) {
  return conv_params<2>(o.stride, o.padding, o.dilation, o.groups);
}
inline ConvParams params_of(const ir::Conv3dOptionsIr& o) {
  std::array<ir::UsizePair, 3> padding;
  for (std::size_t i = 0; i < 3; ++i) padding[i] = {o.padding[i], o.padding[i]};
  return conv_params<3>(o.stride, padding, o.dilation, o.groups);
}

// The gradient a conv_backward row computes.
enum class Grad { kX, kWeight };

at::Tensor conv_forward(const at::Tensor& x, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const ConvParams& p);
at::Tensor conv_backward(const at::Tensor& x, const at::Tensor& weight,
                         const at::Tensor& output_grad, const ConvParams& p, Grad which);

// ---- Transposed convolution ---------------------------------------------------------------------

struct ConvTransposeParams {
  Ints stride, padding, padding_out, dilation;
  std::int64_t groups = 1;

  std::size_t dims() const { return stride.size(); }
  // ATen accepts output_padding < stride (the only form cuDNN and every CPU kernel take).
  bool native() const {
    for (std::size_t i = 0; i < dims(); ++i)
      if (padding_out[i] >= stride[i]) return false;
    return true;
  }
  // The declared output from the full (unpadded) transposed convolution: crop `padding` at the
  // start, and at the end crop `padding` then extend by `padding_out` (constant_pad_nd form).
  Ints full_to_output_pads() const {
    Ints pads;
    for (std::size_t i = dims(); i-- > 0;) {
      pads.push_back(-padding[i]);
      pads.push_back(padding_out[i] - padding[i]);
    }
    return pads;
  }
  Ints output_to_full_pads() const {
    Ints pads = full_to_output_pads();
    for (auto& v : pads) v = -v;
    return pads;
  }
};

template <class O>
ConvTransposeParams transpose_params_of(const O& o) {
  return {to_ints(o.stride), to_ints(o.padding), to_ints(o.padding_out), to_ints(o.dilation),
          static_cast<std::int64_t>(o.groups)};
}

at::Tensor conv_transpose_forward(const at::Tensor& x, const at::Tensor& weight,
                                  const std::optional<at::Tensor>& bias,
                                  const ConvTransposeParams& p);
at::Tensor conv_transpose_weight_backward(const at::Tensor& x, const at::Tensor& weight,
                                          const at::Tensor& output_grad,
                                          const ConvTransposeParams& p);

// ---- The families -------------------------------------------------------------------------------

// conv: Conv{1,2,3}d.
template <class Op>
Status lower_conv(OpContext& ctx, const Op& op) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const auto bias = ctx.in(op.bias);
  const auto type = compute_type({&x, &weight, bias ? &*bias : nullptr}, ctx.device());
  return ctx.out(op.out, conv_forward(as_type(x, type), as_type(weight, type), as_type(bias, type),
                                      params_of(op.options)));
}

// conv_backward: Conv{1,2,3}d{X,Weight}Backward.
template <class Op>
Status lower_conv_backward(OpContext& ctx, const Op& op, Grad which) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const at::Tensor& grad = ctx.in(op.output_grad);
  const auto type = compute_type({&x, &weight, &grad}, ctx.device());
  return ctx.out(op.out, conv_backward(as_type(x, type), as_type(weight, type), as_type(grad, type),
                                       params_of(op.options), which));
}

// conv_bias_backward: Conv{1,2,3}dBiasBackward and ConvTranspose{1,2,3}dBiasBackward.
template <class Op>
Status lower_bias_backward(OpContext& ctx, const Op& op) {
  return ctx.out(op.out, bias_backward(ctx.in(op.output_grad)).reshape(ctx.in(op.bias).sizes()));
}

// conv_transpose: ConvTranspose{1,2,3}d.
template <class Op>
Status lower_conv_transpose(OpContext& ctx, const Op& op) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const auto bias = ctx.in(op.bias);
  const auto type = compute_type({&x, &weight, bias ? &*bias : nullptr}, ctx.device());
  return ctx.out(
      op.out, conv_transpose_forward(as_type(x, type), as_type(weight, type), as_type(bias, type),
                                     transpose_params_of(op.options)));
}

// conv_transpose_weight_backward: ConvTranspose{1,2,3}dWeightBackward.
template <class Op>
Status lower_conv_transpose_weight_backward(OpContext& ctx, const Op& op) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const at::Tensor& grad = ctx.in(op.output_grad);
  const auto type = compute_type({&x, &weight, &grad}, ctx.device());
  return ctx.out(
      op.out, conv_transpose_weight_backward(as_type(x, type), as_type(weight, type),
                                             as_type(grad, type), transpose_params_of(op.options)));
}

}  // namespace tb::backend::libtorch::conv
