// What one op's run shares between the executor's steps (executor.cpp: resolve, run, commit) and
// its quantized path (executor_quant.cpp): the op's context, the values it produced, and the
// scratch vectors kept from one op to the next.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "exec/executor.hpp"
#include "lower/lowering.hpp"
#include "quant/quant.hpp"
#include "torchbridge/ir/visit.hpp"

namespace tb::backend::libtorch {

using TensorIrs = std::vector<const ir::TensorIr*>;

// Splits an op's tensors into inputs and outputs (into the given vectors, emptied first).
struct SplitTensors final : ir::ConstOpVisitor {
  TensorIrs& inputs;
  TensorIrs& outputs;
  SplitTensors(TensorIrs& in, TensorIrs& out) : inputs(in), outputs(out) {
    inputs.clear();
    outputs.clear();
  }
  void tensor(const ir::TensorIr& t, bool is_output) override {
    (is_output ? outputs : inputs).push_back(&t);
  }
};

struct Produced {
  const ir::TensorIr* t;
  at::Tensor value;
  std::optional<ir::DType> held;  // set where it differs from t's declared dtype
};

class LibTorchExecutor::Context final : public OpContext, public quant::QuantIo {
 public:
  using OpContext::OpContext;
  std::vector<Produced> produced;
  std::vector<std::pair<const ir::TensorIr*, quant::QTensor>> produced_quantized;
  // Outputs declared quantized, computed in float and requantized after the lowering.
  std::vector<std::pair<std::uint64_t, quant::QTensor>> requantized;
  std::vector<std::pair<std::uint64_t, const quant::QTensor*>> quantized_inputs;
  quant::Encoding quant_encoding = quant::Encoding::kMulInverseHalfAway;

  bool produced_output(std::uint64_t id) const;
  const quant::QTensor* quantized(const ir::TensorIr& t) const override;
  Status store_quantized(const ir::TensorIr& t, quant::QTensor value) override;
  quant::Encoding encoding() const override { return quant_encoding; }

  // The session's table, where an op may give views of a tensor it updates copies of their own
  // (null: the quantized rewrite, whose inputs are dequantized copies).
  HandleTable* handles = nullptr;

 protected:
  void store(const ir::TensorIr& t, at::Tensor value, const ir::DType& held) override;
  bool unshare(std::uint64_t id, const at::Tensor& x) const override {
    return handles != nullptr && handles->unshare_views(x, id);
  }
};

struct LibTorchExecutor::Scratch {
  TensorIrs inputs, outputs;
  std::vector<const Handle*> resolved;
  std::vector<OpContext::Input> ctx_inputs;
  std::vector<Produced> produced;
};

// An op whose inputs or outputs are quantized, as it runs on dequantized values
// (docs/quantization.md: quantized tensors reach only the quantization lowering as such): quantized
// inputs dequantized to the float dtype `compute`, quantized outputs computed in it and requantized
// afterwards.
class QuantRewrite {
 public:
  // Whether `op` needs the rewrite, given its resolved inputs and its outputs.
  static bool needed(const ir::OperationIr& op, const std::vector<const Handle*>& resolved,
                     const TensorIrs& outputs);

  QuantRewrite(const ir::OperationIr& op, const std::vector<const Handle*>& resolved,
               quant::Encoding encoding);
  // The op as it runs: the original with its quantized tensors made float.
  const ir::OperationIr& plain() const { return plain_; }
  const TensorIrs& plain_outputs() const { return plain_outputs_; }

  // Binds the inputs: plain tensors as they are, quantized ones dequantized (the quantize
  // lowering's own quantized inputs raw).
  Status bind_inputs(std::vector<OpContext::Input>& inputs,
                     std::vector<std::pair<std::uint64_t, const quant::QTensor*>>& raw);
  // Requantizes the op's outputs declared quantized into `out`.
  Status requantize(const TensorIrs& outputs, const std::vector<Produced>& produced,
                    std::vector<std::pair<std::uint64_t, quant::QTensor>>& out) const;

 private:
  bool dequantized_input(std::size_t i) const;

  const std::vector<const Handle*>& resolved_;
  ir::OperationIr plain_;
  TensorIrs plain_inputs_, plain_outputs_;
  ir::DType compute_ = ir::DTypeKind::F32;
  bool quantize_op_ = false;
  bool dequantize_op_ = false;
  quant::Encoding encoding_;
  std::vector<at::Tensor> dequantized_;  // reserved up front: ctx.inputs point into it
};

}  // namespace tb::backend::libtorch
