// What torchscript.cpp (forward) and torchscript_training.cpp (the training contract) share: a
// module loaded once per device, and how a custom op's tensors and scalars become forward's
// arguments.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/script.h>

#include "torchbridge/libtorch/torchscript.hpp"

namespace tb::backend::libtorch::detail {

// One loaded copy of a module, on one device.
struct DeviceModule {
  torch::jit::Module module;
  std::mutex mutex;  // taken only when forward assigns module attributes
  // The float parameters in contract order (parameter_slots) and where each tensor sits in it:
  // functional calls swap exactly these for the client's tensors.
  std::vector<at::Tensor> parameters;
  std::unordered_map<const c10::TensorImpl*, std::size_t> parameter_index;
};

struct LoadedModule {
  std::string name;
  std::string path;
  TorchScriptSignature signature;
  std::map<std::string, std::shared_ptr<DeviceModule>> by_device;
};

// The copy on `device`, or an error naming the module.
Result<DeviceModule*> module_on(const LoadedModule& m, const at::Device& device);

// `inputs` and `scalars` as forward's arguments after self (tensors copied first when forward
// writes to its inputs).
Result<std::vector<c10::IValue>> forward_arguments(const TorchScriptSignature& sig,
                                                   const std::vector<at::Tensor>& inputs,
                                                   const std::vector<ir::ScalarIr>& scalars);

// forward's result as the op's outputs: a tensor, or the tensors of a (nested) tuple or list.
Status flatten(const c10::IValue& v, std::vector<at::Tensor>& out);

// The module's float parameters, named as in PyTorch's state dict ("fc1.weight"), each once:
// depth first over the module's slots, in slot order.
std::vector<std::pair<std::string, at::Tensor>> float_parameters(const torch::jit::Module& module);

// The training contract's ops for a loaded module, by full id (NAME::parameters, ...).
std::vector<std::pair<std::string, CustomOpHandler>> training_ops(
    const std::shared_ptr<const LoadedModule>& module);

}  // namespace tb::backend::libtorch::detail
