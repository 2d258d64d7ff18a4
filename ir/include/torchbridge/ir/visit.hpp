// Walks every tensor, scalar and slice range an operation holds, in field order, including those
// inside Option, Vec and nested option structs. Used to resolve an op's inputs and outputs and to
// bind cached graphs (Burn's IrVisitorMut visits exactly these; docs/protocol-0.22.1.md §4).
#pragma once

#include "torchbridge/ir/operation.hpp"

namespace tb::ir {

// Output fields are named out, out_indices, outputs (Custom) and *_grad of DeformConv2dBackward;
// every other tensor is an input. Drop's tensor is an input; Init's `out` is an output.
class OpVisitor {
 public:
  virtual ~OpVisitor() = default;
  virtual void tensor(TensorIr& tensor, bool is_output) {}
  virtual void scalar(ScalarIr& scalar) {}
  virtual void range(Slice& range) {}
};

class ConstOpVisitor {
 public:
  virtual ~ConstOpVisitor() = default;
  virtual void tensor(const TensorIr& tensor, bool is_output) {}
  virtual void scalar(const ScalarIr& scalar) {}
  virtual void range(const Slice& range) {}
};

void visit(OperationIr& op, OpVisitor& visitor);
void visit(const OperationIr& op, ConstOpVisitor& visitor);

}  // namespace tb::ir
