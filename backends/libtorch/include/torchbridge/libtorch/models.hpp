// Hosted models, whatever their format: the CLI's `serve --model NAME=PATH` and
// `torchbridge models PATH`. A path ending in .pt2 is an AOTInductor package (aoti.hpp); any
// other is a TorchScript module (torchscript.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/result.hpp"

namespace tb::backend::libtorch {

struct ModelSummary {
  std::string name;    // the custom op id
  std::string format;  // "TorchScript" or "AOTInductor"
  std::string schema;  // one line: "forward(Tensor x) -> Tensor"
};

// A model loaded on its devices, not yet served: what a registry (or a repository) adds.
struct LoadedModel {
  ModelSummary summary;
  CustomOpHandler forward;  // served as NAME
  // The training contract's ops by full id (NAME::parameters, ...).
  std::vector<std::pair<std::string, CustomOpHandler>> training;
  // Bytes of weights one device's copy holds (every device holds one).
  std::uint64_t weight_bytes = 0;
};

// The model at `path` (by its extension, .pt2 or TorchScript), under the op id `name`, loaded on
// every device in `devices` and checked for each (signature, device, CPU instructions).
Result<LoadedModel> load_model(const std::string& name, const std::string& path,
                               const std::vector<std::string>& devices);

// `NAME=PATH` as (NAME, PATH), or an error saying what --model expects.
Result<std::pair<std::string, std::string>> parse_model_spec(const std::string& spec);

// Adds a loaded model's forward under `name` and each of its training-contract ids.
void register_model(CustomOpRegistry& registry, const std::string& name, CustomOpHandler forward,
                    std::vector<std::pair<std::string, CustomOpHandler>> training);

// `NAME=PATH` loaded on every device in `devices` and added to `registry` under NAME (and the
// training contract's NAME::... ids).
Result<ModelSummary> add_model_op(CustomOpRegistry& registry, const std::string& spec,
                                  const std::vector<std::string>& devices);

// What a client must declare to call the model at `path` (several lines).
Result<std::string> describe_model(const std::string& path);

}  // namespace tb::backend::libtorch
