// ModelLedger (torchbridge/bridge/models.hpp): model weights counted against the host's limits.
#include <fmt/format.h>

#include "torchbridge/bridge/models.hpp"

namespace tb::bridge {

void ModelLedger::attach(Counter counter) {
  std::lock_guard lock(mutex_);
  counter_ = std::move(counter);
  for (const auto& [device, bytes] : held_) {
    (void)counter_(device, static_cast<std::int64_t>(bytes), /*check=*/false);
  }
}

void ModelLedger::detach() {
  std::lock_guard lock(mutex_);
  if (!counter_) return;
  for (const auto& [device, bytes] : held_) {
    (void)counter_(device, -static_cast<std::int64_t>(bytes), /*check=*/false);
  }
  counter_ = nullptr;
}

Status ModelLedger::charge(const std::string& device, std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (counter_) TB_TRY(counter_(device, static_cast<std::int64_t>(bytes), /*check=*/true));
  held_[device] += bytes;
  return ok();
}

void ModelLedger::release(const std::string& device, std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  auto it = held_.find(device);
  if (it == held_.end()) return;
  bytes = std::min(bytes, it->second);
  it->second -= bytes;
  if (it->second == 0) held_.erase(it);
  if (counter_) (void)counter_(device, -static_cast<std::int64_t>(bytes), /*check=*/false);
}

std::map<std::string, std::uint64_t> ModelLedger::bytes() const {
  std::lock_guard lock(mutex_);
  return held_;
}

}  // namespace tb::bridge
