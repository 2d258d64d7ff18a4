// The executor's quantized path (QuantRewrite, executor_context.hpp): only ops that touch a
// quantized tensor come here, so a plain op never pays for it.
#include <fmt/format.h>

#include "exec/executor_context.hpp"
#include "runtime/aten_guard.hpp"
#include "runtime/dtype.hpp"

namespace tb::backend::libtorch {

namespace {

// Ops that only move values: on a per-tensor quantized input their output keeps its scale, as
// burn-flex's q_reshape, q_swap_dims, q_select... keep it (block schemes requantize).
bool moves_values(ir::OpKind kind) {
  using ir::BaseOp;
  using ir::OpCategory;
  constexpr BaseOp kMoves[] = {BaseOp::Reshape, BaseOp::SwapDims, BaseOp::Permute, BaseOp::Flip,
                               BaseOp::Expand,  BaseOp::Unfold,   BaseOp::Slice,   BaseOp::Select,
                               BaseOp::Gather,  BaseOp::RepeatDim};
  for (BaseOp b : kMoves)
    if (kind == ir::leaf_of(OpCategory::BaseFloat, b)) return true;
  return false;
}

// Makes the quantized tensors of an op float: its inputs marked in `quantized_inputs`, and its
// quantized outputs unless `keep_outputs`.
struct Dequantized final : ir::OpVisitor {
  const std::vector<bool>* quantized_inputs = nullptr;
  ir::DType compute;
  bool keep_outputs = false;
  std::size_t input = 0;
  void tensor(ir::TensorIr& t, bool is_output) override {
    if (!is_output) {
      if ((*quantized_inputs)[input++]) t.dtype = compute;
    } else if (t.dtype.is_quantized() && !keep_outputs) {
      t.dtype = compute;
    }
  }
};

bool is_tagged(const ir::OperationIr& op) {
  return ir::category_has_dtype(op.category()) && op.dtype.is_quantized();
}

}  // namespace

bool QuantRewrite::needed(const ir::OperationIr& op, const std::vector<const Handle*>& resolved,
                          const TensorIrs& outputs) {
  const bool quantize_op = op.kind == ir::OpKind::Float_Quantize;
  const bool dequantize_op = op.kind == ir::OpKind::Float_Dequantize;
  for (const Handle* h : resolved)
    if (h->q && !dequantize_op) return true;
  for (const ir::TensorIr* o : outputs)
    if (o->dtype.is_quantized() && !quantize_op) return true;
  return is_tagged(op) && !quantize_op && !dequantize_op;
}

QuantRewrite::QuantRewrite(const ir::OperationIr& op, const std::vector<const Handle*>& resolved,
                           quant::Encoding encoding)
    : resolved_(resolved),
      plain_(op),
      quantize_op_(op.kind == ir::OpKind::Float_Quantize),
      dequantize_op_(op.kind == ir::OpKind::Float_Dequantize),
      encoding_(encoding) {
  if (ir::category_has_dtype(op.category()) && op.dtype.is_float()) compute_ = op.dtype;
  if (is_tagged(op) && !quantize_op_ && !dequantize_op_) plain_.dtype = compute_;
  std::vector<bool> quantized_inputs(resolved.size());
  for (std::size_t i = 0; i < resolved.size(); ++i) quantized_inputs[i] = dequantized_input(i);
  Dequantized rewriter;
  rewriter.quantized_inputs = &quantized_inputs;
  rewriter.compute = compute_;
  rewriter.keep_outputs = quantize_op_;
  ir::visit(plain_, rewriter);
  SplitTensors split(plain_inputs_, plain_outputs_);
  ir::visit(plain_, split);
  dequantized_.reserve(resolved.size());
}

bool QuantRewrite::dequantized_input(std::size_t i) const {
  return resolved_[i]->q && !dequantize_op_;
}

Status QuantRewrite::bind_inputs(
    std::vector<OpContext::Input>& inputs,
    std::vector<std::pair<std::uint64_t, const quant::QTensor*>>& raw) {
  return aten_guard("dequantizing an input", [&]() -> Status {
    for (std::size_t i = 0; i < resolved_.size(); ++i) {
      const Handle& h = *resolved_[i];
      const std::uint64_t id = plain_inputs_[i]->id.value;
      if (!h.q) {
        inputs.push_back({id, &h.tensor});
      } else if (!dequantized_input(i)) {
        inputs.push_back({id, &h.q->values});
        raw.emplace_back(id, h.q.get());
      } else {
        auto values = quant::dequantize(*h.q);
        if (!values) return with_context(values.error(), fmt::format("dequantizing input #{}", id));
        dequantized_.push_back(to_storage(values.value(), compute_));
        inputs.push_back({id, &dequantized_.back()});
      }
    }
    return ok();
  });
}

Status QuantRewrite::requantize(const TensorIrs& outputs, const std::vector<Produced>& produced,
                                std::vector<std::pair<std::uint64_t, quant::QTensor>>& out) const {
  if (quantize_op_) return ok();  // the quantize lowering stores its quantized outputs itself
  const quant::QTensor* source = nullptr;
  std::size_t sources = 0;
  for (std::size_t i = 0; i < resolved_.size(); ++i) {
    if (dequantized_input(i) && resolved_[i]->q.get() != source) {
      source = resolved_[i]->q.get();
      ++sources;
    }
  }
  return aten_guard("requantizing", [&]() -> Status {
    for (const ir::TensorIr* o : outputs) {
      if (!o->dtype.is_quantized()) continue;
      const at::Tensor* value = nullptr;
      for (const auto& p : produced)
        if (p.t->id.value == o->id.value) value = &p.value;
      if (!value) continue;
      const ir::QuantScheme& scheme = o->dtype.scheme;
      Result<quant::QTensor> q = make_error(ErrorCode::kInternal, "unset");
      if (moves_values(plain_.kind) && sources == 1 && !source->scheme.block && !scheme.block &&
          source->scheme.value == scheme.value && source->scheme.mode == scheme.mode &&
          source->scheme.tensor == scheme.tensor) {
        quant::QTensor like = *source;
        if (like.scheme != scheme) like.packing = quant::Packing::kPerLine;
        like.scheme = scheme;
        q = quant::requantize_like(*value, like, encoding_);
      } else {
        q = quant::quantize_dynamic(*value, scheme, encoding_);
      }
      if (!q) return with_context(q.error(), fmt::format("requantizing output #{}", o->id.value));
      out.emplace_back(o->id.value, std::move(q).value());
    }
    return ok();
  });
}

}  // namespace tb::backend::libtorch
