// What `serve` hosts besides Burn's ops: models fixed at start-up (--model NAME=PATH) and a model
// repository that changes while the host runs (--model-repository, docs/models.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model_repository.hpp"
#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/result.hpp"

namespace tb::cli {

struct ModelArgs {
  std::vector<std::string> models;  // NAME=PATH (.pt or .pt2)
  std::string repository;
  std::string control = "none";
  std::uint64_t poll_ms = 5000;
  std::string admin_token_file;
};

void add_model_options(CLI::App& serve, ModelArgs& args);

// A file's first line, for the tokens (--auth-token-file, --admin-token-file).
Result<std::string> read_token_file(const std::string& path, const char* option);

struct ServedModels {
  std::string text;  // "Custom op NAME: schema (format)" per --model, for the start-up text
  std::shared_ptr<bridge::models::ModelRepository> repository;  // none without one
  std::optional<std::string> admin_token;
};

// Loads every --model into `registry` and makes the repository (loaded by load_all, once the host
// that counts its memory exists). Errors are start-up errors.
Result<ServedModels> serve_models(const ModelArgs& args,
                                  backend::libtorch::CustomOpRegistry& registry,
                                  std::shared_ptr<backend::libtorch::CustomOpRegistry> shared,
                                  const std::vector<std::string>& device_names);

}  // namespace tb::cli
