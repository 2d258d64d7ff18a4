// Module ops, convolution part: Conv{1,2,3}d and their x/weight/bias backward ops,
// ConvTranspose{1,2,3}d and their weight/bias backward ops (DeformableConv2d is in
// lower_deform_conv.cpp): the computations the conv families of conv_family.hpp call.
//
// Semantics are burn-backend 0.22.1's ModuleOps (the default backward implementations in
// ops/modules/conv.rs) and burn-flex's kernels:
// - Conv1d/Conv2d padding is per side, (begin, end). ATen's convolution only pads symmetrically:
//   we pass min(begin, end) to ATen and pad the input explicitly with zeros by the remainder, as
//   Burn's pad_asymmetric_conv_input does; the x-gradient is the gradient of the padded input,
//   cropped back to x.
// - The backward ops are exact gradients of the forward (at::convolution_backward); x's declared
//   shape decides the input size where stride makes it ambiguous (Burn: padding_out).
// - Weight layouts are PyTorch's: [C_out, C_in/groups, k...] for conv, [C_in, C_out/groups, k...]
//   for the transposed conv.
// - ConvTranspose padding_out may be any size in Burn (burn-flex scatters into the extra output
//   positions); ATen requires output_padding < stride, so larger ones go through a full transposed
//   convolution (no padding) cropped/zero-extended to the declared output.
// - f16/bf16 convolutions run in f32 on CPU (no CPU half kernels in LibTorch 1.13).
#include <ATen/ATen.h>

#include "lower/conv_family.hpp"

namespace tb::backend::libtorch::conv {

namespace {

// x zero-padded by the asymmetric remainder of the padding (what ATen's symmetric padding lacks).
at::Tensor pad_asymmetric(const at::Tensor& x, const ConvParams& p) {
  if (!p.asymmetric()) return x;
  const Ints sym = p.symmetric();
  Ints pads;  // constant_pad_nd: last dim first, (begin, end) per dim
  for (std::size_t i = p.dims(); i-- > 0;) {
    pads.push_back(p.pad_begin[i] - sym[i]);
    pads.push_back(p.pad_end[i] - sym[i]);
  }
  return at::constant_pad_nd(x, pads, 0);
}

}  // namespace

at::Tensor conv_forward(const at::Tensor& x, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const ConvParams& p) {
  const at::Tensor b = bias ? *bias : at::Tensor();
  return at::convolution(pad_asymmetric(x, p), weight, b, p.stride, p.symmetric(), p.dilation,
                         /*transposed=*/false, Ints(p.dims(), 0), p.groups);
}

// Gradient of conv_forward w.r.t. x or weight.
at::Tensor conv_backward(const at::Tensor& x, const at::Tensor& weight,
                         const at::Tensor& output_grad, const ConvParams& p, Grad which) {
  const at::Tensor padded = pad_asymmetric(x, p);
  const std::array<bool, 3> mask = {which == Grad::kX, which == Grad::kWeight, false};
  auto grads = at::convolution_backward(output_grad, padded, weight, at::OptionalIntArrayRef{},
                                        p.stride, p.symmetric(), p.dilation,
                                        /*transposed=*/false, Ints(p.dims(), 0), p.groups, mask);
  if (which == Grad::kWeight) return std::get<1>(grads);
  at::Tensor grad = std::get<0>(grads);
  if (p.asymmetric()) {
    const Ints sym = p.symmetric();
    for (std::size_t i = 0; i < p.dims(); ++i) {
      const auto d = static_cast<std::int64_t>(i) + 2;
      grad = grad.narrow(d, p.pad_begin[i] - sym[i], x.size(d));
    }
  }
  return grad;
}

at::Tensor conv_transpose_forward(const at::Tensor& x, const at::Tensor& weight,
                                  const std::optional<at::Tensor>& bias,
                                  const ConvTransposeParams& p) {
  const Ints zeros(p.dims(), 0);
  if (p.native()) {
    const at::Tensor b = bias ? *bias : at::Tensor();
    return at::convolution(x, weight, b, p.stride, p.padding, p.dilation, /*transposed=*/true,
                           p.padding_out, p.groups);
  }
  at::Tensor full = at::convolution(x, weight, at::Tensor(), p.stride, zeros, p.dilation,
                                    /*transposed=*/true, zeros, p.groups);
  at::Tensor out = at::constant_pad_nd(full, p.full_to_output_pads(), 0);
  if (bias) out = out + bias_view(*bias, out.dim());
  return out;
}

at::Tensor conv_transpose_weight_backward(const at::Tensor& x, const at::Tensor& weight,
                                          const at::Tensor& output_grad,
                                          const ConvTransposeParams& p) {
  const std::array<bool, 3> mask = {false, true, false};
  if (p.native()) {
    return std::get<1>(at::convolution_backward(
        output_grad, x, weight, at::OptionalIntArrayRef{}, p.stride, p.padding, p.dilation,
        /*transposed=*/true, p.padding_out, p.groups, mask));
  }
  // Adjoint of the crop/extend in conv_transpose_forward, then the full transposed convolution.
  const Ints zeros(p.dims(), 0);
  const at::Tensor full_grad = at::constant_pad_nd(output_grad, p.output_to_full_pads(), 0);
  return std::get<1>(at::convolution_backward(full_grad, x, weight, at::OptionalIntArrayRef{},
                                              p.stride, zeros, p.dilation, /*transposed=*/true,
                                              zeros, p.groups, mask));
}

}  // namespace tb::backend::libtorch::conv
