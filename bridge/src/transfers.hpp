// Tensor transfers between sessions of this host (same-host) and between hosts (`/data`).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "torchbridge/backend/backend.hpp"
#include "torchbridge/ir/protocol.hpp"

namespace tb::bridge {

using TransferResult = Result<std::shared_ptr<const backend::Transferable>>;

// The rendezvous of ExposeTensorLocal (source session) and RegisterTensorLocal (target session).
// A failed expose is delivered too, so the target reports the cause instead of timing out.
class LocalTransfers {
 public:
  void expose(ir::LocalTransferId id, std::uint64_t source_session, TransferResult tensor);
  // Waits up to `timeout` for `id` to be exposed, then removes and returns it.
  TransferResult take(ir::LocalTransferId id, std::chrono::milliseconds timeout);
  // Drops what `session` exposed and nobody took (its teardown).
  void purge_session(std::uint64_t session);
  // The host is stopping: every take() waiting now or later returns an error at once.
  void shutdown();
  std::size_t pending() const;

 private:
  struct Entry {
    std::uint64_t session;
    TransferResult tensor;
  };
  mutable std::mutex mutex_;
  std::condition_variable exposed_;
  std::unordered_map<ir::LocalTransferId, Entry> entries_;
  bool stopping_ = false;
};

// The `/data` side of host-to-host transfers: tensors exposed by ExposeTensorRemote, keyed by the
// first 8 bytes of the capability (little-endian), each downloadable `count` times.
class DataStore {
 public:
  // The encoded `{"Tensor": TensorData}` message to serve, or why there is none.
  using Payload = Result<std::shared_ptr<const std::vector<std::uint8_t>>>;
  using Callback = std::function<void(Payload)>;

  static std::uint64_t key_of(const ir::TransferCapability& capability);

  void expose(std::uint64_t key, Payload payload, std::uint32_t count);
  // Calls `done` (on an arbitrary thread) once `key` is exposed, consuming one download; returns
  // a ticket for cancel().
  std::uint64_t when_exposed(std::uint64_t key, Callback done);
  // Fails a waiting request (its timeout) if it is still waiting.
  void cancel(std::uint64_t ticket, const Error& why);
  // Forgets every waiting request without calling it (the host stopped: the connections their
  // callbacks hold must go before the io_context they belong to).
  void drop_waiters();
  std::size_t exposed() const;

 private:
  struct Exposed {
    Payload payload;
    std::uint32_t remaining;
  };
  struct Waiter {
    std::uint64_t key;
    Callback done;
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, Exposed> exposed_;
  std::map<std::uint64_t, Waiter> waiters_;  // by ticket, oldest first
  std::uint64_t next_ticket_ = 1;
};

// Downloads one tensor from another host's `/data` route (the RegisterTensorRemote side). Gives
// up early, with an error, once `cancel` (if any) becomes true.
Result<ir::TensorData> download_tensor(const ir::Address& peer, std::uint64_t key,
                                       std::chrono::milliseconds timeout,
                                       std::uint64_t max_message_bytes,
                                       const std::atomic<bool>* cancel = nullptr);

}  // namespace tb::bridge
