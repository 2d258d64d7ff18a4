// torchbridge: the command-line program. `serve` hosts Burn remote sessions on LibTorch.
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ops_listing.hpp"
#include "replay_command.hpp"
#include "serve_command.hpp"
#include "torchbridge/bridge/host_malloc.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/libtorch/models.hpp"
#include "torchbridge/version.hpp"

namespace {

// `torchbridge models PATH...`: what a client must declare to call each model.
int describe_models(const std::vector<std::string>& paths) {
  int rc = 0;
  for (const auto& path : paths) {
    auto text = tb::backend::libtorch::describe_model(path);
    if (!text) {
      std::cerr << text.error().what() << "\n";
      rc = 1;
      continue;
    }
    std::cout << path << "\n" << text.value();
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{fmt::format("torchbridge {}: a LibTorch host for Burn's remote sessions ({})",
                           tb::kVersion, tb::ir::describe_served())};
  // Every wire version served, one per Burn release: a session speaks the one its Init names.
  app.set_version_flag(
      "--version",
      fmt::format("torchbridge {} ({}; {}; malloc {})", tb::kVersion, tb::ir::describe_served(),
                  tb::backend::libtorch::describe_libtorch(), tb::bridge::malloc_name()));
  app.require_subcommand(1);

  tb::cli::ServeArgs s;
  auto* serve_cmd = tb::cli::add_serve_command(app, s);

  std::vector<std::string> model_paths;
  auto* models_cmd = app.add_subcommand(
      "models", "Print models' forward signatures and what a custom op must declare");
  models_cmd
      ->add_option("paths", model_paths, "TorchScript modules (.pt), AOTInductor packages (.pt2)")
      ->required();

  bool json = false;
  bool markdown = false;
  std::uint16_t protocol = 0;
  auto* ops_cmd =
      app.add_subcommand("ops", "List every Burn IR operation and whether it is lowered");
  auto* json_flag = ops_cmd->add_flag("--json", json, "Print a JSON array");
  ops_cmd->add_flag("--markdown", markdown, "Print docs/op-coverage.md")->excludes(json_flag);
  ops_cmd->add_option("--protocol", protocol,
                      "Only the leaves of this wire version (" + tb::ir::describe_served() + ")");

  tb::cli::ReplayArgs replay_args;
  auto* replay_cmd = tb::cli::add_replay_command(app, replay_args);

  CLI11_PARSE(app, argc, argv);
  if (*serve_cmd) return tb::cli::serve(std::move(s), argv);
  if (*replay_cmd) return tb::cli::replay(replay_args, argv);
  if (*ops_cmd) {
    return tb::cli::list_ops(json       ? tb::cli::OpsFormat::kJson
                             : markdown ? tb::cli::OpsFormat::kMarkdown
                                        : tb::cli::OpsFormat::kText,
                             protocol);
  }
  if (*models_cmd) return describe_models(model_paths);
  return 0;
}
