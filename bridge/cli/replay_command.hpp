// `torchbridge replay`: a session captured by a host run with TB_CAPTURE_DIR, replayed in this
// process and timed (torchbridge/bridge/replay.hpp). The host's CPU per program without the
// client beside it: for A/B comparisons, perf and callgrind (docs/benchmarks.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tb::cli {

struct ReplayArgs {
  std::vector<std::string> captures;
  std::string device = "cpu";
  int reps = 5;
  int threads = 0;
};

CLI::App* add_replay_command(CLI::App& app, ReplayArgs& args);

// Exit codes: 0 replayed, 1 a capture could not be read or replayed, 2 a bad option.
int replay(const ReplayArgs& args, char** argv);

}  // namespace tb::cli
