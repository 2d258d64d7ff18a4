// A session's failures between syncs, reported as Burn's host reports them: each once, by the
// first read of a tensor it poisoned or else by the next sync (burn-router 0.22.1
// TensorInterpreter::sync takes the error it recorded; a later sync does not see it again).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "torchbridge/result.hpp"

namespace tb::backend::libtorch {

class FailureLog {
 public:
  // One failed op (or registration, or transfer), shared by every tensor it poisoned.
  struct Failure {
    Error error;
    std::uint64_t period = 0;  // the sync period it happened in (the number of syncs before it)
    bool reported = false;
  };

  std::shared_ptr<Failure> record(const Error& error) {
    auto failure = std::make_shared<Failure>(Failure{error, period_, false});
    // Kept only while none is missing from the list, so that its front is the oldest unreported.
    if (kept_.size() == unreported_ && kept_.size() < kKept) kept_.push_back(failure);
    ++unreported_;
    return failure;
  }

  // The client has been told of `failure` (a read answered with it): the next sync leaves it out.
  void mark_reported(Failure& failure) {
    // A failure of an earlier period was reported by the sync that closed that period.
    if (failure.reported || failure.period != period_) return;
    failure.reported = true;
    --unreported_;
    const auto it = std::find_if(kept_.begin(), kept_.end(),
                                 [&](const auto& f) { return f.get() == &failure; });
    if (it != kept_.end()) kept_.erase(it);
  }

  // What a sync reports (the unreported failures of this period, summarised); starts a new one.
  Status take_report() {
    const std::uint64_t count = unreported_;
    std::optional<Error> first;
    if (!kept_.empty()) first = kept_.front()->error;
    kept_.clear();
    unreported_ = 0;
    ++period_;
    if (count == 0) return ok();
    // Reads reported every kept one; the others were never kept.
    if (!first) {
      return make_error(ErrorCode::kExecution, "{} operations failed since the last sync", count);
    }
    std::string message =
        count == 1 ? first->what()
                   : fmt::format("{} operations failed since the last sync; the first: {}", count,
                                 first->what());
    return Error{first->code, std::move(message), {}};
  }

 private:
  static constexpr std::size_t kKept = 8;
  std::vector<std::shared_ptr<Failure>> kept_;
  std::uint64_t unreported_ = 0;
  std::uint64_t period_ = 0;
};

}  // namespace tb::backend::libtorch
