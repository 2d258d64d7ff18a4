// TorchScript modules served as custom ops: a Burn program ships `OperationIr::Custom` with the
// module's name as the op id, and the host runs the module's `forward` on the session's device.
//
// How an op maps onto `forward(self, ...)`:
// - parameters typed Tensor take the op's input tensors, in order; a single List[Tensor]
//   parameter instead takes all of them;
// - parameters typed float, int, bool or number (or Optional of those) take the op's scalars, in
//   order; trailing ones with a default may be left out;
// - the result fills the declared outputs: a Tensor is one output, a tuple or list of tensors
// (nested
//   tuples flattened) is one output per element. Shapes and dtypes are checked by the host against
//   the declaration.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/result.hpp"

namespace tb::backend::libtorch {

// One parameter of `forward` after `self`.
struct TorchScriptParam {
  enum class Role { kTensor, kTensorList, kScalar };
  std::string name;
  std::string type;  // TorchScript's spelling: "Tensor", "float", "Optional[int]"...
  Role role = Role::kTensor;
  bool has_default = false;
  std::string default_value;  // as TorchScript prints it, when has_default
};

// What a client must declare to call a module.
struct TorchScriptSignature {
  std::string schema;  // "forward(Tensor x, float scale=2.) -> Tensor"
  std::vector<TorchScriptParam> params;
  std::string returns;          // "Tensor", "(Tensor, Tensor)", "List[Tensor]"
  int outputs = 1;              // declared outputs; -1 when only known at run time (a list)
  bool mutates_state = false;   // forward assigns module attributes: calls are serialized
  bool mutates_inputs = false;  // forward writes to an input: inputs are copied first

  // A multi-line, human-readable account of the above ("what to declare").
  std::string describe() const;
};

struct TorchScriptOp {
  TorchScriptSignature signature;
  CustomOpHandler handler;
};

// Loads the module at `path` once per distinct device in `devices` (Backend::device_name()
// spellings: "cpu", "cuda:0"), in eval mode, and builds the handler. A module whose `forward`
// cannot be served (no forward, a parameter of another type) is an error here, not at the first
// call.
Result<TorchScriptOp> load_torchscript_op(const std::string& name, const std::string& path,
                                          const std::vector<std::string>& devices);

// `NAME=PATH` (the CLI's --model) loaded as above and added to `registry` under NAME.
Result<TorchScriptSignature> add_torchscript_op(CustomOpRegistry& registry, const std::string& spec,
                                                const std::vector<std::string>& devices);

// The signature of the module at `path`, loaded on CPU.
Result<TorchScriptSignature> describe_torchscript(const std::string& path);

}  // namespace tb::backend::libtorch
