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
  const bool complete = arrived_.wait_for(
      lock, timeout, [&] { return rounds_[key].contributions.size() == devices.size(); });
  auto& done = rounds_[key];
  if (!complete) {
    // Withdraw, so a late participant times out too instead of reducing a partial set.
    done.contributions.erase(position);
    if (done.contributions.empty()) rounds_.erase(key);
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

}  // namespace tb::bridge
