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
#include <string>
#include <unordered_map>
#include <vector>

#include "memory.hpp"
#include "torchbridge/backend/backend.hpp"
#include "torchbridge/ir/protocol.hpp"
#include "transport/out_frame.hpp"

namespace tb::bridge {

using TransferResult = Result<std::shared_ptr<const backend::Transferable>>;

// The rendezvous of ExposeTensorLocal (source session) and RegisterTensorLocal (target session).
// A failed expose is delivered too, so the target reports the cause instead of timing out.
//
// Burn's clients number transfers from 0, so ids are guessable: a transfer is visible only inside
// its scope (the peer's address and the credential it presented, docs/reliability.md), and an id
// exposed twice in one scope is an error for the second exposer, never a replacement.
class LocalTransfers {
 public:
  // False (nothing stored) when `id` is already exposed in `scope`.
  bool expose(const std::string& scope, ir::LocalTransferId id, std::uint64_t source_session,
              TransferResult tensor);
  // Waits up to `timeout` for `id` to be exposed in `scope`, then removes and returns it.
  TransferResult take(const std::string& scope, ir::LocalTransferId id,
                      std::chrono::milliseconds timeout);
  // Drops what `session` exposed and nobody took (its teardown).
  void purge_session(std::uint64_t session);
  // The host is stopping: every take() waiting now or later returns an error at once.
  void shutdown();

 private:
  struct Entry {
    std::uint64_t session;
    TransferResult tensor;
  };
  using Key = std::pair<std::string, ir::LocalTransferId>;
  std::mutex mutex_;
  std::condition_variable exposed_;
  std::map<Key, Entry> entries_;
  bool stopping_ = false;
};

// The `/data` side of host-to-host transfers: tensors exposed by ExposeTensorRemote, keyed by the
// first 8 bytes of the capability (little-endian), each downloadable `count` times. An exposure
// is charged to its session, expires after the transfer timeout and goes with its session.
class DataStore {
 public:
  // The encoded `{"Tensor": TensorData}` message to serve, or why there is none.
  using Payload = Result<FramePtr>;
  using Callback = std::function<void(Payload)>;

  static std::uint64_t key_of(const ir::TransferCapability& capability);

  // False (nothing stored) when `key` is already exposed. A `members_only` exposure (a same-host
  // transfer between federation members) is served to members' downloads alone.
  bool expose(std::uint64_t key, std::uint64_t session, Payload payload, std::uint32_t count,
              MemoryCharge charge, std::chrono::steady_clock::time_point expires,
              bool members_only = false);
  // Calls `done` (on an arbitrary thread) once `key` is exposed, consuming one download; returns
  // a ticket for cancel(). A download by a non-`member` of a members-only exposure gets an error
  // at once and consumes nothing (issue 39, finding 3: a stranger's download had taken a
  // client's tensor, and the client's own transfer then failed).
  std::uint64_t when_exposed(std::uint64_t key, bool member, Callback done);
  // Fails a waiting request (its timeout, its client gone) if it is still waiting.
  void cancel(std::uint64_t ticket, const Error& why);
  // Drops what `session` exposed (its teardown).
  void purge_session(std::uint64_t session);
  // Drops exposures past their expiry; returns how many.
  std::size_t expire(std::chrono::steady_clock::time_point now);
  // Forgets every waiting request without calling it (the host stopped: the connections their
  // callbacks hold must go before the io_context they belong to).
  void drop_waiters();

 private:
  struct Exposed {
    std::uint64_t session;
    Payload payload;
    std::uint32_t remaining;
    MemoryCharge charge;
    std::chrono::steady_clock::time_point expires;
    bool members_only = false;
  };
  struct Waiter {
    std::uint64_t key;
    bool member;
    Callback done;
  };
  static Payload not_a_member(std::uint64_t key);
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, Exposed> exposed_;
  std::map<std::uint64_t, Waiter> waiters_;  // by ticket, oldest first
  std::uint64_t next_ticket_ = 1;
};

// How a session fetches a tensor another host exposed (RegisterTensorRemote): the task runner sees
// only this, and the `/data` client behind it lives with the `/data` service.
class Downloader {
 public:
  virtual ~Downloader() = default;
  virtual Result<ir::TensorData> download(const ir::Address& peer, std::uint64_t key) = 0;
  // From another member of this host's federation, proving membership with the host's token
  // (members-only exposures, DataStore::expose). Never used for a peer a client named: the token
  // goes to members alone.
  virtual Result<ir::TensorData> download_from_member(const ir::Address& peer, std::uint64_t key) {
    return download(peer, key);
  }
};

}  // namespace tb::bridge
