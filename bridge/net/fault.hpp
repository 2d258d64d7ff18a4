// Fault injection for tests of what the host does when memory runs out at the worst moment:
// `TB_FAULT=point:skip:count[,point:skip:count...]` in a process's environment makes the `count`
// hits of `point` after the first `skip` fail as an allocation would (the caller throws
// std::bad_alloc). Real exhaustion (an address-space limit) reaches these places only by chance,
// one run in ten or twenty; a named point reaches them every time. Unset, a hit is one relaxed
// load of a flag.
#pragma once

#include <atomic>

namespace tb::net::fault {

enum class Point {
  kStreamWrite,  // a write started on an AnyStream, inside the operation above it (Beast's)
  kPost,         // a handler posted to a connection's network thread from another thread
  kCount,
};

namespace detail {
extern std::atomic<bool> armed;
bool hit_slow(Point point) noexcept;
}  // namespace detail

// True where this hit of `point` must fail.
inline bool hit(Point point) noexcept {
  return detail::armed.load(std::memory_order_relaxed) && detail::hit_slow(point);
}

// Reads TB_FAULT, the first time it is called in the process (hits before that never fail).
void arm_from_environment() noexcept;

}  // namespace tb::net::fault
