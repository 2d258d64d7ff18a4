// Hosted models by format: the one place that tells a TorchScript module from an AOTInductor
// package.
#include "torchbridge/libtorch/models.hpp"

#include <fmt/format.h>

#include "torchbridge/libtorch/aoti.hpp"
#include "torchbridge/libtorch/torchscript.hpp"

namespace tb::backend::libtorch {

Result<std::pair<std::string, std::string>> parse_model_spec(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--model {}: expected NAME=PATH (NAME is the custom op id clients use; PATH "
                      "a TorchScript module, or an AOTInductor package ending in .pt2)",
                      spec);
  }
  return std::make_pair(spec.substr(0, eq), spec.substr(eq + 1));
}

void register_model(CustomOpRegistry& registry, const std::string& name, CustomOpHandler forward,
                    std::vector<std::pair<std::string, CustomOpHandler>> training) {
  registry.add(name, std::move(forward));
  for (auto& [id, handler] : training) registry.add(id, std::move(handler));
}

Result<LoadedModel> load_model(const std::string& name, const std::string& path,
                               const std::vector<std::string>& devices) {
  if (is_aoti_package(path)) {
    TB_TRY_ASSIGN(auto op, load_aoti_op(name, path, devices));
    return LoadedModel{ModelSummary{name, "AOTInductor", op.signature.schema},
                       std::move(op.handler), std::move(op.training), op.weight_bytes};
  }
  TB_TRY_ASSIGN(auto op, load_torchscript_op(name, path, devices));
  return LoadedModel{ModelSummary{name, "TorchScript", op.signature.schema}, std::move(op.handler),
                     std::move(op.training), op.weight_bytes};
}

Result<ModelSummary> add_model_op(CustomOpRegistry& registry, const std::string& spec,
                                  const std::vector<std::string>& devices) {
  TB_TRY_ASSIGN(const auto name_path, parse_model_spec(spec));
  TB_TRY_ASSIGN(auto model, load_model(name_path.first, name_path.second, devices));
  register_model(registry, name_path.first, std::move(model.forward), std::move(model.training));
  return std::move(model.summary);
}

Result<std::string> describe_model(const std::string& path) {
  if (is_aoti_package(path)) {
    TB_TRY_ASSIGN(auto sig, describe_aoti(path));
    return sig.describe();
  }
  TB_TRY_ASSIGN(auto sig, describe_torchscript(path));
  return sig.describe();
}

}  // namespace tb::backend::libtorch
