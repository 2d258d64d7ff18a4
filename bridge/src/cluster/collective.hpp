// All-reduce across the devices of one host: Burn 0.22.1's DistributedOperationIr::AllReduce
// (rounds keyed by the device set) and Burn 0.23's Task::AllReduceLocal (rounds keyed by the
// client's random collective id, with its members' sessions named).
//
// Each participating session contributes its tensor and waits for the others; every participant
// then reduces the same contributions in the same order (by device position), so every device
// ends with bit-identical results. The reduction itself runs through each session's executor as
// ordinary IR ops, so the host stays backend-agnostic.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "torchbridge/backend/backend.hpp"

namespace tb::bridge {

class CollectiveHub {
 public:
  using Contribution = std::shared_ptr<const backend::Transferable>;

  // Contributes `tensor` from device `position` to the next all-reduce over `devices` (sorted
  // positions) and waits for the participants on this host, `here` (sorted; all of `devices` but
  // in a federation). Returns their contributions by position, and the round's number in `round`.
  Result<std::vector<Contribution>> all_reduce(const std::vector<std::uint32_t>& devices,
                                               const std::vector<std::uint32_t>& here,
                                               std::uint32_t position, Contribution tensor,
                                               std::chrono::milliseconds timeout,
                                               std::uint64_t* round = nullptr);
  // Protocol 6: member `member` of collective `id`, whose members' sessions are `sessions` (by
  // member), brings its tensor, or the error its input failed with. Returns every member's tensor
  // by member once all are in. A failure (the parts disagree on the sessions, a member comes
  // twice, a member's input failed, a member's session ended, a wait timed out) is returned to
  // every member waiting at once, and to any that comes later while the round is remembered.
  // `open(session)` says whether a session is still connected. In a federation, `here` (sorted)
  // names the members whose sessions this host serves: the round completes with theirs, and
  // returns them by member (empty: every member is here). Every member must bring the same shape
  // and dtype; a mismatch fails the round for all. `caller` is the session joining: the rounds it
  // starts count against its own bound (kMaxLocalRoundsPerSession), never another session's.
  Result<std::vector<Contribution>> join_local(std::uint64_t caller, std::uint64_t id,
                                               std::uint32_t member,
                                               const std::vector<std::uint64_t>& sessions,
                                               Result<Contribution> input,
                                               const std::function<bool(std::uint64_t)>& open,
                                               std::chrono::milliseconds timeout,
                                               const std::vector<std::uint32_t>& here = {});
  // A session's connection ended: every local collective naming it that is not complete fails.
  void session_ended(std::uint64_t session_id);
  // The host is stopping: every all_reduce waiting now or later returns an error at once.
  void shutdown();

  // Local rounds remembered at most (waiting, or failed and kept for the late members), host-wide
  // and per session that started them. A session's worker waits in one round at a time, so its
  // rounds beyond the first are failed ones kept for late members: past its bound its oldest go,
  // and a full table drops failed rounds before it refuses a new one (issue 39, finding 4: one
  // session's 4,200 failing parts had filled the table for everyone).
  static constexpr std::size_t kMaxLocalRounds = 4096;
  static constexpr std::size_t kMaxLocalRoundsPerSession = 16;

 private:
  struct LocalRound {
    std::uint64_t owner = 0;  // the session whose part started it
    std::vector<std::uint64_t> sessions;
    std::size_t expected = 0;  // parts that complete the round here
    std::map<std::uint32_t, Contribution> parts;
    std::optional<Error> failed;
    std::size_t taken = 0;  // members that took the result
    std::chrono::steady_clock::time_point forget_at;
  };
  void fail_local(LocalRound& round, Error error);
  void forget_expired_locked();
  // Makes room for a round `caller` starts: false when the caller or the host is at its bound
  // with rounds that are still waiting.
  bool make_room_locked(std::uint64_t caller);
  // Why `input` cannot be reduced with the parts already in `round` (shape or dtype), if so.
  static std::optional<Error> mismatch(const LocalRound& round, std::uint32_t member,
                                       const Contribution& input);

  struct Round {
    std::map<std::uint32_t, Contribution> contributions;
    std::size_t collected = 0;  // participants that took the result
  };
  std::mutex mutex_;
  std::condition_variable arrived_;
  bool stopping_ = false;
  // Per device set: the round each position is at, and the rounds in flight.
  std::map<std::vector<std::uint32_t>, std::map<std::uint32_t, std::uint64_t>> next_round_;
  std::map<std::pair<std::vector<std::uint32_t>, std::uint64_t>, Round> rounds_;
  std::map<std::uint64_t, LocalRound> local_;
};

}  // namespace tb::bridge
