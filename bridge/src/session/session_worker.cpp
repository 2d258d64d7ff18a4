#include "session/session_worker.hpp"

#include <system_error>
#include <thread>

#include <spdlog/spdlog.h>

#include "guard.hpp"
#include "host_state.hpp"
#include "session/task_runner.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "transport/ws_session.hpp"

namespace tb::bridge {

namespace {
// The same answer with its result replaced by `error` (an answer without an error channel, the
// DType usage set, goes out empty).
ir::TaskResponse as_error(ir::TaskResponse response, const ir::ExecutionError& error) {
  std::visit(
      [&](auto& c) {
        using C = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<C, ir::ReadTensorResponse> ||
                      std::is_same_v<C, ir::ReadTensorsResponse> ||
                      std::is_same_v<C, ir::SyncBackendResponse> ||
                      std::is_same_v<C, ir::ProfileStartResponse> ||
                      std::is_same_v<C, ir::ProfileEndResponse>) {
          c.result = error;
        } else if constexpr (std::is_same_v<C, ir::DTypeUsageResponse>) {
          c.usage = {};
        }
      },
      response.content);
  return response;
}

// The answer a task that expects one is owed when it could not run.
std::optional<ir::TaskResponse> owed_answer(const ir::Task& task) {
  return std::visit(
      [](const auto& t) -> std::optional<ir::TaskResponse> {
        using T = std::decay_t<decltype(t)>;
        if constexpr (std::is_same_v<T, ir::ReadTensorTask>) {
          return ir::TaskResponse{ir::ReadTensorResponse{}, t.request_id};
        } else if constexpr (std::is_same_v<T, ir::ReadTensorsTask>) {
          return ir::TaskResponse{ir::ReadTensorsResponse{}, t.request_id};
        } else if constexpr (std::is_same_v<T, ir::SyncBackendTask>) {
          return ir::TaskResponse{ir::SyncBackendResponse{}, t.request_id};
        } else if constexpr (std::is_same_v<T, ir::DTypeUsageTask>) {
          return ir::TaskResponse{ir::DTypeUsageResponse{}, t.request_id};
        } else if constexpr (std::is_same_v<T, ir::ProfileStartTask>) {
          return ir::TaskResponse{ir::ProfileStartResponse{}, t.request_id};
        } else if constexpr (std::is_same_v<T, ir::ProfileEndTask>) {
          return ir::TaskResponse{ir::ProfileEndResponse{}, t.request_id};
        } else {
          return std::nullopt;
        }
      },
      task);
}

}  // namespace

SessionWorker::SessionWorker(HostState& host, Identity identity,
                             std::weak_ptr<SessionConnection> connection)
    : host_(host),
      identity_(std::move(identity)),
      connection_(std::move(connection)),
      memory_(std::make_shared<MemoryAccount>(&host.memory)),
      answers_(std::make_shared<AnswerQueue>(host.options.limits.max_queued_answers)),
      inline_device_(host.local_device(identity_.device_index)->device_name().rfind("cpu", 0) ==
                     0) {}

SessionWorker::~SessionWorker() = default;

Status SessionWorker::start() {
  try {
    std::thread([self = shared_from_this()] { self->loop(); }).detach();
  } catch (const std::system_error& e) {
    return make_error(ErrorCode::kIo, "cannot start the session's thread: {}", e.what());
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kIo, "cannot start the session's thread: out of memory");
  }
  return ok();
}

void SessionWorker::push(std::vector<ir::Task> tasks, MemoryCharge charge) {
  {
    std::lock_guard lock(mutex_);
    for (auto& t : tasks) queue_.push_back(std::move(t));
    const std::uint64_t bytes = charge.bytes();
    queued_bytes_ += bytes;
    frames_.push_back(Frame{queue_.size() + done_, bytes, std::move(charge)});
  }
  cv_.notify_one();
}

void SessionWorker::close(bool drop_queued) {
  std::deque<ir::Task> dropped;
  std::deque<Frame> dropped_frames;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    if (drop_queued) {
      drop_ = true;
      dropped.swap(queue_);
      dropped_frames.swap(frames_);
      queued_bytes_ = 0;
    }
  }
  if (drop_queued) answers_->close();
  cv_.notify_one();
}

namespace {
// Tasks quick enough to answer on the network thread: at most this many bytes read.
constexpr std::uint64_t kInlineReadBytes = 64 * 1024;

bool quick_answer(const ir::Task& task) {
  if (std::holds_alternative<ir::SyncBackendTask>(task)) return true;
  const auto* read = std::get_if<ir::ReadTensorTask>(&task);
  if (read == nullptr) return false;
  const std::size_t element = read->tensor.dtype.element_size();  // 0: sub-byte quantized
  return element > 0 && ir::num_elements(read->tensor.shape.dims) * element <= kInlineReadBytes;
}
}  // namespace

bool SessionWorker::try_run_inline(std::vector<ir::Task>& tasks) {
  // CPU only: on an accelerator a read or a sync waits for the device's queued work.
  if (tasks.size() != 1 || !quick_answer(tasks.front()) || !inline_device_) return false;
  TaskRunner* runner = nullptr;
  {
    std::lock_guard lock(mutex_);
    // Deferred ops would run first, and a run of them is not a quick answer.
    if (busy_ || closed_ || runner_ == nullptr || !queue_.empty() || answers_->queued() != 0 ||
        runner_->executor().has_deferred())
      return false;
    busy_ = true;
    runner = runner_;
  }
  struct Release {
    SessionWorker* self;
    ~Release() {
      {
        std::lock_guard lock(self->mutex_);
        self->busy_ = false;
      }
      self->cv_.notify_one();
    }
  } release{this};
  host_.counters.add(Count::kTasksInline);
  run_one(*runner, tasks.front());
  after_task(*runner);
  return true;
}

std::optional<ir::Task> SessionWorker::next_task() {
  std::unique_lock lock(mutex_);
  // A task run inline finishes before the worker takes the next one or ends.
  cv_.wait(lock, [&] { return !busy_ && (closed_ || !queue_.empty()); });
  if (queue_.empty()) return std::nullopt;
  ir::Task task = std::move(queue_.front());
  queue_.pop_front();
  busy_ = true;
  ++done_;
  // A frame's bytes are given back once its last task starts (its tasks left the queue).
  while (!frames_.empty() && frames_.front().end <= done_) {
    queued_bytes_ -= frames_.front().bytes;
    frames_.pop_front();
  }
  return task;
}

void SessionWorker::loop() {
  guarded([&] { run_tasks(); },
          [&](const std::string& what) {
            // Last resort: this session ends, the host and its other sessions go on.
            host_.counters.add(Count::kSessionsFailed);
            spdlog::error("session {:016x}: {}; ending the session", identity_.session_id, what);
            if (auto c = connection_.lock()) c->end_with_error(what);
          });
  const std::uint64_t id = identity_.session_id;
  guarded([&] { finish(); },
          [&](const std::string& what) {
            spdlog::error("session {:016x}: while ending it: {}", id, what);
          });
  // Whatever finish() met, the worker leaves the registry (Host::stop waits for that). It may be
  // this worker's last reference: nothing of `this` is touched after it.
  auto& sessions = host_.sessions;
  guarded([&sessions, id] { sessions.remove_worker(id); }, [](const std::string&) {});
}

void SessionWorker::run_tasks() {
  serve_tasks();
  // The session's tensors are gone: the device's caching allocator gives what they used back to
  // the driver, for the other sessions and processes on that GPU (a no-op on the CPU).
  host_.local_device(identity_.device_index)->release_cached_memory();
}

void SessionWorker::serve_tasks() {
  auto services = host_.services(identity_.transfer_scope, identity_.device_index);
  services.held = memory_;
  services.protocol = identity_.profile->version;
  TaskRunner* self = nullptr;  // the runner answers through answer(), which asks it for memory
  TaskRunner runner(identity_.session_id, identity_.device_index,
                    host_.local_device(identity_.device_index)->new_executor(), std::move(services),
                    [this, &self](ir::TaskResponse r) { answer(*self, std::move(r)); });
  self = &runner;
  {
    std::lock_guard lock(mutex_);
    runner_ = &runner;
  }
  // Burn 0.23 names a collective's members by their sessions: in a federation, the other members
  // learn here where this one runs (from its worker: the store may be a network hop away).
  Federation* federation =
      identity_.profile->version >= 6 ? host_.options.federation.get() : nullptr;
  if (federation) federation->announce_session(identity_.session_id);
  // A guard ends the loop early: the runner must not be reachable once it is gone.
  struct Forget {
    SessionWorker* self;
    Federation* federation;
    ~Forget() {
      if (federation) federation->session_ended(self->identity_.session_id);
      std::lock_guard lock(self->mutex_);
      self->runner_ = nullptr;
    }
  } forget{this, federation};
  while (auto task = next_task()) {
    run_one(runner, *task);
    after_task(runner);
    std::lock_guard lock(mutex_);
    busy_ = false;
  }
  // The runner (and with it every tensor of the session) is destroyed here.
}

bool SessionWorker::pause_if_full() {
  if (queued_bytes_ <= host_.options.limits.max_queued_bytes) return false;
  paused_ = true;
  return true;
}

void SessionWorker::after_task(TaskRunner& runner) {
  const auto stats = runner.executor().stats();
  live_tensors = stats.live_tensors;
  live_bytes = stats.live_bytes;
  failed_ops = stats.failed_ops;
  if (paused_ && queued_bytes_ < host_.options.limits.max_queued_bytes / 2) {
    paused_ = false;
    if (auto c = connection_.lock()) c->resume();  // or at the connection's next tick
  }
}

void SessionWorker::run_one(TaskRunner& runner, ir::Task& task) {
  try {
    runner.run(task);
  } catch (const std::bad_alloc&) {
    // Out of memory in this task (ATen's own failures are errors already): the task fails, the
    // session goes on, and what the task owed is answered. Warm blocks kept for later messages
    // go first, so that what follows has the room.
    host_.message_blocks->trim();
    Error e = make_error(ErrorCode::kLimit, "{}: the host ran out of memory", ir::task_name(task));
    spdlog::warn("session {:016x}: {}", identity_.session_id, e.what());
    runner.executor().fail(e, {});
    if (auto owed = owed_answer(task)) {
      answer(runner, as_error(std::move(*owed),
                              ir::ExecutionError{ir::ExecutionErrorKind::Generic, e.what()}));
    }
  }
}

void SessionWorker::answer(TaskRunner& runner, ir::TaskResponse response) {
  const auto& limits = host_.options.limits;
  const auto error_of = [](std::string text) {
    return ir::ExecutionError{ir::ExecutionErrorKind::Generic, std::move(text)};
  };
  FramePtr frame;
  try {
    frame = OutFrame::encode(response);
  } catch (const std::bad_alloc&) {
    host_.message_blocks->trim();
    frame = nullptr;
  }
  if (!frame) {
    // The error answer is small; if even that cannot be allocated, the guard ends the session.
    frame = OutFrame::encode(
        as_error(std::move(response),
                 error_of(fmt::format("{}: the host ran out of memory encoding the answer",
                                      ir::response_name(response.content)))));
  } else if (frame->size > limits.max_message_bytes) {
    // Burn's client drops the whole connection on a message over its limit (1 GiB at 0.22.1).
    frame = OutFrame::encode(as_error(
        std::move(response),
        error_of(fmt::format("{}: the answer would be a {}-byte message, over the {}-byte message "
                             "limit (Burn's client and --max-message-bytes)",
                             ir::response_name(response.content), frame->size,
                             limits.max_message_bytes))));
  }
  auto connection = connection_.lock();
  if (!connection) return;
  // Back-pressure: wait while the queue is full, or while queued answers would take the session
  // over its memory limit (the first answer always goes, or a large tensor could never be read).
  if (!answers_->enter([&] { return runner.over_memory_limit(frame->size).has_value(); })) return;
  Outgoing out;
  out.place.emplace(answers_);
  out.charge = MemoryCharge(memory_, frame->size);
  out.frame = std::move(frame);
  if (!connection->send(std::move(out))) {
    // Lost for want of memory: the client would wait for it for ever, so the session ends (the
    // connection closes at its next tick if this cannot reach it either).
    spdlog::error(
        "session {:016x}: an answer could not be queued: out of memory; ending the session",
        identity_.session_id);
    host_.counters.add(Count::kSessionsFailed);
    connection->end_with_error("an answer was lost: the host ran out of memory");
    close(/*drop_queued=*/true);
  }
}

void SessionWorker::finish() {
  answers_->close();
  live_tensors = 0;
  live_bytes = 0;
  spdlog::info("session {:016x} closed; its tensors are freed", identity_.session_id);
  if (auto c = connection_.lock()) c->worker_done();
}

}  // namespace tb::bridge
