// nn ops (ModuleOperationIr and the dim-taking activations), with Burn's definitions: linear
// weight [in, out], layer norm over the last dim, attention masks true where masked out.
#include "ops.hpp"

namespace tb::client::nn {

using namespace detail;

namespace {

ir::OperationIr module_op(ir::ModuleOp variant, ir::OpPayload payload) {
  ir::OperationIr op;
  op.kind = ir::leaf_of(ir::OpCategory::Module, variant);
  op.payload = std::move(payload);
  return op;
}

// Option sizes go on the wire as usize: negative ones are refused here.
template <std::size_t N>
Result<ir::Usizes<N>> usizes(std::string_view op, std::string_view what,
                             const std::array<std::int64_t, N>& values) {
  ir::Usizes<N> out{};
  for (std::size_t i = 0; i < N; ++i) {
    if (values[i] < 0) return invalid(op, fmt::format("{}: negative size {}", what, values[i]));
    out[i] = static_cast<std::uint64_t>(values[i]);
  }
  return out;
}

// The output size of one spatial dim of a pooling window (PyTorch's and Burn's rule).
std::int64_t pool_out(std::int64_t size, std::int64_t kernel, std::int64_t stride,
                      std::int64_t padding, std::int64_t dilation, bool ceil_mode) {
  const std::int64_t span = size + 2 * padding - dilation * (kernel - 1) - 1;
  if (span < 0 || stride == 0) return 0;
  std::int64_t n = ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
  // A last window that would start in the right padding is dropped.
  if (ceil_mode && (n - 1) * stride >= size + padding) --n;
  return n;
}

Tensor pool2d(std::string_view name, bool max, Tensor x, const Pool2dOptions& o) {
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(name, {&x}, kFloatOnly));
    TB_TRY_ASSIGN(auto kernel, usizes(name, "kernel", o.kernel));
    TB_TRY_ASSIGN(auto stride, usizes(name, "stride", o.stride));
    TB_TRY_ASSIGN(auto padding, usizes(name, "padding", o.padding));
    TB_TRY_ASSIGN(auto dilation, usizes(name, "dilation", o.dilation));
    if (x.rank() != 4) {
      return invalid(name, fmt::format("needs x [N, C, H, W], got {}", shape_text(x.shape())));
    }
    Shape dims = x.shape();
    for (std::size_t i = 0; i < 2; ++i) {
      dims[2 + i] = pool_out(dims[2 + i], o.kernel[i], o.stride[i], o.padding[i],
                             max ? o.dilation[i] : 1, o.ceil_mode);
      if (dims[2 + i] == 0) {
        return invalid(name,
                       fmt::format("the window does not fit the input {}", shape_text(x.shape())));
      }
    }
    return emit(p, std::move(dims), p.dtype, [&](const ir::TensorIr& out) {
      if (max) {
        return module_op(
            ir::ModuleOp::MaxPool2d,
            ir::MaxPool2dOpIr{take(x), kernel, stride, padding, dilation, o.ceil_mode, out});
      }
      return module_op(ir::ModuleOp::AvgPool2d,
                       ir::AvgPool2dOpIr{take(x), kernel, stride, padding, ir::Usizes<2>{1, 1},
                                         o.count_include_pad, o.ceil_mode, out});
    });
  });
}

Tensor dim_activation(std::string_view name, ir::ActivationOp variant, Tensor x, std::int64_t dim) {
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(name, {&x}, kFloatOnly));
    TB_TRY_ASSIGN(const std::uint64_t axis, check_dim(name, x, dim));
    return emit(p, x.shape(), p.dtype, [&](const ir::TensorIr& out) {
      ir::OperationIr op;
      op.kind = ir::leaf_of(ir::OpCategory::Activation, variant);
      op.payload = ir::DimOpIr{take(x), out, axis};
      return op;
    });
  });
}

}  // namespace

Tensor linear(Tensor x, Tensor weight, std::optional<Tensor> bias) {
  constexpr std::string_view kName = "linear";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x, &weight}, kFloatOnly, {optional_input(bias)}));
    if (x.rank() < 1 || weight.rank() != 2 || x.dim(x.rank() - 1) != weight.dim(0) ||
        (bias && (bias->rank() != 1 || bias->dim(0) != weight.dim(1)))) {
      return invalid(
          kName, fmt::format("x {} weight {} (want [in, out]) bias {}", shape_text(x.shape()),
                             shape_text(weight.shape()), bias ? shape_text(bias->shape()) : "-"));
    }
    Shape dims = x.shape();
    dims.back() = weight.dim(1);
    return emit(p, std::move(dims), p.dtype, [&](const ir::TensorIr& out) {
      return module_op(ir::ModuleOp::Linear,
                       ir::LinearOpIr{take(x), take(weight), take(bias), out});
    });
  });
}

Tensor conv2d(Tensor x, Tensor weight, std::optional<Tensor> bias, Conv2dOptions o) {
  constexpr std::string_view kName = "conv2d";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x, &weight}, kFloatOnly, {optional_input(bias)}));
    TB_TRY_ASSIGN(auto stride, usizes(kName, "stride", o.stride));
    TB_TRY_ASSIGN(auto dilation, usizes(kName, "dilation", o.dilation));
    TB_TRY_ASSIGN(auto before,
                  usizes<2>(kName, "padding", {o.padding[0].first, o.padding[1].first}));
    TB_TRY_ASSIGN(auto after,
                  usizes<2>(kName, "padding", {o.padding[0].second, o.padding[1].second}));
    const auto& xs = x.shape();
    const auto& ws = weight.shape();
    if (xs.size() != 4 || ws.size() != 4 || o.groups <= 0 || xs[1] != ws[1] * o.groups ||
        ws[0] % o.groups != 0 || (bias && (bias->rank() != 1 || bias->dim(0) != ws[0]))) {
      return invalid(kName, fmt::format("x {} weight {} groups {}: want x [N, C, H, W], weight "
                                        "[O, C/groups, kH, kW], bias [O]",
                                        shape_text(xs), shape_text(ws), o.groups));
    }
    Shape dims{xs[0], ws[0], 0, 0};
    for (std::size_t i = 0; i < 2; ++i) {
      const std::int64_t span = xs[2 + i] + o.padding[i].first + o.padding[i].second -
                                o.dilation[i] * (ws[2 + i] - 1) - 1;
      if (span < 0 || o.stride[i] == 0) {
        return invalid(kName, fmt::format("the kernel {} does not fit the input {}", shape_text(ws),
                                          shape_text(xs)));
      }
      dims[2 + i] = span / o.stride[i] + 1;
    }
    const ir::Conv2dOptionsIr options{stride,
                                      {{{before[0], after[0]}, {before[1], after[1]}}},
                                      dilation,
                                      static_cast<std::uint64_t>(o.groups)};
    return emit(p, std::move(dims), p.dtype, [&](const ir::TensorIr& out) {
      return module_op(ir::ModuleOp::Conv2d,
                       ir::Conv2dOpIr{take(x), take(weight), take(bias), options, out});
    });
  });
}

Tensor max_pool2d(Tensor x, Pool2dOptions options) {
  return pool2d("max_pool2d", true, std::move(x), options);
}
Tensor avg_pool2d(Tensor x, Pool2dOptions options) {
  return pool2d("avg_pool2d", false, std::move(x), options);
}
Tensor softmax(Tensor x, std::int64_t dim) {
  return dim_activation("softmax", ir::ActivationOp::Softmax, std::move(x), dim);
}
Tensor log_softmax(Tensor x, std::int64_t dim) {
  return dim_activation("log_softmax", ir::ActivationOp::LogSoftmax, std::move(x), dim);
}

Tensor layer_norm(Tensor x, Tensor gamma, std::optional<Tensor> beta, double epsilon) {
  constexpr std::string_view kName = "layer_norm";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x, &gamma}, kFloatOnly, {optional_input(beta)}));
    const std::int64_t d = x.rank() ? x.dim(x.rank() - 1) : 0;
    if (x.rank() < 1 || gamma.shape() != Shape{d} || (beta && beta->shape() != Shape{d})) {
      return invalid(kName, fmt::format("x {} gamma {}: gamma and beta must be [{}]",
                                        shape_text(x.shape()), shape_text(gamma.shape()), d));
    }
    return emit(p, x.shape(), p.dtype, [&](const ir::TensorIr& out) {
      return module_op(ir::ModuleOp::LayerNorm, ir::LayerNormOpIr{take(x), take(gamma), take(beta),
                                                                  ir::ScalarIr::f(epsilon), out});
    });
  });
}

Tensor attention(Tensor q, Tensor k, Tensor v, std::optional<Tensor> mask,
                 std::optional<Tensor> bias, AttentionOptions o) {
  constexpr std::string_view kName = "attention";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&q, &k, &v}, kFloatOnly,
                                  {optional_input(mask), optional_input(bias)}));
    const auto& qs = q.shape();
    const auto& ks = k.shape();
    const auto& vs = v.shape();
    const bool ranks_ok = qs.size() == 4 && ks.size() == 4 && vs.size() == 4;
    const bool shapes_ok = ranks_ok && qs[0] == ks[0] && qs[1] == ks[1] && qs[3] == ks[3] &&
                           ks[0] == vs[0] && ks[1] == vs[1] && ks[2] == vs[2];
    const Shape scores = ranks_ok ? Shape{qs[0], qs[1], qs[2], ks[2]} : Shape{};
    if (!shapes_ok || (mask && mask->shape() != scores) || (bias && bias->shape() != scores)) {
      return invalid(kName, fmt::format("q {} k {} v {}: want [B, H, Sq, D], [B, H, Sk, D], "
                                        "[B, H, Sk, Dv]; mask and bias [B, H, Sq, Sk]",
                                        shape_text(qs), shape_text(ks), shape_text(vs)));
    }
    if (mask && !mask->dtype().is_bool()) return invalid(kName, "the mask must be a bool tensor");
    ir::AttentionOptionsIr options;
    if (o.scale) options.scale = ir::ScalarIr::f(*o.scale);
    if (o.softcap) options.softcap = ir::ScalarIr::f(*o.softcap);
    options.is_causal = o.is_causal;
    // The query's own dtype: unlike the other nn ops, attention has no F32 fallback for a
    // quantized query.
    const ir::DType dtype = q.dtype();
    return emit(p, Shape{qs[0], qs[1], qs[2], vs[3]}, dtype, [&](const ir::TensorIr& out) {
      return module_op(
          ir::ModuleOp::Attention,
          ir::AttentionOpIr{take(q), take(k), take(v), take(mask), take(bias), options, out});
    });
  });
}

}  // namespace tb::client::nn
