#include "serve_models.hpp"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "torchbridge/libtorch/models.hpp"

namespace tb::cli {

void add_model_options(CLI::App& serve, ModelArgs& args) {
  serve.add_option("--model", args.models,
                   "NAME=PATH, repeatable: serve a TorchScript module (.pt) or an AOTInductor "
                   "package (.pt2, LibTorch 2.8+) as the custom op NAME");
  serve.add_option("--model-repository", args.repository,
                   "Serve the models of DIR/NAME/VERSION/model.{pt,pt2} as NAME (the newest "
                   "version) and NAME@VERSION (docs/models.md)");
  serve
      .add_option("--model-control", args.control,
                  "How the repository's models change while serving: none (as at start-up), "
                  "poll (rescan every --model-poll-ms), explicit (POST /v1/models/NAME/load, "
                  "/unload)")
      ->capture_default_str();
  serve.add_option("--model-poll-ms", args.poll_ms, "How often --model-control poll rescans")
      ->capture_default_str();
  serve.add_option("--admin-token-file", args.admin_token_file,
                   "File whose first line is the token of the admin routes (/v1/models); "
                   "without it they are off");
}

Result<std::string> read_token_file(const std::string& path, const char* option) {
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token) || token.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "{} {}: cannot read a token from it", option,
                      path);
  }
  return token;
}

Result<ServedModels> serve_models(const ModelArgs& args,
                                  backend::libtorch::CustomOpRegistry& registry,
                                  std::shared_ptr<backend::libtorch::CustomOpRegistry> shared,
                                  const std::vector<std::string>& device_names) {
  ServedModels out;
  std::vector<std::string> fixed;
  for (const auto& spec : args.models) {
    TB_TRY_ASSIGN(auto model, backend::libtorch::add_model_op(registry, spec, device_names));
    out.text += fmt::format("Custom op {}: {} ({})\n", model.name, model.schema, model.format);
    fixed.push_back(model.name);
  }
  if (!args.admin_token_file.empty()) {
    TB_TRY_ASSIGN(out.admin_token, read_token_file(args.admin_token_file, "--admin-token-file"));
  }
  if (args.repository.empty()) {
    if (args.control != "none" || out.admin_token) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--model-control and --admin-token-file act on a --model-repository");
    }
    return out;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(args.repository, ec)) {
    return make_error(ErrorCode::kNotFound, "--model-repository {}: not a folder", args.repository);
  }
  bridge::models::RepositoryOptions options;
  options.root = std::filesystem::canonical(args.repository, ec);
  TB_TRY_ASSIGN(options.control, bridge::models::parse_control(args.control));
  options.poll_interval = std::chrono::milliseconds(std::max<std::uint64_t>(args.poll_ms, 10));
  options.devices = device_names;
  options.reserved = fixed;
  if (options.control == bridge::models::Control::kExplicit && !out.admin_token) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--model-control explicit: the admin routes that load and unload need "
                      "--admin-token-file");
  }
  out.repository =
      std::make_shared<bridge::models::ModelRepository>(std::move(options), std::move(shared));
  return out;
}

}  // namespace tb::cli
