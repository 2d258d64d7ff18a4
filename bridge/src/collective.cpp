#include "collective.hpp"

#include <fmt/format.h>

namespace tb::bridge {

Result<std::vector<CollectiveHub::Contribution>> CollectiveHub::all_reduce(
    const std::vector<std::uint32_t>& devices, std::uint32_t position, Contribution tensor,
    std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const std::uint64_t round = next_round_[devices][position]++;
  const auto key = std::make_pair(devices, round);
  auto& r = rounds_[key];
  r.contributions[position] = std::move(tensor);
  arrived_.notify_all();
  const auto complete_now = [&] { return rounds_[key].contributions.size() == devices.size(); };
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
                      "all_reduce over devices [{}]: device {} waited {} ms for the others",
                      fmt::join(devices, ", "), position, timeout.count());
  }
  std::vector<Contribution> out;
  out.reserve(devices.size());
  for (const auto& [p, c] : done.contributions) out.push_back(c);
  if (++done.collected == devices.size()) rounds_.erase(key);
  return out;
}

void CollectiveHub::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  arrived_.notify_all();
}

}  // namespace tb::bridge
