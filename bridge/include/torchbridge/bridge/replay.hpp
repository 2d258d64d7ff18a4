// A captured session (TB_CAPTURE_DIR, transport/frame_capture.hpp) replayed in this process:
// every frame decoded and every task run as the host's session would, on one device, with no
// client and no network. `torchbridge replay` times it; perf and callgrind profile it. What it
// measures is the host's own CPU per program, free of the client that shares the machine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "torchbridge/backend/backend.hpp"
#include "torchbridge/bridge/host.hpp"
#include "torchbridge/result.hpp"

namespace tb::bridge {

struct ReplayRun {
  double cpu_ms = 0;   // this thread's CPU time: decoding, running, encoding the answers
  double wall_ms = 0;  // ATen's own threads included
  std::uint64_t frames = 0;
  std::uint64_t tasks = 0;
  std::uint64_t answers = 0;
  std::uint64_t error_answers = 0;  // answers that carry an error (a read of a failed tensor)
  std::uint64_t ops = 0;
  std::uint64_t failed_ops = 0;
  std::uint16_t protocol = 0;
};

// Replays the capture at `path` `reps` times, each in a fresh session on `device` under
// `options`' limits. A frame the host would have refused is an error naming it.
Result<std::vector<ReplayRun>> replay_capture(const std::string& path,
                                              std::shared_ptr<backend::Backend> device,
                                              const HostOptions& options, int reps);

}  // namespace tb::bridge
