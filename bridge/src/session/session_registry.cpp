#include "session/session_registry.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "session/session_worker.hpp"
#include "transport/ws_session.hpp"

namespace tb::bridge {

SessionRegistry::Admission SessionRegistry::admit(
    std::uint64_t id, const std::shared_ptr<SessionConnection>& connection,
    const std::shared_ptr<SessionWorker>& worker, std::uint32_t max) {
  std::lock_guard lock(mutex_);
  if (stopping_) return Admission::kStopping;
  if (connections_.size() >= max) return Admission::kFull;
  if (connections_.count(id) || workers_.count(id)) return Admission::kIdInUse;
  connections_.emplace(id, connection);
  workers_.emplace(id, worker);
  return Admission::kAdmitted;
}

void SessionRegistry::remove_connection(std::uint64_t id, const SessionConnection* connection) {
  std::lock_guard lock(mutex_);
  const auto it = connections_.find(id);
  if (it != connections_.end() && it->second.lock().get() == connection) connections_.erase(it);
}

void SessionRegistry::remove_worker(std::uint64_t id) {
  std::shared_ptr<SessionWorker> last;  // may be the worker's last reference: freed unlocked
  {
    std::lock_guard lock(mutex_);
    const auto it = workers_.find(id);
    if (it != workers_.end()) {
      last = std::move(it->second);
      workers_.erase(it);
    }
  }
  workers_done_.notify_all();
}

void SessionRegistry::withdraw(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  connections_.erase(id);
  workers_.erase(id);
}

bool SessionRegistry::is_open(std::uint64_t id) const {
  std::lock_guard lock(mutex_);
  return connections_.count(id) != 0;
}

std::size_t SessionRegistry::open() const {
  std::lock_guard lock(mutex_);
  return workers_.size();
}

SessionRegistry::Totals SessionRegistry::totals() const {
  std::lock_guard lock(mutex_);
  Totals t;
  t.sessions = workers_.size();
  for (const auto& [id, w] : workers_) {
    t.live_tensors += w->live_tensors;
    t.live_bytes += w->live_bytes;
    t.failed_ops += w->failed_ops;
    ++t.by_profile[static_cast<std::size_t>(w->identity().profile - ir::kProfiles.data())];
  }
  return t;
}

void SessionRegistry::stop_all() {
  struct Countdown {
    std::mutex mutex;
    std::condition_variable cv;
    int left = 0;
  };
  auto closing = std::make_shared<Countdown>();
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    for (auto& [id, weak] : connections_) {
      if (auto c = weak.lock()) {
        {
          std::lock_guard count(closing->mutex);
          ++closing->left;
        }
        c->shutdown([closing] {
          std::lock_guard count(closing->mutex);
          if (--closing->left == 0) closing->cv.notify_all();
        });
      }
    }
    for (auto& [id, worker] : workers_) worker->close(/*drop_queued=*/true);
    // Workers reference the host: it cannot go away while one runs (an op in progress is not
    // interruptible, so this waits for it).
    while (
        !workers_done_.wait_for(lock, std::chrono::seconds(10), [&] { return workers_.empty(); })) {
      spdlog::warn("stopping: waiting for {} session(s) to finish their current op",
                   workers_.size());
    }
  }
  // The sockets must be closed before the io_context stops, or a client would wait on a
  // connection nobody serves any more.
  std::unique_lock lock(closing->mutex);
  closing->cv.wait_for(lock, std::chrono::seconds(5), [&] { return closing->left == 0; });
}

}  // namespace tb::bridge
