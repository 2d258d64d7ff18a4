// The sessions of a host: who is connected on which session id, and whose worker still runs. The
// only way in is this API (a connection's handshake admits itself, a worker leaves when done).
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "torchbridge/ir/profile.hpp"

namespace tb::bridge {

class SessionConnection;
class SessionWorker;

class SessionRegistry {
 public:
  enum class Admission { kAdmitted, kStopping, kFull, kIdInUse };
  struct Totals {
    std::uint64_t sessions = 0, live_tensors = 0, live_bytes = 0, failed_ops = 0;
    // Sessions by the wire version they speak, one count per row of ir::kProfiles.
    std::array<std::uint64_t, ir::kProfiles.size()> by_profile{};
  };

  // Registers a session's connection and worker under `id`, unless the host stops, `max`
  // sessions are open or the id is bound to another connection.
  Admission admit(std::uint64_t id, const std::shared_ptr<SessionConnection>& connection,
                  const std::shared_ptr<SessionWorker>& worker, std::uint32_t max);
  // The connection went (its worker may still finish what is queued).
  void remove_connection(std::uint64_t id, const SessionConnection* connection);
  // The session's worker finished and freed everything.
  void remove_worker(std::uint64_t id);
  // A session admitted whose worker could not start.
  void withdraw(std::uint64_t id);

  std::size_t open() const;
  // Whether session `id` has its connection.
  bool is_open(std::uint64_t id) const;
  Totals totals() const;
  // The host stops: no more admissions; every socket is closed (waiting up to a few seconds for
  // it), every worker told to drop its queue, and this returns once every worker has finished.
  void stop_all();

 private:
  mutable std::mutex mutex_;
  std::condition_variable workers_done_;
  bool stopping_ = false;
  std::unordered_map<std::uint64_t, std::weak_ptr<SessionConnection>> connections_;
  std::unordered_map<std::uint64_t, std::shared_ptr<SessionWorker>> workers_;
};

}  // namespace tb::bridge
