// The host's counters and gauges: what GET /metrics reports about traffic. Every count goes through
// a method, so a gauge under a limit is checked and taken in one step (`try_open`), and nothing
// outside this class writes an atomic.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "torchbridge/ir/operation.hpp"

namespace tb::bridge {

// Totals since the host started.
enum class Count : std::uint8_t {
  kSessionsTotal,
  kSessionsRefused,
  kSessionsFailed,
  kConnectionsRefused,
  kTlsHandshakesFailed,
  kPlainCredentials,
  kRequestsRefused,
  kTasks,
  kTasksInline,
  kFramesRejected,
  kBytesIn,
  kBytesOut,
};
inline constexpr std::size_t kCountKinds = static_cast<std::size_t>(Count::kBytesOut) + 1;

// What is open now.
enum class Gauge : std::uint8_t { kConnections, kDataConnections, kRelays };
inline constexpr std::size_t kGaugeKinds = static_cast<std::size_t>(Gauge::kRelays) + 1;

// One place under a gauge: moved from the HTTP connection to the websocket connection it becomes,
// released when its last owner goes.
class GaugeSlot {
 public:
  GaugeSlot() = default;
  GaugeSlot(GaugeSlot&& other) noexcept : open_(std::exchange(other.open_, nullptr)) {}
  GaugeSlot& operator=(GaugeSlot&& other) noexcept {
    if (this != &other) {
      release();
      open_ = std::exchange(other.open_, nullptr);
    }
    return *this;
  }
  ~GaugeSlot() { release(); }

 private:
  friend class HostCounters;
  // Takes over one place already counted in `open`.
  explicit GaugeSlot(std::atomic<std::uint32_t>& open) : open_(&open) {}
  void release() {
    if (open_) open_->fetch_sub(1, std::memory_order_relaxed);
    open_ = nullptr;
  }
  std::atomic<std::uint32_t>* open_ = nullptr;
};

// What an open connection holds, moved along as GaugeSlot is: its place under max_connections,
// and its place on the network thread that serves it.
struct ConnectionSlots {
  GaugeSlot open;
  GaugeSlot thread;
};

class HostCounters {
 public:
  explicit HostCounters(std::size_t network_threads = 1)
      : by_thread_(network_threads == 0 ? 1 : network_threads) {}

  // Adds `n` to a total and returns the new total (log lines that back off use it).
  std::uint64_t add(Count c, std::uint64_t n = 1) {
    return counts_[index(c)].fetch_add(n, std::memory_order_relaxed) + n;
  }
  std::uint64_t value(Count c) const { return counts_[index(c)].load(std::memory_order_relaxed); }

  // A place under gauge `g` while fewer than `limit` are open, else nothing. The test and the
  // increment are one compare-exchange, so two threads cannot both take the last place.
  std::optional<GaugeSlot> try_open(Gauge g, std::uint64_t limit) {
    auto& open = gauges_[index(g)];
    std::uint32_t now = open.load(std::memory_order_relaxed);
    do {
      if (now >= limit) return std::nullopt;
    } while (!open.compare_exchange_weak(now, now + 1, std::memory_order_relaxed));
    return GaugeSlot(open);
  }
  // A place under a gauge with no limit.
  GaugeSlot open(Gauge g) {
    gauges_[index(g)].fetch_add(1, std::memory_order_relaxed);
    return GaugeSlot(gauges_[index(g)]);
  }
  std::uint32_t open_now(Gauge g) const {
    return gauges_[index(g)].load(std::memory_order_relaxed);
  }

  // A place on the network thread with the fewest connections (the first of them on a tie), and
  // that thread's index: where the listener, the only caller, puts a new connection so that
  // sessions spread over the threads.
  std::pair<std::size_t, GaugeSlot> open_on_least_loaded_thread() {
    std::size_t best = 0;
    for (std::size_t i = 1; i < by_thread_.size(); ++i) {
      if (by_thread_[i].load(std::memory_order_relaxed) <
          by_thread_[best].load(std::memory_order_relaxed))
        best = i;
    }
    by_thread_[best].fetch_add(1, std::memory_order_relaxed);
    return {best, GaugeSlot(by_thread_[best])};
  }
  std::size_t network_threads() const { return by_thread_.size(); }
  std::uint32_t open_on_thread(std::size_t i) const {
    return by_thread_.at(i).load(std::memory_order_relaxed);
  }

  void count_op(ir::OpKind kind) {
    ops_by_kind_[static_cast<std::size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t ops(ir::OpKind kind) const {
    return ops_by_kind_[static_cast<std::size_t>(kind)].load(std::memory_order_relaxed);
  }

 private:
  template <class E>
  static constexpr std::size_t index(E e) {
    return static_cast<std::size_t>(e);
  }

  std::array<std::atomic<std::uint64_t>, kCountKinds> counts_{};
  std::array<std::atomic<std::uint32_t>, kGaugeKinds> gauges_{};
  std::vector<std::atomic<std::uint32_t>> by_thread_;
  std::array<std::atomic<std::uint64_t>, ir::kOpKindCount> ops_by_kind_{};
};

}  // namespace tb::bridge
