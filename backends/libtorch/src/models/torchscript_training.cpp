// The training contract of a hosted TorchScript module (torchscript.hpp): its parameters as Burn
// tensors, forward with the client's parameters (functional mode), and backward by LibTorch's
// autograd.
//
// Functional calls never touch the hosted module. Each call runs forward on a per-call copy of the
// module objects: a shallow copy whose float-parameter slots hold the client's tensors and whose
// other slots (buffers, non-float parameters, plain attributes) are shared with the host's module.
// The copy shares the module's compiled methods, so nothing is recompiled, and an attribute that
// forward assigns lands on the copy and dies with the call, so concurrent sessions never see each
// other.
//
// Backward recomputes the forward under autograd rather than keeping the graph between ops: no
// state outlives an op, so memory is bounded by one op like any other, a client that never calls
// backward leaks nothing, and the order of a client's calls cannot matter.
#include <unordered_map>
#include <unordered_set>

#include <c10/core/GradMode.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/autograd.h>

#include "models/torchscript_module.hpp"
#include "runtime/aten_guard.hpp"

namespace tb::backend::libtorch {

namespace detail {

namespace {

using ObjectPtr = c10::intrusive_ptr<c10::ivalue::Object>;

bool is_module_object(const c10::IValue& v) {
  return v.isObject() && v.toObjectRef().type()->is_module();
}

// `seen` holds the objects and tensors already visited: a shared submodule or tensor counts once,
// and an object graph with a cycle ends.
void collect(const ObjectPtr& object, const std::string& prefix,
             std::unordered_set<const void*>& seen,
             std::vector<std::pair<std::string, at::Tensor>>& out) {
  if (!seen.insert(object.get()).second) return;
  const auto& type = object->type();
  for (std::size_t i = 0; i < type->numAttributes(); ++i) {
    const c10::IValue& v = object->getSlot(i);
    const std::string name = prefix + type->getAttributeName(i);
    if (type->is_parameter(i) && v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined() && t.is_floating_point() && seen.insert(t.unsafeGetTensorImpl()).second) {
        out.emplace_back(name, t);
      }
    } else if (is_module_object(v)) {
      collect(v.toObject(), name + ".", seen, out);
    }
  }
}

// The per-call copy described at the top. `memo` keeps a submodule shared by two parents shared.
ObjectPtr with_parameters(const ObjectPtr& object, const DeviceModule& dm,
                          const std::vector<at::Tensor>& params,
                          std::unordered_map<const c10::ivalue::Object*, ObjectPtr>& memo) {
  if (const auto it = memo.find(object.get()); it != memo.end()) return it->second;
  ObjectPtr copy = object->copy();
  memo.emplace(object.get(), copy);
  const auto& type = object->type();
  for (std::size_t i = 0; i < type->numAttributes(); ++i) {
    const c10::IValue& v = object->getSlot(i);
    if (type->is_parameter(i) && v.isTensor()) {
      const auto it = dm.parameter_index.find(v.toTensor().unsafeGetTensorImpl());
      if (it != dm.parameter_index.end()) copy->setSlot(i, params[it->second]);
    } else if (is_module_object(v)) {
      copy->setSlot(i, with_parameters(v.toObject(), dm, params, memo));
    }
  }
  return copy;
}

// The op's inputs split by the contract: forward's inputs, the parameters, then the rest.
struct Split {
  std::vector<at::Tensor> forward_inputs;
  std::vector<at::Tensor> params;
  std::vector<at::Tensor> rest;
};

Result<Split> split_inputs(const LoadedModule& m, const std::vector<at::Tensor>& inputs,
                           std::size_t rest, const char* what) {
  const auto& sig = m.signature;
  const std::size_t p = sig.parameters.size();
  if (inputs.size() < p + rest) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}{} takes forward's inputs, then {} parameter(s){}: the op passes {} "
                      "tensor(s)",
                      m.name, what, p,
                      rest ? fmt::format(", then {} output gradient(s)", rest) : "", inputs.size());
  }
  Split s;
  const std::size_t n = inputs.size() - p - rest;
  s.forward_inputs.assign(inputs.begin(), inputs.begin() + n);
  s.params.assign(inputs.begin() + n, inputs.begin() + n + p);
  s.rest.assign(inputs.begin() + n + p, inputs.end());
  for (std::size_t i = 0; i < p; ++i) {
    const auto& want = sig.parameters[i];
    const at::Tensor& got = s.params[i];
    if (got.sizes().vec() != want.shape || got.scalar_type() != want.dtype) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}{}: parameter {} ({}) must be [{}] {}, the op passes [{}] {}", m.name,
                        what, i, want.name, fmt::join(want.shape, ", "), c10::toString(want.dtype),
                        fmt::join(got.sizes(), ", "), c10::toString(got.scalar_type()));
    }
  }
  return s;
}

// forward on a per-call copy holding `params`; the caller sets the grad mode.
Result<std::vector<at::Tensor>> run_functional(const LoadedModule& m, DeviceModule& dm,
                                               const std::vector<at::Tensor>& inputs,
                                               const std::vector<at::Tensor>& params,
                                               const std::vector<ir::ScalarIr>& scalars) {
  TB_TRY_ASSIGN(auto args, forward_arguments(m.signature, inputs, scalars));
  TB_TRY_ASSIGN(c10::IValue result, aten_guard(fmt::format("module {} raised", m.path), [&] {
                  std::unordered_map<const c10::ivalue::Object*, ObjectPtr> memo;
                  ObjectPtr self;
                  {
                    // The slots of a module whose forward assigns attributes change under that
                    // mutex; copy them at rest.
                    std::unique_lock<std::mutex> lock(dm.mutex, std::defer_lock);
                    if (m.signature.mutates_state) lock.lock();
                    self = with_parameters(dm.module._ivalue(), dm, params, memo);
                  }
                  return torch::jit::Module(self).get_method("forward")(std::move(args));
                }));
  std::vector<at::Tensor> outputs;
  TB_TRY(flatten(result, outputs));
  return outputs;
}

Result<std::vector<at::Tensor>> parameters_op(const LoadedModule& m, const CustomOpCall& call) {
  if (!call.inputs.empty() || !call.op.scalars.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}{} takes no inputs and no scalars, the op passes {} and {}", m.name,
                      kParametersSuffix, call.inputs.size(), call.op.scalars.size());
  }
  TB_TRY_ASSIGN(DeviceModule * dm, module_on(m, call.device));
  std::vector<at::Tensor> out;
  // Copies: the session may update its tensors in place; the module's stay as loaded.
  for (const auto& p : dm->parameters) out.push_back(p.detach().clone());
  return out;
}

Result<std::vector<at::Tensor>> functional_op(const LoadedModule& m, const CustomOpCall& call) {
  TB_TRY_ASSIGN(DeviceModule * dm, module_on(m, call.device));
  TB_TRY_ASSIGN(Split s, split_inputs(m, call.inputs, 0, kFunctionalSuffix));
  c10::NoGradGuard no_grad;
  return run_functional(m, *dm, s.forward_inputs, s.params, call.op.scalars);
}

// How many gradients NAME::backward takes: one per forward output.
Result<std::size_t> output_count(const LoadedModule& m, std::size_t inputs) {
  const auto& sig = m.signature;
  if (sig.outputs >= 0) return static_cast<std::size_t>(sig.outputs);
  std::size_t tensor_params = 0;
  for (const auto& p : sig.params) {
    if (p.role == TorchScriptParam::Role::kTensorList) {
      return make_error(ErrorCode::kUnsupported,
                        "{}{}: forward takes a List[Tensor] and returns a list, so the op's "
                        "inputs cannot tell forward's inputs from the output gradients",
                        m.name, kBackwardSuffix);
    }
    if (p.role == TorchScriptParam::Role::kTensor) ++tensor_params;
  }
  const std::size_t fixed = tensor_params + sig.parameters.size();
  return inputs > fixed ? inputs - fixed : 0;
}

Result<std::vector<at::Tensor>> backward_op(const LoadedModule& m, const CustomOpCall& call) {
  TB_TRY_ASSIGN(DeviceModule * dm, module_on(m, call.device));
  TB_TRY_ASSIGN(const std::size_t k, output_count(m, call.inputs.size()));
  TB_TRY_ASSIGN(Split s, split_inputs(m, call.inputs, k, kBackwardSuffix));
  c10::AutoGradMode grad_mode(true);
  // Leaves: every float input and every parameter. Int and bool inputs get zero gradients.
  std::vector<at::Tensor> leaves;
  std::vector<at::Tensor> inputs;
  for (const auto& x : s.forward_inputs) {
    if (x.is_floating_point()) {
      leaves.push_back(x.detach().requires_grad_(true));
      inputs.push_back(leaves.back());
    } else {
      inputs.push_back(x);
    }
  }
  std::vector<at::Tensor> params;
  for (const auto& p : s.params) {
    leaves.push_back(p.detach().requires_grad_(true));
    params.push_back(leaves.back());
  }
  TB_TRY_ASSIGN(auto outputs, run_functional(m, *dm, inputs, params, call.op.scalars));
  if (outputs.size() != k) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}{}: forward returned {} output(s), the op passes {} gradient(s)", m.name,
                      kBackwardSuffix, outputs.size(), k);
  }
  std::vector<at::Tensor> roots;
  std::vector<at::Tensor> grads;
  for (std::size_t i = 0; i < k; ++i) {
    const at::Tensor& g = s.rest[i];
    if (!g.sizes().equals(outputs[i].sizes())) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}{}: gradient {} has shape [{}], forward's output {} has [{}]", m.name,
                        kBackwardSuffix, i, fmt::join(g.sizes(), ", "), i,
                        fmt::join(outputs[i].sizes(), ", "));
    }
    // An output that no leaf reaches (an int output, a constant) contributes nothing.
    if (!outputs[i].requires_grad()) continue;
    roots.push_back(outputs[i]);
    grads.push_back(g.to(outputs[i].scalar_type()));
  }
  std::vector<at::Tensor> leaf_grads(leaves.size());
  if (!roots.empty() && !leaves.empty()) {
    TB_TRY_ASSIGN(leaf_grads, aten_guard(fmt::format("{}{}", m.name, kBackwardSuffix), [&] {
                    return torch::autograd::grad(roots, leaves, grads, /*retain_graph=*/false,
                                                 /*create_graph=*/false, /*allow_unused=*/true);
                  }));
  }
  std::vector<at::Tensor> out;
  std::size_t next = 0;
  const auto grad_of = [&](const at::Tensor& like) {
    const at::Tensor& g = leaf_grads[next++];
    return g.defined() ? g.detach() : at::zeros_like(like);
  };
  for (const auto& x : s.forward_inputs) {
    out.push_back(x.is_floating_point() ? grad_of(x) : at::zeros_like(x));
  }
  for (const auto& p : s.params) out.push_back(grad_of(p));
  return out;
}

Result<std::vector<at::Tensor>> spec_op(const LoadedModule& m, const CustomOpCall& call) {
  if (call.op.outputs.size() != 1 || call.op.outputs[0].shape.dims.size() != 1 ||
      call.op.outputs[0].dtype.kind != ir::DTypeKind::I64) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}{} has one output, declared I64 with shape [C] (C values to fill)", m.name,
                      kSpecSuffix);
  }
  std::vector<at::Tensor> outputs;
  const bool with_outputs =
      !call.inputs.empty() || !call.op.scalars.empty() || m.signature.params.empty();
  if (with_outputs) {
    TB_TRY_ASSIGN(DeviceModule * dm, module_on(m, call.device));
    c10::NoGradGuard no_grad;
    TB_TRY_ASSIGN(outputs, run_functional(m, *dm, call.inputs, dm->parameters, call.op.scalars));
  }
  std::vector<int64_t> spec =
      encode_spec(m.signature.parameters, with_outputs ? &outputs : nullptr);
  const auto capacity = static_cast<std::size_t>(call.op.outputs[0].shape.dims[0]);
  if (spec.size() > capacity) {
    const int64_t length = static_cast<int64_t>(spec.size());
    spec.assign(capacity, 0);
    if (capacity > 0) spec[0] = length;
  }
  spec.resize(capacity, 0);
  return std::vector<at::Tensor>{
      at::tensor(spec, at::TensorOptions().dtype(at::kLong)).to(call.device)};
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> float_parameters(const torch::jit::Module& module) {
  std::unordered_set<const void*> seen;
  std::vector<std::pair<std::string, at::Tensor>> out;
  collect(module._ivalue(), "", seen, out);
  return out;
}

std::vector<std::pair<std::string, CustomOpHandler>> training_ops(
    const std::shared_ptr<const LoadedModule>& module) {
  using Op = Result<std::vector<at::Tensor>> (*)(const LoadedModule&, const CustomOpCall&);
  const std::pair<const char*, Op> ops[] = {{kParametersSuffix, parameters_op},
                                            {kFunctionalSuffix, functional_op},
                                            {kBackwardSuffix, backward_op},
                                            {kSpecSuffix, spec_op}};
  std::vector<std::pair<std::string, CustomOpHandler>> out;
  for (const auto& [suffix, op] : ops) {
    out.emplace_back(module->name + suffix,
                     [module, op = op](const CustomOpCall& call) { return op(*module, call); });
  }
  return out;
}

}  // namespace detail

int64_t spec_dtype_code(at::ScalarType dtype) {
  switch (dtype) {
    case at::kDouble:
      return 0;
    case at::kFloat:
      return 1;
    case at::kHalf:
      return 2;
    case at::kBFloat16:
      return 3;
    case at::kLong:
      return 4;
    case at::kInt:
      return 5;
    case at::kShort:
      return 6;
    case at::kChar:
      return 7;
    case at::kByte:
      return 8;
    case at::kBool:
      return 9;
    default:
      return -1;
  }
}

std::vector<int64_t> encode_spec(const std::vector<TorchScriptParameter>& parameters,
                                 const std::vector<at::Tensor>* outputs) {
  std::vector<int64_t> spec{0, 1, static_cast<int64_t>(parameters.size())};
  const auto put = [&](at::ScalarType dtype, c10::IntArrayRef shape) {
    spec.push_back(spec_dtype_code(dtype));
    spec.push_back(static_cast<int64_t>(shape.size()));
    spec.insert(spec.end(), shape.begin(), shape.end());
  };
  for (const auto& p : parameters) put(p.dtype, p.shape);
  if (outputs) {
    spec.push_back(static_cast<int64_t>(outputs->size()));
    for (const auto& o : *outputs) put(o.scalar_type(), o.sizes());
  } else {
    spec.push_back(-1);
  }
  spec[0] = static_cast<int64_t>(spec.size());
  return spec;
}

}  // namespace tb::backend::libtorch
