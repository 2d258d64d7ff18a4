// A federation: several torchbridge processes that a client sees as one host. Every member knows
// every member's devices, in rank order, so a device's index is the same on every member; the
// member that owns a device serves its sessions, and the others relay them (docs/federation.md).
//
// The host sees a federation through this interface alone: tb_federation implements it on
// torch.distributed's c10d (ProcessGroupGloo to reduce), meeting at an authenticated store.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "torchbridge/ir/types.hpp"
#include "torchbridge/result.hpp"

namespace tb::bridge {

struct FederationMember {
  std::uint32_t rank = 0;
  // Where the member serves sessions: ws://host:port or wss://host:port.
  std::string address;
  // The member's devices are [first_device, first_device + device_count) of the federation's.
  std::uint32_t first_device = 0;
  std::uint32_t device_count = 0;
  std::vector<std::string> device_names;
};

class Federation {
 public:
  virtual ~Federation() = default;

  virtual std::uint32_t rank() const = 0;
  // Every member, by rank.
  virtual const std::vector<FederationMember>& members() const = 0;

  // Sums `data` element-wise with the parts the other members in `ranks` (sorted, this member
  // among them) bring under the same `key`, and returns the sum, the same bytes on every member.
  // A collective's members call in the same order for one key. Several local callers may bring
  // the same round (`round`): the first one's part is reduced, and all of them get its result.
  // A key `bound_to` sessions is forgotten when one of them ends here (session_ended).
  virtual Result<ir::TensorData> sum_across(const std::vector<std::uint32_t>& ranks,
                                            const std::string& key, std::uint64_t round,
                                            const ir::TensorData& data,
                                            std::chrono::milliseconds timeout,
                                            const std::vector<std::uint64_t>& bound_to = {}) = 0;

  // Where sessions run: Burn 0.23 names a collective's members by their sessions, which may be on
  // any member. A member announces the sessions it serves (best effort: a failure is logged) and
  // forgets them when they end; locate_session waits up to `timeout` for one to be announced.
  virtual void announce_session(std::uint64_t session) = 0;
  virtual void session_ended(std::uint64_t session) = 0;
  virtual Result<std::uint32_t> locate_session(std::uint64_t session,
                                               std::chrono::milliseconds timeout) = 0;

  // Same-host transfers between members: the member whose session exposed transfer `key` (served
  // on its `/data` route) tells the others; a member whose session registers it finds the owner.
  // locate_transfer waits up to `timeout` and forgets the key once found (a key is taken once).
  virtual Status announce_transfer(std::uint64_t key) = 0;
  virtual Result<std::uint32_t> locate_transfer(std::uint64_t key,
                                                std::chrono::milliseconds timeout) = 0;

  // A secret every member holds and no one else can compute: same-host transfer keys between
  // members are keyed with it (relay.hpp, transfer_key), so nobody can derive a client's key from
  // its address and transfer id (issue 39, finding 3).
  virtual const std::string& transfer_secret() const = 0;
  // The host is stopping: waits in progress fail at once.
  virtual void shutdown() = 0;

  std::uint32_t device_count() const {
    const auto& m = members();
    return m.empty() ? 0 : m.back().first_device + m.back().device_count;
  }
  // The member that owns federation device `device` (< device_count()).
  const FederationMember& owner_of(std::uint32_t device) const {
    for (const auto& m : members()) {
      if (device < m.first_device + m.device_count) return m;
    }
    return members().back();
  }
};

}  // namespace tb::bridge
