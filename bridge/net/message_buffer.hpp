// The receive buffer of one websocket message (a Beast DynamicBuffer). Memory is committed as the
// message's bytes arrive, never reserved from the length a frame header declares: the caller grows
// it one bounded chunk ahead of each read (`reserve_next`), and growth is geometric through
// realloc, which for large blocks remaps pages instead of copying them. A large upload's declared
// length only picks a block its owner's cache holds (ir::BlockCache), warm from an earlier
// message of that size. The finished message is handed to the decoder as shared bytes (`release`),
// which the decoded frame's tensor views share; the block goes back to the cache when they go.
// The host reads every message into one, and so does the C++ client (its downloads).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

#include "torchbridge/ir/block_cache.hpp"
#include "torchbridge/ir/bytes.hpp"
#include "torchbridge/ir/exclusive_block.hpp"

namespace tb::net {

class MessageBuffer {
 public:
  using const_buffers_type = boost::asio::const_buffer;
  using mutable_buffers_type = boost::asio::mutable_buffer;

  // Blocks come from and go back to `cache` (the host's, or the client's); none: malloc and free.
  MessageBuffer(std::size_t max_size, std::shared_ptr<ir::BlockCache> cache)
      : max_(max_size), cache_(std::move(cache)) {}
  ~MessageBuffer() { std::free(data_); }
  MessageBuffer(const MessageBuffer&) = delete;
  MessageBuffer& operator=(const MessageBuffer&) = delete;

  // Room for `n` more bytes (capped at max_size). False when memory ran out.
  bool reserve_next(std::size_t n) noexcept {
    const std::size_t want = std::min(max_ - std::min(max_, size_), n) + size_ + front_;
    if (want <= capacity_) return true;
    std::size_t cap = std::max(want, std::min(max_, capacity_ * 2));
    void* p = std::realloc(data_, std::max<std::size_t>(cap, 1));
    if (p == nullptr && cache_ && cache_->bytes() > 0) {
      // Out of memory: the warm blocks kept for later messages go first.
      cache_->trim();
      p = std::realloc(data_, std::max<std::size_t>(cap, 1));
    }
    if (p == nullptr) return false;
    data_ = static_cast<std::uint8_t*>(p);
    capacity_ = cap;
    return true;
  }

  std::size_t size() const { return size_; }
  std::size_t max_size() const { return max_; }
  std::size_t capacity() const { return capacity_; }
  // Bytes that can arrive before the block must grow.
  std::size_t room() const { return capacity_ - front_ - size_; }
  const_buffers_type data() const { return {data_ + front_, size_}; }
  mutable_buffers_type prepare(std::size_t n) {
    if (n > max_ - size_) throw std::length_error("websocket message over the buffer's limit");
    if (front_ + size_ + n > capacity_ && !reserve_next(n)) throw std::bad_alloc();
    return {data_ + front_ + size_, n};
  }
  void commit(std::size_t n) { size_ = std::min(size_ + n, capacity_ - front_); }
  void consume(std::size_t n) {
    n = std::min(n, size_);
    std::memmove(data_ + front_, data_ + front_ + n, size_ - n);
    size_ -= n;
  }

  // Called once the start of a message is in: when it holds the header of a large msgpack binary
  // (an upload's payload), shifts what arrived so far so that the payload will start 16-byte
  // aligned, as malloc's blocks are (realloc keeps that, wherever it moves the block). The upload
  // can then become a tensor over this memory (ExclusiveBlock) instead of a copy. Only the first
  // bytes move; a misread header costs nothing but the alignment. The declared length picks a warm
  // block from the cache when it holds one that fits; it never makes the buffer allocate.
  void align_large_payload() noexcept {
    constexpr std::size_t kScan = 512;           // where a task's header ends, at most
    constexpr std::uint32_t kLarge = 64 * 1024;  // payloads worth not copying
    constexpr std::size_t kAlign = 16;
    const std::uint8_t* m = data_ + front_;
    const std::size_t scan = std::min(size_, kScan);
    // memchr finds the candidates: a byte-by-byte loop over every small message's first bytes was
    // 1.9% of the host's CPU under Burn's plain client (a frame of four ops per message).
    for (std::size_t i = 0; i + 5 <= scan; ++i) {
      const void* hit = std::memchr(m + i, 0xc6, scan - 4 - i);  // msgpack bin32
      if (hit == nullptr) return;
      i = static_cast<std::size_t>(static_cast<const std::uint8_t*>(hit) - m);
      const std::uint32_t len = (std::uint32_t{m[i + 1]} << 24) | (std::uint32_t{m[i + 2]} << 16) |
                                (std::uint32_t{m[i + 3]} << 8) | std::uint32_t{m[i + 4]};
      if (len < kLarge) continue;
      const std::size_t shift = (kAlign - (front_ + i + 5) % kAlign) % kAlign;
      adopt_cached(front_ + shift + i + 5 + std::size_t{len});
      if (shift == 0 || !reserve_next(shift) || front_ + shift + size_ > capacity_) return;
      m = data_ + front_;
      std::memmove(data_ + front_ + shift, m, size_);
      front_ += shift;
      return;
    }
  }

  // The bytes received, owning their memory; the buffer is empty afterwards.
  ir::Bytes release() {
    std::uint8_t* p = std::exchange(data_, nullptr);
    const std::size_t front = std::exchange(front_, 0);
    const std::size_t n = std::exchange(size_, 0) + front;
    // Growth left up to half the block unused: give it back, since the decoded frame's tensors
    // may keep the block (uploads become tensors over it) and count only their own bytes. For
    // large blocks realloc shrinks in place (the tail's pages are unmapped), copying nothing.
    std::size_t block = std::exchange(capacity_, 0);
    if (block - n > kTrimSlack && n > 0) {
      if (void* q = std::realloc(p, n)) {
        p = static_cast<std::uint8_t*>(q);
        block = n;
      }
    }
    return ir::exclusive_block(p, block, cache_).slice(front, n - front);
  }

 private:
  // A block taken from the cache fits within this slack, so that release() keeps it whole.
  static constexpr std::size_t kTrimSlack = ir::BlockCache::kTakeSlack;

  // Moves what arrived into a cached block of `end` bytes or a little more, when there is one.
  void adopt_cached(std::size_t end) noexcept {
    // It fits, or the message is too large, or there is no cache.
    if (end <= capacity_ || end - front_ > max_ || !cache_) return;
    const auto b = cache_->take(end, end + kTrimSlack);
    if (b.data == nullptr) return;
    std::memcpy(b.data + front_, data_ + front_, size_);
    std::free(data_);
    data_ = b.data;
    capacity_ = b.size;
  }

  std::size_t max_;
  std::shared_ptr<ir::BlockCache> cache_;
  std::uint8_t* data_ = nullptr;
  std::size_t front_ = 0;  // the message starts here in the block (alignment, see above)
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace tb::net

namespace tb::net {

// Bytes a message is read ahead by: what the host commits before they arrive (less for a
// message's start: most messages are small).
inline constexpr std::size_t kReadChunk = 1 << 20;
inline constexpr std::size_t kFirstReadChunk = 64 << 10;

// Whether a message of `received` bytes so far has grown past its first read: from there a host
// over its memory limit refuses it (a session's messages and a relay's alike). Up to there it is
// let in, charged all the same: a sync must reach a session whose op is being failed for memory.
inline bool past_first_read(std::size_t received) {
  return received > kFirstReadChunk;
}

// What the next read of a message asks for: a small first read (most messages are small), then the
// room the block has (all of a warm block taken for the message) before it grows by kReadChunk.
inline std::size_t next_read_size(const MessageBuffer& buffer) {
  if (buffer.size() == 0) return kFirstReadChunk;
  const std::size_t room = buffer.room();
  return room > 0 ? std::min(room, kReadChunk) : kReadChunk;
}

// Reads one whole websocket message into `buffer`, kReadChunk bytes at a time, committing memory
// only ahead of each read. After each read `progress()` may end the read early by returning an
// error (a budget exceeded); `done(ec)` is called once, with the message complete when !ec.
template <class Stream, class Progress, class Done>
void async_read_chunked(Stream& ws, MessageBuffer& buffer, Progress progress, Done done) {
  const bool first = buffer.size() == 0;
  const std::size_t chunk = next_read_size(buffer);
  if (!buffer.reserve_next(chunk)) {
    return done(make_error_code(boost::system::errc::not_enough_memory));
  }
  ws.async_read_some(buffer, chunk,
                     [&ws, &buffer, first, progress = std::move(progress), done = std::move(done)](
                         boost::system::error_code ec, std::size_t) mutable {
                       if (!ec && first) buffer.align_large_payload();
                       if (!ec) ec = progress();
                       if (ec || ws.is_message_done()) return done(ec);
                       async_read_chunked(ws, buffer, std::move(progress), std::move(done));
                     });
}

}  // namespace tb::net
