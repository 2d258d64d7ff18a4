// Float.Quantize and Float.Dequantize. The quantized tensors themselves (bytes, torch qint8,
// formulas) live in quant.cpp; the executor's op context hands them over through quant::QuantIo.
#include "lower/lowering.hpp"
#include "quant/quant.hpp"

namespace tb::backend::libtorch {

namespace {

quant::QuantIo* quant_io(OpContext& ctx) {
  return dynamic_cast<quant::QuantIo*>(&ctx);
}

}  // namespace

Status lower_Float_Quantize(OpContext& ctx, const ir::QuantizeOpIr& p) {
  auto* io = quant_io(ctx);
  if (!io) return make_error(ErrorCode::kInternal, "this op context holds no quantized tensors");
  if (!p.out.dtype.is_quantized()) {
    return ctx.invalid("output #{} is declared {}, not a quantized dtype", p.out.id.value,
                       p.out.dtype.name());
  }
  if (p.out.dtype.scheme != p.scheme) {
    return ctx.invalid("output #{} is declared {} but the op quantizes to {}", p.out.id.value,
                       quant::describe(p.out.dtype.scheme), quant::describe(p.scheme));
  }
  std::optional<at::Tensor> global;
  if (p.qparams.global) global = ctx.in(*p.qparams.global);
  TB_TRY_ASSIGN(auto q, quant::quantize(ctx.in(p.tensor), p.scheme, ctx.in(p.qparams.scales),
                                        global, io->encoding()));
  if (!same_shape(q.values.sizes(), p.out.shape.dims)) {
    return ctx.invalid("output #{} is declared [{}], the input has shape {}", p.out.id.value,
                       fmt::join(p.out.shape.dims, ", "), shape_string(q.values.sizes()));
  }
  return io->store_quantized(p.out, std::move(q));
}

Status lower_Float_Dequantize(OpContext& ctx, const ir::DequantizeOpIr& p) {
  auto* io = quant_io(ctx);
  if (!io) return make_error(ErrorCode::kInternal, "this op context holds no quantized tensors");
  const quant::QTensor* q = io->quantized(p.input);
  if (!q) {
    return ctx.invalid("tensor #{} holds {} values, not quantized ones", p.input.id.value,
                       c10::toString(ctx.in(p.input).scalar_type()));
  }
  if (!p.out.dtype.is_float()) {
    return ctx.invalid("output #{} is declared {}; Dequantize produces a float dtype",
                       p.out.id.value, p.out.dtype.name());
  }
  TB_TRY_ASSIGN(auto values, quant::dequantize(*q));
  return ctx.out(p.out, values);
}

}  // namespace tb::backend::libtorch
