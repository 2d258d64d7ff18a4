#include "replay_command.hpp"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "torchbridge/bridge/replay.hpp"
#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/libtorch/threads.hpp"

namespace tb::cli {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void report(const std::string& path, const std::vector<bridge::ReplayRun>& runs) {
  std::vector<double> cpu, wall;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    fmt::print("{} rep {}: cpu {:.2f} ms, wall {:.2f} ms\n", path, i + 1, r.cpu_ms, r.wall_ms);
    cpu.push_back(r.cpu_ms);
    wall.push_back(r.wall_ms);
  }
  const auto& last = runs.back();
  fmt::print(
      "{}: protocol {}, {} frames, {} tasks, {} ops ({} failed), {} answers ({} errors); median "
      "cpu {:.2f} ms (min {:.2f}, max {:.2f}), wall {:.2f} ms\n",
      path, last.protocol, last.frames, last.tasks, last.ops, last.failed_ops, last.answers,
      last.error_answers, median(cpu), *std::min_element(cpu.begin(), cpu.end()),
      *std::max_element(cpu.begin(), cpu.end()), median(wall));
}

}  // namespace

CLI::App* add_replay_command(CLI::App& app, ReplayArgs& args) {
  auto* cmd = app.add_subcommand(
      "replay", "Replay sessions captured with TB_CAPTURE_DIR in this process, and time them");
  cmd->add_option("captures", args.captures, "Capture files (session-*.tbcap)")->required();
  cmd->add_option("--device", args.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--reps", args.reps, "Replays of each capture, each a fresh session")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--threads", args.threads, "ATen intra-op threads (0: as `serve` chooses)")
      ->check(CLI::NonNegativeNumber);
  return cmd;
}

int replay(const ReplayArgs& args, char** argv) {
  // The same runtime environment and threads as `serve`, so that the figures are the host's.
  if (const auto failed = backend::libtorch::restart_with_runtime_env(argv, args.threads)) {
    std::cerr << *failed << "\n";
  }
  const auto threads = backend::libtorch::apply_thread_policy(args.threads);
  auto device = backend::libtorch::make_backend({args.device, nullptr});
  if (!device) {
    std::cerr << device.error().what() << "\n";
    return 2;
  }
  std::shared_ptr<backend::Backend> shared = std::move(device).value();
  fmt::print("replaying on {} ({})\n", shared->device_name(), backend::libtorch::describe(threads));
  int rc = 0;
  for (const auto& path : args.captures) {
    auto runs = bridge::replay_capture(path, shared, bridge::HostOptions{}, args.reps);
    if (!runs) {
      std::cerr << path << ": " << runs.error().what() << "\n";
      rc = 1;
      continue;
    }
    report(path, runs.value());
  }
  return rc;
}

}  // namespace tb::cli
