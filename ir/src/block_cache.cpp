#include "torchbridge/ir/block_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace tb::ir {

std::size_t BlockCache::default_limit() {
  constexpr std::size_t kDefault = std::size_t{256} << 20;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return kDefault;
  return std::min(kDefault, static_cast<std::size_t>(pages) / 16 * static_cast<std::size_t>(page));
}

BlockCache::Block BlockCache::take(std::size_t min, std::size_t max) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t best = count_;
  for (std::size_t i = 0; i < count_; ++i) {
    const std::size_t s = entries_[i].size;
    if (s >= min && s <= max && (best == count_ || s < entries_[best].size)) best = i;
  }
  if (best == count_) {
    ++stats_.misses;
    return {};
  }
  ++stats_.hits;
  const Block b{entries_[best].data, entries_[best].size};
  bytes_ -= b.size;
  // Keep the entries in the order they came: the oldest are the first to go.
  std::move(entries_.begin() + static_cast<std::ptrdiff_t>(best) + 1,
            entries_.begin() + static_cast<std::ptrdiff_t>(count_),
            entries_.begin() + static_cast<std::ptrdiff_t>(best));
  --count_;
  return b;
}

void BlockCache::give(std::uint8_t* p, std::size_t size) noexcept {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (size >= kMinBlock && size <= limit_) {
      // Also where a process without a sweeper (a client) lets idle blocks go.
      const auto now = std::chrono::steady_clock::now();
      while (count_ > 0 && now - entries_[0].since > kMaxIdle) erase_locked(0);
      if (make_room_locked(size)) {
        entries_[count_++] = Entry{p, size, now};
        bytes_ += size;
        ++stats_.kept;
        return;
      }
    }
  }
  std::free(p);
}

bool BlockCache::make_room_locked(std::size_t room) noexcept {
  // The oldest go first, but never a block larger than the one to keep: refaulting a block costs
  // in proportion to its size, and freeing a large one (munmap) would stall the small message
  // that made room for its own.
  std::size_t n = 0;
  std::size_t freed = 0;
  while (n < count_ && (count_ - n == kMaxBlocks || bytes_ - freed + room > limit_)) {
    if (entries_[n].size > room) return false;
    freed += entries_[n++].size;
  }
  if (count_ - n == kMaxBlocks || bytes_ - freed + room > limit_) return false;
  while (n-- > 0) erase_locked(0);
  return true;
}

void BlockCache::erase_locked(std::size_t i) noexcept {
  std::free(entries_[i].data);
  bytes_ -= entries_[i].size;
  std::move(entries_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
            entries_.begin() + static_cast<std::ptrdiff_t>(count_),
            entries_.begin() + static_cast<std::ptrdiff_t>(i));
  --count_;
}

void BlockCache::trim() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  while (count_ > 0) erase_locked(count_ - 1);
}

void BlockCache::expire(std::chrono::steady_clock::time_point now) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  // The oldest come first.
  while (count_ > 0 && now - entries_[0].since > kMaxIdle) erase_locked(0);
}

void BlockCache::set_limit(std::size_t bytes) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = bytes;
  while (count_ > 0 && bytes_ > limit_) erase_locked(0);
}

std::size_t BlockCache::limit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limit_;
}

std::size_t BlockCache::bytes() const {
  return bytes_.load(std::memory_order_relaxed);
}

BlockCache::Stats BlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace tb::ir
