// Recently freed message blocks, kept for the next message of about the same size. A fresh block
// costs a page fault per 4 KiB page the first time it is written, and on a virtual machine that is
// 1-2 µs a page: 0.45 ms for 1 MiB, twenty times the cost of copying it into warm memory. A host
// receiving uploads and a client receiving downloads allocate such a block per message and free it
// soon after (when the tensor over it goes, when a download has been copied out), so the next
// message of the same size can take it warm.
//
// Bounded in bytes and in blocks, and idle blocks expire: what it keeps is memory the process holds
// for nobody, so the host counts it against its own limit and empties it before refusing work
// (docs/reliability.md, "Memory"). Thread-safe: blocks come back from any thread (an ATen deleter).
//
// Owned, not global: a host owns one (sized from its own memory limit, counted and trimmed by it
// alone), and the C++ client library owns another for its sessions. Two hosts in one process
// (tests, the federation bench) never share or resize each other's. A block given out keeps its
// cache alive (ExclusiveBlock holds it), since a tensor over it may outlive its owner.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace tb::ir {

class BlockCache {
 public:
  struct Block {
    std::uint8_t* data = nullptr;  // malloc'd; free() or give() it back
    std::size_t size = 0;
  };
  struct Stats {
    std::uint64_t hits = 0;    // takes answered from the cache
    std::uint64_t misses = 0;  // takes the cache could not answer
    std::uint64_t kept = 0;    // blocks given back and kept
  };

  // Blocks smaller than this are left to malloc, which keeps them warm itself.
  static constexpr std::size_t kMinBlock = 64 * 1024;
  static constexpr std::size_t kMaxBlocks = 32;
  // What a block taken for n bytes may have beyond them (it pins that much more while in use).
  static constexpr std::size_t kTakeSlack = 32 * 1024;
  static constexpr std::chrono::seconds kMaxIdle{10};

  // min(physical memory / 16, 256 MiB): the client's limit, and a host's before it sets its own
  // from its memory limit. A host's sweeper and each client session expire idle blocks.
  static std::size_t default_limit();

  explicit BlockCache(std::size_t limit_bytes) : limit_(limit_bytes) {}
  ~BlockCache() { trim(); }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // The smallest kept block of at least `min` and at most `max` bytes, taken out of the cache;
  // an empty Block when there is none.
  Block take(std::size_t min, std::size_t max) noexcept;
  // Keeps a malloc'd block of `size` bytes for a later take, or frees it (too small, larger than
  // the limit, or room only by freeing a larger block). Older blocks are freed to make room.
  void give(std::uint8_t* p, std::size_t size) noexcept;

  // Frees every kept block.
  void trim() noexcept;
  // Frees the blocks kept for longer than kMaxIdle.
  void expire(std::chrono::steady_clock::time_point now) noexcept;
  // Frees what is over the new limit.
  void set_limit(std::size_t bytes) noexcept;

  std::size_t limit() const;
  std::size_t bytes() const;  // kept now
  Stats stats() const;

 private:
  struct Entry {
    std::uint8_t* data = nullptr;
    std::size_t size = 0;
    std::chrono::steady_clock::time_point since;
  };
  // Frees entries, oldest first, until `bytes_ + room` fits the limit and a slot is free; false
  // (and nothing freed) when that would free a block larger than `room`.
  bool make_room_locked(std::size_t room) noexcept;
  void erase_locked(std::size_t i) noexcept;

  mutable std::mutex mutex_;
  std::array<Entry, kMaxBlocks> entries_{};
  std::size_t count_ = 0;
  // Written under mutex_; read without it by bytes(), which every op's memory check calls.
  std::atomic<std::size_t> bytes_{0};
  std::size_t limit_;
  Stats stats_;
};

}  // namespace tb::ir
