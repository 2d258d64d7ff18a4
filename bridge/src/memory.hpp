// Memory a host holds for its clients beyond their tensors (received messages not yet run, answers
// not yet sent, tensors exposed for other hosts), counted per session and host-wide so that every
// byte counts against a limit (docs/reliability.md, "Memory").
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "torchbridge/ir/block_cache.hpp"

namespace tb::bridge {

// A counter of bytes, optionally rolling up into a parent (a session's into the host's).
class MemoryAccount {
 public:
  explicit MemoryAccount(MemoryAccount* parent = nullptr) : parent_(parent) {}
  MemoryAccount(const MemoryAccount&) = delete;
  MemoryAccount& operator=(const MemoryAccount&) = delete;

  void add(std::uint64_t n) {
    bytes_.fetch_add(n, std::memory_order_relaxed);
    if (parent_) parent_->add(n);
  }
  void sub(std::uint64_t n) {
    bytes_.fetch_sub(n, std::memory_order_relaxed);
    if (parent_) parent_->sub(n);
  }
  std::uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  const MemoryAccount* parent() const { return parent_; }

 private:
  MemoryAccount* parent_;
  std::atomic<std::uint64_t> bytes_{0};
};

// Bytes charged to an account for as long as the charge lives (it travels with what it pays
// for: a queued answer, an exposed download).
class MemoryCharge {
 public:
  MemoryCharge() = default;
  MemoryCharge(std::shared_ptr<MemoryAccount> account, std::uint64_t bytes)
      : account_(std::move(account)), bytes_(bytes) {
    if (account_) account_->add(bytes_);
  }
  MemoryCharge(MemoryCharge&& o) noexcept
      : account_(std::move(o.account_)), bytes_(std::exchange(o.bytes_, 0)) {}
  MemoryCharge& operator=(MemoryCharge&& o) noexcept {
    if (this != &o) {
      release();
      account_ = std::move(o.account_);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  MemoryCharge(const MemoryCharge&) = delete;
  MemoryCharge& operator=(const MemoryCharge&) = delete;
  ~MemoryCharge() { release(); }

  std::uint64_t bytes() const { return bytes_; }

 private:
  void release() {
    if (account_ && bytes_) account_->sub(bytes_);
    account_.reset();
    bytes_ = 0;
  }
  std::shared_ptr<MemoryAccount> account_;
  std::uint64_t bytes_ = 0;
};

// The tensors every session holds on one served device, against that device's limit. A CPU
// device's tensors are host memory as well; a GPU's are not (the host limit leaves them out).
struct DeviceAccount {
  DeviceAccount(std::string n, bool host_memory, std::uint64_t l)
      : name(std::move(n)), in_host_memory(host_memory), limit(l) {}
  const std::string name;  // "cpu", "cuda:0"
  const bool in_host_memory;
  const std::uint64_t limit;  // 0: none
  std::atomic<std::uint64_t> tensor_bytes{0};
};

// What share of a GPU's memory its tensors may take by default (Limits::max_device_bytes).
inline constexpr double kDefaultDeviceShare = 0.9;
// A device's limit: the one asked for, else the default of a device of `total` bytes (0 on the
// CPU, where the allocator reports none: no limit beyond the host's).
std::uint64_t device_limit(std::optional<std::uint64_t> asked, std::uint64_t total);

// Physical memory available to this process: the machine's, or its cgroup's limit when lower.
std::uint64_t available_memory_bytes();

// The host's memory against `limit` (0: unlimited), one formula for every check (a message being
// received, a relay, a session's op): every session's tensors, what the host's account holds
// (messages being received, queued work and answers, exposed copies), `extra`, and the host's
// warm message blocks (`blocks`, if any). The blocks are held for nobody: when the host is over
// the limit with them, they are freed first. The total when the host is still over, else nullopt.
std::optional<std::uint64_t> host_bytes_over(std::uint64_t limit, std::uint64_t tensors,
                                             std::uint64_t held, std::uint64_t extra,
                                             ir::BlockCache* blocks);

}  // namespace tb::bridge
