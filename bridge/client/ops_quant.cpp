// Quantization (Float.Quantize / Float.Dequantize, Burn's QFloat) and custom ops hosted by the
// server.
#include <cstring>

#include "ops.hpp"
#include "torchbridge/ir/quant_value.hpp"

namespace tb::client {

using namespace detail;

ir::QuantScheme q8_symmetric_scheme() {
  ir::QuantScheme s;
  s.value = ir::QuantValue::Q8S;
  s.store = ir::QuantStore{ir::QuantStoreKind::Native, 0};
  s.mode = ir::QuantMode::Symmetric;
  s.tensor = ir::ScaleDtype::F32;
  s.block = std::nullopt;
  return s;
}

Tensor quantize(Tensor x, Tensor scales, const ir::QuantScheme& scheme) {
  constexpr std::string_view kName = "quantize";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x, &scales}));
    if (!x.dtype().is_float() || !scales.dtype().is_float()) {
      return invalid(kName, fmt::format("needs float values and scales, got {} and {}",
                                        x.dtype().name(), scales.dtype().name()));
    }
    if (scheme.block) {
      return invalid(kName,
                     "block-wise schemes need a scale grid; this client quantizes per tensor");
    }
    if (scales.shape() != Shape{1}) {
      return invalid(kName, fmt::format("a per-tensor scale is shape [1], got {}",
                                        shape_text(scales.shape())));
    }
    const ir::DType in_dtype = x.dtype();
    return emit(p, x.shape(), ir::DType::qfloat(scheme), [&](const ir::TensorIr& out) {
      return make(
          ir::OpCategory::Float, ir::FloatOp::Quantize, in_dtype,
          ir::QuantizeOpIr{take(x), ir::QuantizationParametersIr{take(scales), std::nullopt},
                           scheme, out});
    });
  });
}

Tensor quantize_dynamic(Tensor x, const ir::QuantScheme& scheme) {
  const ir::QuantValueFacts value = ir::quant_value_facts(scheme.value);
  if (value.minifloat) {
    return Tensor::failed(invalid("quantize_dynamic", "only integer value kinds (Q8/Q4/Q2) here"));
  }
  // Burn's per-tensor dynamic scale: 2 * max|x| / (b - a).
  const float range = value.max - value.min;
  Tensor scales = reduce_all("quantize_dynamic", ir::NumericOp::MaxAbs, x) * (2.0 / range);
  return quantize(std::move(x), std::move(scales), scheme);
}

Tensor dequantize(Tensor x, std::optional<ir::DType> dtype) {
  constexpr std::string_view kName = "dequantize";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x}));
    if (!x.dtype().is_quantized()) {
      return invalid(kName, fmt::format("the tensor is {}, not quantized", x.dtype().name()));
    }
    const ir::DType out_dtype = dtype.value_or(ir::DType(ir::DTypeKind::F32));
    if (!out_dtype.is_float()) {
      return invalid(kName, fmt::format("to {}: a float dtype is needed", out_dtype.name()));
    }
    return emit(p, x.shape(), out_dtype, [&](const ir::TensorIr& out) {
      return make(ir::OpCategory::Float, ir::FloatOp::Dequantize, out_dtype,
                  ir::DequantizeOpIr{take(x), out});
    });
  });
}

Result<Q8Values> q8_values(const ir::TensorData& data) {
  const auto& s = data.dtype.scheme;
  if (!data.dtype.is_quantized() ||
      (s.value != ir::QuantValue::Q8S && s.value != ir::QuantValue::Q8F) || s.block ||
      s.store.kind != ir::QuantStoreKind::Native) {
    return make_error(ErrorCode::kInvalidArgument,
                      "q8_values: {} is not a per-tensor 8-bit scheme with a native store",
                      data.dtype.name());
  }
  const std::uint64_t n = ir::num_elements(data.shape);
  if (data.bytes.size() != n + 4) {
    return make_error(ErrorCode::kDecode, "q8_values: {} bytes for {} values and one f32 scale",
                      data.bytes.size(), n);
  }
  Q8Values out;
  out.values.resize(n);
  if (n) std::memcpy(out.values.data(), data.bytes.data(), n);
  std::memcpy(&out.scale, data.bytes.data() + n, 4);
  return out;
}

// ---- Custom ops. ---------------------------------------------------------------------------

std::vector<Tensor> custom(const Device& device, std::string id, std::vector<Tensor> inputs,
                           std::vector<TensorSpec> outputs, std::vector<ir::ScalarIr> scalars) {
  const std::string name = fmt::format("custom op '{}'", id);
  auto fail_all = [&](Error e) {
    std::vector<Tensor> failed;
    for (std::size_t i = 0; i < outputs.size(); ++i) failed.push_back(Tensor::failed(e));
    return failed;
  };
  if (!device.valid()) return fail_all(invalid(name, "the Device is not connected"));
  const auto& session = Access::session(device);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto s = prepare(name, {&inputs[i]});
    if (!s) return fail_all(s.error());
    if (s.value().session != session) {
      return fail_all(
          invalid(name, fmt::format("input #{} lives on {}, not on {}", i,
                                    s.value().session->describe(), session->describe())));
    }
  }
  for (const auto& spec : outputs) {
    if (auto s = check_shape(name, spec.shape, std::nullopt); !s) return fail_all(s.error());
  }
  ir::CustomOpIr op;
  op.id = std::move(id);
  for (auto& t : inputs) op.inputs.push_back(take(t));
  std::vector<Tensor> results;
  for (auto& spec : outputs) {
    auto out = output(session, spec.shape, spec.dtype);
    op.outputs.push_back(out.ir);
    results.push_back(std::move(out.tensor));
  }
  op.scalars = std::move(scalars);
  ir::OperationIr wire;
  wire.kind = ir::OpKind::Custom_Op;
  wire.payload = std::move(op);
  send(session, std::move(wire));
  return results;
}

}  // namespace tb::client
