// A block of memory whose bytes belong to one ir::Bytes owner alone: a received message's buffer,
// whose decoded slices never overlap and which nothing else reads or writes. A consumer finds it
// with std::get_deleter<ExclusiveBlock>(bytes.owner()) and may then keep a slice (an upload
// becoming a tensor's storage, written in place) instead of copying it, knowing how much memory
// keeping it pins. Any other owner may be shared: copy before keeping or writing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "torchbridge/ir/block_cache.hpp"
#include "torchbridge/ir/bytes.hpp"

namespace tb::ir {

struct ExclusiveBlock {
  std::size_t size = 0;  // the block's bytes, all of which a kept slice keeps alive
  // Where the block goes back to, warm for the next message of its size; none: freed.
  std::shared_ptr<BlockCache> cache;
  void operator()(std::uint8_t* p) const {
    if (cache) {
      cache->give(p, size);
    } else {
      std::free(p);
    }
  }
};

// Bytes over a malloc'd block of `size` bytes, which they own; it goes back to `cache` when they
// go (freed when there is none).
inline Bytes exclusive_block(std::uint8_t* p, std::size_t size,
                             std::shared_ptr<BlockCache> cache = nullptr) {
  // If the control block cannot be allocated, the deleter frees `p` before the throw.
  std::shared_ptr<std::uint8_t> owner(p, ExclusiveBlock{size, std::move(cache)});
  return Bytes(std::move(owner), p, size);
}

// Bytes holding a copy of `size` bytes at `data`, in a warm block of `cache` when it keeps one of
// about that size (a client's uploads).
inline Bytes exclusive_copy_of(const void* data, std::size_t size,
                               const std::shared_ptr<BlockCache>& cache) {
  if (size < BlockCache::kMinBlock) return Bytes::copy_of(data, size);
  BlockCache::Block b;
  if (cache) b = cache->take(size, size + BlockCache::kTakeSlack);
  if (b.data == nullptr) {
    b = {static_cast<std::uint8_t*>(std::malloc(size)), size};
    if (b.data == nullptr && cache) {
      cache->trim();  // the warm blocks go first
      b.data = static_cast<std::uint8_t*>(std::malloc(size));
    }
    if (b.data == nullptr) throw std::bad_alloc();
  }
  std::memcpy(b.data, data, size);
  return exclusive_block(b.data, b.size, cache).slice(0, size);
}

// The block `bytes` lie in when its owner is exclusive; null otherwise.
inline const ExclusiveBlock* exclusive_block_of(const Bytes& bytes) {
  return bytes.owner() ? std::get_deleter<ExclusiveBlock>(bytes.owner()) : nullptr;
}

}  // namespace tb::ir
