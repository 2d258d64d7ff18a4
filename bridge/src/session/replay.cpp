#include "torchbridge/bridge/replay.hpp"

#include <chrono>
#include <ctime>

#include "host_state.hpp"
#include "session/task_runner.hpp"
#include "transport/frame_capture.hpp"
#include "transport/out_frame.hpp"
#include "transport/session_frame.hpp"

namespace tb::bridge {

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

bool is_error(const ir::TaskResponse& r) {
  return std::visit(
      [](const auto& content) {
        if constexpr (requires { content.result; }) {
          return std::holds_alternative<ir::ExecutionError>(content.result);
        } else {
          return false;
        }
      },
      r.content);
}

// One session: what SessionWorker::serve_tasks does with a runner, on this thread. Never inlined:
// profilers name it to leave the capture's reading out (callgrind's --toggle-collect with its full
// signature, docs/benchmarks.md; a pattern ending in * would also match its lambda and toggle
// collection off inside it).
[[gnu::noinline]] Result<ReplayRun> replay_once(const CapturedSession& capture, HostState& host,
                                                std::uint64_t session_id) {
  const ir::ProtocolProfile* profile = ir::find_profile(capture.protocol);
  if (profile == nullptr) {
    return make_error(ErrorCode::kUnsupported, "the capture's protocol {} is not served",
                      capture.protocol);
  }
  ReplayRun run;
  run.protocol = capture.protocol;
  auto services = host.services("replay", 0);
  services.protocol = profile->version;
  TaskRunner runner(session_id, 0, host.devices[0]->new_executor(), std::move(services),
                    [&run](ir::TaskResponse r) {
                      ++run.answers;
                      if (is_error(r)) ++run.error_answers;
                      // Answers are encoded as the host's worker does; only their sending is left.
                      (void)OutFrame::encode(r);
                    });
  const double cpu0 = thread_cpu_ms();
  const auto wall0 = std::chrono::steady_clock::now();
  for (const auto& frame : capture.frames) {
    auto content = read_session_frame(frame, FrameSession{profile, session_id, "replay"});
    if (auto* rejected = std::get_if<FrameRejected>(&content)) {
      return make_error(ErrorCode::kDecode, "frame {} would be refused: {}", run.frames,
                        rejected->log);
    }
    auto& tasks = std::get<FrameTasks>(content).tasks;
    for (auto& task : tasks) {
      runner.run(task);
      (void)runner.executor().stats();  // as the worker's after_task
    }
    run.tasks += tasks.size();
    ++run.frames;
  }
  run.cpu_ms = thread_cpu_ms() - cpu0;
  run.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count();
  const auto stats = runner.executor().stats();
  run.ops = stats.ops;
  run.failed_ops = stats.failed_ops;
  return run;
}

}  // namespace

Result<std::vector<ReplayRun>> replay_capture(const std::string& path,
                                              std::shared_ptr<backend::Backend> device,
                                              const HostOptions& options, int reps) {
  TB_TRY_ASSIGN(auto capture, read_capture(path));
  HostState host(options, {std::move(device)});
  std::vector<ReplayRun> runs;
  for (int r = 0; r < reps; ++r) {
    TB_TRY_ASSIGN(auto run, replay_once(capture, host, static_cast<std::uint64_t>(r) + 1));
    runs.push_back(run);
  }
  return runs;
}

}  // namespace tb::bridge
