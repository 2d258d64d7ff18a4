#include "cluster/collective.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tb::bridge {

Result<std::vector<CollectiveHub::Contribution>> CollectiveHub::all_reduce(
    const std::vector<std::uint32_t>& devices, const std::vector<std::uint32_t>& here,
    std::uint32_t position, Contribution tensor, std::chrono::milliseconds timeout,
    std::uint64_t* round_out) {
  std::unique_lock lock(mutex_);
  const std::uint64_t round = next_round_[devices][position]++;
  if (round_out) *round_out = round;
  const auto key = std::make_pair(devices, round);
  auto& r = rounds_[key];
  r.contributions[position] = std::move(tensor);
  arrived_.notify_all();
  const auto complete_now = [&] { return rounds_[key].contributions.size() == here.size(); };
  const bool complete = arrived_.wait_for(lock, timeout, [&] {
    return stopping_ || complete_now();
  }) && complete_now();
  auto& done = rounds_[key];
  if (!complete) {
    // Withdraw, so a late participant times out too instead of reducing a partial set.
    done.contributions.erase(position);
    if (done.contributions.empty()) rounds_.erase(key);
    if (stopping_) {
      return make_error(ErrorCode::kIo, "all_reduce over devices [{}]: the host is stopping",
                        fmt::join(devices, ", "));
    }
    return make_error(ErrorCode::kTimeout,
                      "all_reduce over devices [{}]: device {} waited {} ms for devices [{}]",
                      fmt::join(devices, ", "), position, timeout.count(), fmt::join(here, ", "));
  }
  std::vector<Contribution> out;
  out.reserve(here.size());
  for (const auto& [p, c] : done.contributions) out.push_back(c);
  // Every participant checks the same contributions, so all hear the same mismatch.
  std::optional<Error> bad;
  for (const auto& [p, c] : done.contributions) {
    const auto& first = *done.contributions.begin();
    if (!c || !first.second) continue;
    if (c->shape() != first.second->shape() || c->dtype() != first.second->dtype()) {
      bad = make_error(ErrorCode::kInvalidArgument,
                       "all_reduce over devices [{}]: device {} brings {} [{}] and device {} {} "
                       "[{}]: every device must bring the same shape and dtype",
                       fmt::join(devices, ", "), p, c->dtype().name(), fmt::join(c->shape(), ", "),
                       first.first, first.second->dtype().name(),
                       fmt::join(first.second->shape(), ", "));
      break;
    }
  }
  if (++done.collected == here.size()) rounds_.erase(key);
  if (bad) return *bad;
  return out;
}

void CollectiveHub::fail_local(LocalRound& round, Error error) {
  if (round.failed) return;  // the first failure is the one every member hears
  round.failed = std::move(error);
  round.parts.clear();
  arrived_.notify_all();
}

void CollectiveHub::forget_expired_locked() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = local_.begin(); it != local_.end();) {
    it = it->second.failed && it->second.forget_at <= now ? local_.erase(it) : std::next(it);
  }
}

bool CollectiveHub::make_room_locked(std::uint64_t caller) {
  // The failed round of `owner` (any owner when 0) remembered longest: the one to drop first.
  const auto oldest_failed = [&](std::uint64_t owner) {
    auto found = local_.end();
    for (auto it = local_.begin(); it != local_.end(); ++it) {
      if (!it->second.failed || (owner != 0 && it->second.owner != owner)) continue;
      if (found == local_.end() || it->second.forget_at < found->second.forget_at) found = it;
    }
    return found;
  };
  std::size_t mine = 0;
  for (const auto& [id, round] : local_) mine += round.owner == caller;
  while (mine >= kMaxLocalRoundsPerSession) {
    const auto it = oldest_failed(caller);
    if (it == local_.end()) return false;
    local_.erase(it);
    --mine;
  }
  while (local_.size() >= kMaxLocalRounds) {
    const auto it = oldest_failed(0);
    if (it == local_.end()) return false;
    local_.erase(it);
  }
  return true;
}

std::optional<Error> CollectiveHub::mismatch(const LocalRound& round, std::uint32_t member,
                                             const Contribution& input) {
  if (round.parts.empty() || !input) return std::nullopt;
  const auto& [first_member, first] = *round.parts.begin();
  if (!first) return std::nullopt;
  if (first->shape() == input->shape() && first->dtype() == input->dtype()) return std::nullopt;
  return make_error(ErrorCode::kInvalidArgument,
                    "member {} brings {} [{}] and member {} {} [{}]: every member of an all-reduce "
                    "must bring the same shape and dtype",
                    member, input->dtype().name(), fmt::join(input->shape(), ", "), first_member,
                    first->dtype().name(), fmt::join(first->shape(), ", "));
}

Result<std::vector<CollectiveHub::Contribution>> CollectiveHub::join_local(
    std::uint64_t caller, std::uint64_t id, std::uint32_t member,
    const std::vector<std::uint64_t>& sessions, Result<Contribution> input,
    const std::function<bool(std::uint64_t)>& open, std::chrono::milliseconds timeout,
    const std::vector<std::uint32_t>& here) {
  const auto context = [&](Error e) {
    e.context = fmt::format("AllReduceLocal {:#018x}, member {}", id, member);
    return e;
  };
  std::unique_lock lock(mutex_);
  forget_expired_locked();
  if (stopping_) return context(make_error(ErrorCode::kIo, "the host is stopping"));
  auto it = local_.find(id);
  if (it == local_.end()) {
    if (!make_room_locked(caller)) {
      return context(make_error(ErrorCode::kLimit,
                                "too many collectives in flight (this session may start {}, the "
                                "host {})",
                                kMaxLocalRoundsPerSession, kMaxLocalRounds));
    }
    it = local_.emplace(id, LocalRound{}).first;
    it->second.owner = caller;
    it->second.sessions = sessions;
    it->second.expected = here.empty() ? sessions.size() : here.size();
  }
  LocalRound& round = it->second;
  // Failures are remembered as long as a member could still be on its way.
  round.forget_at = std::chrono::steady_clock::now() + timeout;
  if (!round.failed) {
    if (round.sessions != sessions) {
      fail_local(round, make_error(ErrorCode::kInvalidArgument,
                                   "the members' parts disagree on the members' sessions"));
    } else if (member >= sessions.size()) {
      fail_local(round, make_error(ErrorCode::kInvalidArgument,
                                   "member {} of an all-reduce over {} member(s)", member,
                                   sessions.size()));
    } else if (round.parts.count(member)) {
      fail_local(round, make_error(ErrorCode::kInvalidArgument, "member {} arrived twice", member));
    } else if (!input) {
      fail_local(round, make_error(input.error().code, "member {}'s input failed: {}", member,
                                   input.error().what()));
    } else if (!here.empty() && !std::binary_search(here.begin(), here.end(), member)) {
      fail_local(round, make_error(ErrorCode::kInvalidArgument,
                                   "member {} is not among this host's members", member));
    } else if (auto e = mismatch(round, member, input.value())) {
      fail_local(round, std::move(*e));
    } else {
      for (std::uint32_t m = 0; m < sessions.size(); ++m) {
        if (!here.empty() && !std::binary_search(here.begin(), here.end(), m)) continue;
        const std::uint64_t s = sessions[m];
        if (!open(s)) {
          fail_local(round, make_error(ErrorCode::kInvalidArgument,
                                       "the session {:016x} of a member is not open", s));
          break;
        }
      }
    }
  }
  if (!round.failed) {
    round.parts[member] = std::move(input).value();
    arrived_.notify_all();
  }
  const std::size_t members = round.expected;
  const bool settled = arrived_.wait_for(
      lock, timeout, [&] { return stopping_ || round.failed || round.parts.size() == members; });
  if (!round.failed && round.parts.size() != members) {
    fail_local(round, stopping_ ? make_error(ErrorCode::kIo, "the host is stopping")
                                : make_error(ErrorCode::kTimeout,
                                             "member {} waited {} ms for the other members", member,
                                             timeout.count()));
  }
  (void)settled;
  if (round.failed) return context(*round.failed);
  std::vector<Contribution> out;
  out.reserve(members);
  for (const auto& [m, c] : round.parts) out.push_back(c);
  if (++round.taken == members) local_.erase(it);
  return out;
}

void CollectiveHub::session_ended(std::uint64_t session_id) {
  std::lock_guard lock(mutex_);
  for (auto& [id, round] : local_) {
    // A complete round is its members' to take, whoever leaves afterwards.
    if (round.failed || round.parts.size() == round.expected) continue;
    for (const std::uint64_t s : round.sessions) {
      if (s == session_id) {
        fail_local(round,
                   make_error(ErrorCode::kIo, "the session {:016x} of a member ended", session_id));
        break;
      }
    }
  }
}

void CollectiveHub::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  arrived_.notify_all();
}

}  // namespace tb::bridge
