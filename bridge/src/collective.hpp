// All-reduce across the devices of one host (Burn's DistributedOperationIr::AllReduce).
//
// Each participating session contributes its tensor and waits for the others; every participant
// then reduces the same contributions in the same order (by device position), so every device
// ends with bit-identical results. The reduction itself runs through each session's executor as
// ordinary IR ops, so the host stays backend-agnostic.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "torchbridge/backend/backend.hpp"

namespace tb::bridge {

class CollectiveHub {
 public:
  using Contribution = std::shared_ptr<const backend::Transferable>;

  // Contributes `tensor` from device `position` to the next all-reduce over `devices` (sorted
  // positions) and waits for every other participant. Returns the contributions by position.
  Result<std::vector<Contribution>> all_reduce(const std::vector<std::uint32_t>& devices,
                                               std::uint32_t position, Contribution tensor,
                                               std::chrono::milliseconds timeout);
  // The host is stopping: every all_reduce waiting now or later returns an error at once.
  void shutdown();

 private:
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
};

}  // namespace tb::bridge
