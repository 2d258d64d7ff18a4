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
//
// The training contract: every served module NAME is also served as
// - NAME::parameters: no inputs; one output per float parameter (TorchScriptSignature::parameters
//   order), copies of the module's values;
// - NAME::functional: forward's inputs, then one tensor per parameter; forward computed with those
//   parameters in place of the module's (which are never touched);
// - NAME::backward: forward's inputs, the parameters, then one gradient per forward output; one
//   gradient per input (zeros for int and bool inputs), then one per parameter, by LibTorch's
//   autograd over a recomputed forward;
// - NAME::spec: no inputs, or forward's inputs and scalars; one I64 output [C] describing the
//   parameters and, given inputs, forward's outputs (encode_spec below).
// docs/torchscript.md, "Training through a hosted module", is the user-facing account.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
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

// A float parameter of the module, as the training contract passes it.
struct TorchScriptParameter {
  std::string name;  // as in PyTorch's state dict: "fc1.weight"
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
};

// What a client must declare to call a module.
struct TorchScriptSignature {
  std::string schema;  // "forward(Tensor x, float scale=2.) -> Tensor"
  std::vector<TorchScriptParam> params;
  std::string returns;          // "Tensor", "(Tensor, Tensor)", "List[Tensor]"
  int outputs = 1;              // declared outputs; -1 when only known at run time (a list)
  bool mutates_state = false;   // forward assigns module attributes: calls are serialized
  bool mutates_inputs = false;  // forward writes to an input: inputs are copied first
  // The float parameters, in the training contract's order (each shared tensor once). Buffers
  // and non-float parameters stay the module's own, read-only, in every mode.
  std::vector<TorchScriptParameter> parameters;

  // A multi-line, human-readable account of the above ("what to declare").
  std::string describe() const;
};

struct TorchScriptOp {
  TorchScriptSignature signature;
  CustomOpHandler handler;  // forward, served as NAME
  // The training contract's ops by full id: NAME::parameters, NAME::functional, ...
  std::vector<std::pair<std::string, CustomOpHandler>> training;
  // Bytes of parameters and buffers the copy on one device holds.
  std::uint64_t weight_bytes = 0;
};

// The training contract's op ids for module NAME.
inline constexpr const char* kParametersSuffix = "::parameters";
inline constexpr const char* kFunctionalSuffix = "::functional";
inline constexpr const char* kBackwardSuffix = "::backward";
inline constexpr const char* kSpecSuffix = "::spec";

// NAME::spec's output, as int64 values: [L, 1 (format version), P, per parameter (dtype code,
// rank, dims...), K, per output (dtype code, rank, dims...)]. L is the whole length; K is -1 (and
// no outputs follow) when the spec was asked without forward's inputs. Dtype codes: 0 f64, 1 f32,
// 2 f16, 3 bf16, 4 i64, 5 i32, 6 i16, 7 i8, 8 u8, 9 bool. A client declares [C]; when C < L
// only the first value (L) is set and the rest are 0, so the client asks again with C = L.
std::vector<int64_t> encode_spec(const std::vector<TorchScriptParameter>& parameters,
                                 const std::vector<at::Tensor>* outputs);
// The code above for `dtype`; -1 for a dtype outside the table.
int64_t spec_dtype_code(at::ScalarType dtype);

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
