// One OS thread per session runs its tasks in arrival order (one session never blocks another;
// ATen's intra-op threads do the parallel work). Blocking tasks (a transfer's rendezvous, a
// download) block only this session. Answers go to the session's connection through a bounded
// queue: when the client does not read, the session's tasks wait, and what waits is counted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memory.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/ir/protocol.hpp"
#include "torchbridge/result.hpp"
#include "transport/out_frame.hpp"

namespace tb::bridge {

struct HostState;
class SessionConnection;
class TaskRunner;

// The answers of one session written or waiting to be written: shared by its worker (which waits
// for a place) and its connection (whose tickets give places back when written or dropped).
class AnswerQueue {
 public:
  explicit AnswerQueue(std::uint32_t capacity) : capacity_(std::max<std::uint32_t>(capacity, 1)) {}
  // Waits for a place; `too_many_bytes` is asked while others are queued (it may wait on them).
  // False when the queue closed (the session ends).
  template <class Pred>
  bool enter(Pred too_many_bytes) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock,
             [&] { return closed_ || queued_ == 0 || (queued_ < capacity_ && !too_many_bytes()); });
    if (closed_) return false;
    ++queued_;
    return true;
  }
  void leave() {
    {
      std::lock_guard lock(mutex_);
      --queued_;
    }
    cv_.notify_all();
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  std::uint32_t queued() const {
    std::lock_guard lock(mutex_);
    return queued_;
  }

 private:
  const std::uint32_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::uint32_t queued_ = 0;
  bool closed_ = false;
};

// One answer on its way to the socket: its bytes stay charged, and its place taken, until it is
// written or dropped.
struct Outgoing {
  struct Place {
    std::shared_ptr<AnswerQueue> queue;
    Place(std::shared_ptr<AnswerQueue> q) : queue(std::move(q)) {}
    Place(Place&& o) noexcept = default;
    Place& operator=(Place&& o) noexcept = default;
    ~Place() {
      if (queue) queue->leave();
    }
  };
  FramePtr frame;
  MemoryCharge charge;
  std::optional<Place> place;
};

class SessionWorker : public std::enable_shared_from_this<SessionWorker> {
 public:
  struct Identity {
    std::uint64_t session_id = 0;
    std::uint32_t device_index = 0;
    std::string transfer_scope;
    const ir::ProtocolProfile* profile = nullptr;  // the wire version it speaks (never null)
  };

  SessionWorker(HostState& host, Identity identity, std::weak_ptr<SessionConnection> connection);
  ~SessionWorker();

  // Starts the thread; an error (the system cannot make one now) leaves nothing running.
  Status start();
  // A decoded frame's tasks; `charge` pays for its bytes until its last task has run.
  void push(std::vector<ir::Task> tasks, MemoryCharge charge);
  // From the connection's strand, in place of push(): runs `tasks` on the calling thread when they
  // are one quick answer (a read of a small tensor, or a sync, on a CPU device) and the worker is
  // idle (nothing queued or running, no answer waiting, no op deferred); false, with `tasks`
  // untouched, otherwise. A read then costs no thread hand-off: on a small machine each wake-up of
  // the worker and then of the network thread took tens of microseconds of a round trip.
  bool try_run_inline(std::vector<ir::Task>& tasks);
  // No more tasks: run what is queued (or, when the host stops, drop it), free everything, exit.
  void close(bool drop_queued = false);

  const Identity& identity() const { return identity_; }
  std::uint64_t queued_bytes() const { return queued_bytes_.load(); }
  // Back-pressure, from the connection's strand after a push: true when the queued tasks are over
  // max_queued_bytes, and then the connection stops reading until the worker, drained to half,
  // calls its resume().
  bool pause_if_full();
  const std::shared_ptr<MemoryAccount>& memory() const { return memory_; }
  std::atomic<std::uint64_t> live_tensors{0}, live_bytes{0}, failed_ops{0};

 private:
  std::atomic<bool> paused_{false};
  struct Frame {
    std::size_t end;  // the task count at which this frame's last task has run
    std::uint64_t bytes;
    MemoryCharge charge;
  };

  void loop();
  void run_tasks();
  // The task loop, with the session's runner and executor alive (run_tasks frees what they held).
  void serve_tasks();
  std::optional<ir::Task> next_task();
  void run_one(TaskRunner& runner, ir::Task& task);
  // After each task, on whichever thread ran it: the stats the host reports, and resuming reads.
  void after_task(TaskRunner& runner);
  // Encodes and queues one answer, waiting for a place; the answer becomes an error when it
  // cannot be sent as it is (over the client's message limit, out of memory).
  void answer(TaskRunner& runner, ir::TaskResponse response);
  void finish();

  HostState& host_;
  const Identity identity_;
  std::weak_ptr<SessionConnection> connection_;
  std::shared_ptr<MemoryAccount> memory_;
  std::shared_ptr<AnswerQueue> answers_;
  const bool inline_device_;  // a CPU device: quick answers may run on the network thread
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<ir::Task> queue_;
  std::deque<Frame> frames_;
  std::size_t done_ = 0;
  std::atomic<std::uint64_t> queued_bytes_{0};
  bool closed_ = false;
  bool drop_ = false;
  // Under mutex_: the runner while the worker's loop runs (null before and after), and whether a
  // task is running (on the worker, or inline on the strand): one task at a time, in order.
  TaskRunner* runner_ = nullptr;
  bool busy_ = false;
};

}  // namespace tb::bridge
