// TorchScript modules as custom ops (see torchscript.hpp for the calling convention): loading,
// feeding forward its arguments and calling it. What a forward accepts is
// torchscript_signature.cpp's.
//
// Concurrency: sessions run on their own threads and may call one module at once. A jit Module's
// methods are safe to run concurrently (each call gets its own interpreter frame; the graph
// executor guards its plan cache), as LibTorch's C++ inference servers rely on, as long as the call
// does not assign module attributes. So calls run concurrently, except for modules whose inlined
// `forward` contains prim::SetAttr: those take a per-device mutex. Each device gets its own
// loaded copy (torch::jit::load with that device), so devices never share parameters.
//
// Grad mode: calls run under NoGradGuard. InferenceMode would be cheaper but its tensors refuse
// in-place updates outside InferenceMode, and the session keeps the outputs as ordinary tensors.
#include "torchbridge/libtorch/torchscript.hpp"

#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include <c10/core/GradMode.h>
#include <fmt/format.h>
#include <torch/script.h>

#include "models/torchscript_module.hpp"
#include "models/torchscript_signature.hpp"
#include "runtime/aten_guard.hpp"
#include "torchbridge/libtorch/models.hpp"

namespace tb::backend::libtorch {

namespace detail {

using Role = TorchScriptParam::Role;

Result<std::vector<c10::IValue>> forward_arguments(const TorchScriptSignature& sig,
                                                   const std::vector<at::Tensor>& inputs,
                                                   const std::vector<ir::ScalarIr>& scalars) {
  std::vector<c10::IValue> args;
  std::size_t next_input = 0;
  std::size_t next_scalar = 0;
  const auto input = [&](std::size_t i) {
    return sig.mutates_inputs ? inputs[i].clone() : inputs[i];
  };
  std::size_t tensor_params = 0;
  std::size_t scalar_params = 0;
  std::size_t required_scalars = 0;
  bool list = false;
  for (const auto& p : sig.params) {
    if (p.role == Role::kTensor) ++tensor_params;
    if (p.role == Role::kTensorList) list = true;
    if (p.role == Role::kScalar) {
      ++scalar_params;
      if (!p.has_default) required_scalars = scalar_params;
    }
  }
  if (!list && inputs.size() != tensor_params) {
    return make_error(ErrorCode::kInvalidArgument, "{} takes {} tensor input(s), the op passes {}",
                      sig.schema, tensor_params, inputs.size());
  }
  if (scalars.size() < required_scalars || scalars.size() > scalar_params) {
    return make_error(ErrorCode::kInvalidArgument, "{} takes {} scalar(s), the op passes {}",
                      sig.schema,
                      required_scalars == scalar_params
                          ? fmt::format("{}", scalar_params)
                          : fmt::format("{} to {}", required_scalars, scalar_params),
                      scalars.size());
  }
  for (const auto& p : sig.params) {
    switch (p.role) {
      case Role::kTensor:
        args.emplace_back(input(next_input++));
        break;
      case Role::kTensorList: {
        c10::List<at::Tensor> all;
        for (std::size_t i = 0; i < inputs.size(); ++i) all.push_back(input(i));
        next_input = inputs.size();
        args.emplace_back(std::move(all));
        break;
      }
      case Role::kScalar: {
        // Out of scalars: this and what follows take their defaults (Python allows only defaulted
        // parameters after a defaulted one).
        if (next_scalar == scalars.size()) return args;
        const ir::ScalarIr& s = scalars[next_scalar++];
        const std::string_view t = p.type;
        if (t == "float" || t == "Optional[float]") {
          args.emplace_back(s.as_double());
        } else if (t == "int" || t == "Optional[int]") {
          args.emplace_back(s.as_int());
        } else if (t == "bool" || t == "Optional[bool]") {
          if (const bool* b = std::get_if<bool>(&s.value)) {
            args.emplace_back(*b);
          } else {
            args.emplace_back(s.as_double() != 0);
          }
        } else {  // number: keep the client's kind
          if (const double* d = std::get_if<double>(&s.value)) {
            args.emplace_back(*d);
          } else if (const bool* b = std::get_if<bool>(&s.value)) {
            args.emplace_back(*b);
          } else {
            args.emplace_back(s.as_int());
          }
        }
        break;
      }
    }
  }
  return args;
}

Status flatten(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) TB_TRY(flatten(e, out));
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) TB_TRY(flatten(e, out));
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "forward returned a {} where a tensor was expected", v.tagKind());
  }
  return ok();
}

Result<DeviceModule*> module_on(const LoadedModule& m, const at::Device& device) {
  const auto it = m.by_device.find(device.str());
  if (it == m.by_device.end()) {
    return make_error(ErrorCode::kNotFound, "module {} was not loaded on device {}", m.path,
                      device.str());
  }
  return it->second.get();
}

}  // namespace detail

namespace {

using detail::DeviceModule;
using detail::LoadedModule;

Result<std::vector<at::Tensor>> call_module(const LoadedModule& m, const CustomOpCall& call) {
  TB_TRY_ASSIGN(DeviceModule * device_module, detail::module_on(m, call.device));
  TB_TRY_ASSIGN(auto args, detail::forward_arguments(m.signature, call.inputs, call.op.scalars));
  DeviceModule& dm = *device_module;
  TB_TRY_ASSIGN(c10::IValue result, aten_guard(fmt::format("module {} raised", m.path), [&] {
                  c10::NoGradGuard no_grad;
                  std::unique_lock<std::mutex> lock(dm.mutex, std::defer_lock);
                  if (m.signature.mutates_state) lock.lock();
                  return dm.module.get_method("forward")(std::move(args));
                }));
  std::vector<at::Tensor> outputs;
  TB_TRY(detail::flatten(result, outputs));
  return outputs;
}

Result<torch::jit::Module> load_module(const std::string& path, const c10::Device& device) {
  // torch::jit::load's error for a missing file names an archive reader; say it plainly.
  if (!std::ifstream(path)) {
    return make_error(ErrorCode::kNotFound, "cannot open TorchScript module {}", path);
  }
  return aten_guard(ErrorCode::kInvalidArgument,
                    fmt::format("cannot load TorchScript module {}", path), [&] {
                      torch::jit::Module module = torch::jit::load(path, device);
                      module.eval();
                      return module;
                    });
}

}  // namespace

namespace {

// What one copy of the module holds in memory: its parameters and buffers, each storage once
// (tied weights share one).
std::uint64_t module_bytes(const torch::jit::Module& module) {
  std::set<const void*> seen;
  std::uint64_t bytes = 0;
  auto count = [&](const at::Tensor& t) {
    if (t.defined() && seen.insert(t.storage().data()).second) bytes += t.storage().nbytes();
  };
  for (const auto& t : module.parameters(/*recurse=*/true)) count(t);
  for (const auto& t : module.buffers(/*recurse=*/true)) count(t);
  return bytes;
}

}  // namespace

Result<TorchScriptOp> load_torchscript_op(const std::string& name, const std::string& path,
                                          const std::vector<std::string>& devices) {
  auto loaded = std::make_shared<LoadedModule>();
  loaded->name = name;
  loaded->path = path;
  std::uint64_t weight_bytes = 0;
  for (const auto& device_name : devices) {
    if (loaded->by_device.count(device_name)) continue;
    TB_TRY_ASSIGN(const at::Device device, parse_device(device_name));
    TB_TRY_ASSIGN(torch::jit::Module module, load_module(path, device));
    if (loaded->by_device.empty()) {
      auto sig = detail::signature_of(module);
      if (!sig) return with_context(sig.error(), fmt::format("module {}", path));
      loaded->signature = std::move(sig).value();
    }
    auto dm = std::make_shared<DeviceModule>();
    for (auto& [param_name, tensor] : detail::float_parameters(module)) {
      dm->parameter_index.emplace(tensor.unsafeGetTensorImpl(), dm->parameters.size());
      dm->parameters.push_back(std::move(tensor));
    }
    if (loaded->by_device.empty()) weight_bytes = module_bytes(module);
    dm->module = std::move(module);
    loaded->by_device.emplace(device_name, std::move(dm));
  }
  if (loaded->by_device.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "module {}: no device to load it on", path);
  }
  TorchScriptOp op;
  op.signature = loaded->signature;
  op.handler = [loaded](const CustomOpCall& call) { return call_module(*loaded, call); };
  op.training = detail::training_ops(loaded);
  op.weight_bytes = weight_bytes;
  return op;
}

Result<TorchScriptSignature> add_torchscript_op(CustomOpRegistry& registry, const std::string& spec,
                                                const std::vector<std::string>& devices) {
  TB_TRY_ASSIGN(const auto name_path, parse_model_spec(spec));
  TB_TRY_ASSIGN(auto op, load_torchscript_op(name_path.first, name_path.second, devices));
  register_model(registry, name_path.first, std::move(op.handler), std::move(op.training));
  return std::move(op.signature);
}

Result<TorchScriptSignature> describe_torchscript(const std::string& path) {
  TB_TRY_ASSIGN(torch::jit::Module module, load_module(path, c10::Device(c10::kCPU)));
  auto sig = detail::signature_of(module);
  if (!sig) return with_context(sig.error(), fmt::format("module {}", path));
  return sig;
}

}  // namespace tb::backend::libtorch
