// Module ops, convolution part: Conv{1,2,3}d and their x/weight/bias backward ops,
// ConvTranspose{1,2,3}d and their weight/bias backward ops (DeformableConv2d is in
// lower_deform_conv.cpp).
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

#include "lower/lower_families.hpp"
#include "lower/module_util.hpp"

namespace tb::backend::libtorch {

namespace {

template <std::size_t N>
Ints to_ints(const std::array<std::uint64_t, N>& a) {
  Ints v(N);
  for (std::size_t i = 0; i < N; ++i) v[i] = static_cast<std::int64_t>(a[i]);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Convolution.

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
ConvParams params_of(const ir::Conv1dOptionsIr& o) {
  return conv_params<1>(o.stride, o.padding, o.dilation, o.groups);
}
ConvParams params_of(const ir::Conv2dOptionsIr& o) {
  return conv_params<2>(o.stride, o.padding, o.dilation, o.groups);
}
ConvParams params_of(const ir::Conv3dOptionsIr& o) {
  std::array<ir::UsizePair, 3> padding;
  for (std::size_t i = 0; i < 3; ++i) padding[i] = {o.padding[i], o.padding[i]};
  return conv_params<3>(o.stride, padding, o.dilation, o.groups);
}

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

at::Tensor conv_forward(const at::Tensor& x, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const ConvParams& p) {
  const at::Tensor b = bias ? *bias : at::Tensor();
  return at::convolution(pad_asymmetric(x, p), weight, b, p.stride, p.symmetric(), p.dilation,
                         /*transposed=*/false, Ints(p.dims(), 0), p.groups);
}

// Gradient of conv_forward w.r.t. x (which = 0) or weight (which = 1).
at::Tensor conv_backward(const at::Tensor& x, const at::Tensor& weight,
                         const at::Tensor& output_grad, const ConvParams& p, int which) {
  const at::Tensor padded = pad_asymmetric(x, p);
  const std::array<bool, 3> mask = {which == 0, which == 1, false};
  auto grads = at::convolution_backward(output_grad, padded, weight, at::OptionalIntArrayRef{},
                                        p.stride, p.symmetric(), p.dilation,
                                        /*transposed=*/false, Ints(p.dims(), 0), p.groups, mask);
  if (which == 1) return std::get<1>(grads);
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

// ---------------------------------------------------------------------------------------------
// Transposed convolution.

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

// ---------------------------------------------------------------------------------------------
// Lowerings.

template <class Op>
Status lower_conv(OpContext& ctx, const Op& op) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const auto bias = ctx.in(op.bias);
  const auto type = compute_type({&x, &weight, bias ? &*bias : nullptr}, ctx.device());
  return ctx.out(op.out, conv_forward(as_type(x, type), as_type(weight, type), as_type(bias, type),
                                      params_of(op.options)));
}

template <class Op>
Status lower_conv_backward(OpContext& ctx, const Op& op, int which) {
  const at::Tensor& x = ctx.in(op.x);
  const at::Tensor& weight = ctx.in(op.weight);
  const at::Tensor& grad = ctx.in(op.output_grad);
  const auto type = compute_type({&x, &weight, &grad}, ctx.device());
  return ctx.out(op.out, conv_backward(as_type(x, type), as_type(weight, type), as_type(grad, type),
                                       params_of(op.options), which));
}

template <class Op>
Status lower_bias_backward(OpContext& ctx, const Op& op) {
  return ctx.out(op.out, bias_backward(ctx.in(op.output_grad)).reshape(ctx.in(op.bias).sizes()));
}

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

}  // namespace

Status lower_Module_Conv1d(OpContext& ctx, const ir::Conv1dOpIr& op) {
  return lower_conv(ctx, op);
}

Status lower_Module_Conv1dXBackward(OpContext& ctx, const ir::Conv1dXBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 0);
}

Status lower_Module_Conv1dWeightBackward(OpContext& ctx, const ir::Conv1dWeightBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 1);
}

Status lower_Module_Conv1dBiasBackward(OpContext& ctx, const ir::Conv1dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_Conv2d(OpContext& ctx, const ir::Conv2dOpIr& op) {
  return lower_conv(ctx, op);
}

Status lower_Module_Conv2dXBackward(OpContext& ctx, const ir::Conv2dXBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 0);
}

Status lower_Module_Conv2dWeightBackward(OpContext& ctx, const ir::Conv2dWeightBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 1);
}

Status lower_Module_Conv2dBiasBackward(OpContext& ctx, const ir::Conv2dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_Conv3d(OpContext& ctx, const ir::Conv3dOpIr& op) {
  return lower_conv(ctx, op);
}

Status lower_Module_Conv3dXBackward(OpContext& ctx, const ir::Conv3dXBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 0);
}

Status lower_Module_Conv3dWeightBackward(OpContext& ctx, const ir::Conv3dWeightBackwardOpIr& op) {
  return lower_conv_backward(ctx, op, 1);
}

Status lower_Module_Conv3dBiasBackward(OpContext& ctx, const ir::Conv3dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_ConvTranspose1d(OpContext& ctx, const ir::ConvTranspose1dOpIr& op) {
  return lower_conv_transpose(ctx, op);
}

Status lower_Module_ConvTranspose2d(OpContext& ctx, const ir::ConvTranspose2dOpIr& op) {
  return lower_conv_transpose(ctx, op);
}

Status lower_Module_ConvTranspose3d(OpContext& ctx, const ir::ConvTranspose3dOpIr& op) {
  return lower_conv_transpose(ctx, op);
}

Status lower_Module_ConvTranspose1dWeightBackward(OpContext& ctx,
                                                  const ir::ConvTranspose1dWeightBackwardOpIr& op) {
  return lower_conv_transpose_weight_backward(ctx, op);
}

Status lower_Module_ConvTranspose1dBiasBackward(OpContext& ctx,
                                                const ir::ConvTranspose1dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_ConvTranspose2dWeightBackward(OpContext& ctx,
                                                  const ir::ConvTranspose2dWeightBackwardOpIr& op) {
  return lower_conv_transpose_weight_backward(ctx, op);
}

Status lower_Module_ConvTranspose2dBiasBackward(OpContext& ctx,
                                                const ir::ConvTranspose2dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

Status lower_Module_ConvTranspose3dWeightBackward(OpContext& ctx,
                                                  const ir::ConvTranspose3dWeightBackwardOpIr& op) {
  return lower_conv_transpose_weight_backward(ctx, op);
}

Status lower_Module_ConvTranspose3dBiasBackward(OpContext& ctx,
                                                const ir::ConvTranspose3dBiasBackwardOpIr& op) {
  return lower_bias_backward(ctx, op);
}

}  // namespace tb::backend::libtorch
