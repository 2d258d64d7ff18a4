// The receive buffer of one websocket message (a Beast DynamicBuffer). Memory is committed as the
// message's bytes arrive, never reserved from the length a frame header declares: the caller grows
// it one bounded chunk ahead of each read (`reserve_next`), and growth is geometric through
// realloc, which for large blocks remaps pages instead of copying them. The finished message is
// handed to the decoder as shared bytes (`release`), which the decoded frame's tensor views share.
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

#include "torchbridge/ir/bytes.hpp"

namespace tb::bridge {

class MessageBuffer {
 public:
  using const_buffers_type = boost::asio::const_buffer;
  using mutable_buffers_type = boost::asio::mutable_buffer;

  explicit MessageBuffer(std::size_t max_size) : max_(max_size) {}
  ~MessageBuffer() { std::free(data_); }
  MessageBuffer(const MessageBuffer&) = delete;
  MessageBuffer& operator=(const MessageBuffer&) = delete;

  // Room for `n` more bytes (capped at max_size). False when memory ran out.
  bool reserve_next(std::size_t n) noexcept {
    const std::size_t want = std::min(max_ - std::min(max_, size_), n) + size_;
    if (want <= capacity_) return true;
    std::size_t cap = std::max(want, std::min(max_, capacity_ * 2));
    void* p = std::realloc(data_, std::max<std::size_t>(cap, 1));
    if (p == nullptr) return false;
    data_ = static_cast<std::uint8_t*>(p);
    capacity_ = cap;
    return true;
  }

  std::size_t size() const { return size_; }
  std::size_t max_size() const { return max_; }
  std::size_t capacity() const { return capacity_; }
  const_buffers_type data() const { return {data_, size_}; }
  mutable_buffers_type prepare(std::size_t n) {
    if (n > max_ - size_) throw std::length_error("websocket message over the buffer's limit");
    if (size_ + n > capacity_ && !reserve_next(n)) throw std::bad_alloc();
    return {data_ + size_, n};
  }
  void commit(std::size_t n) { size_ = std::min(size_ + n, capacity_); }
  void consume(std::size_t n) {
    n = std::min(n, size_);
    std::memmove(data_, data_ + n, size_ - n);
    size_ -= n;
  }

  // The bytes received, owning their memory; the buffer is empty afterwards.
  ir::Bytes release() {
    std::uint8_t* p = std::exchange(data_, nullptr);
    const std::size_t n = std::exchange(size_, 0);
    capacity_ = 0;
    // If the control block cannot be allocated, the deleter frees `p` before the throw.
    std::shared_ptr<std::uint8_t> owner(p, [](std::uint8_t* q) { std::free(q); });
    return ir::Bytes(std::move(owner), p, n);
  }

 private:
  std::size_t max_;
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace tb::bridge

namespace tb::bridge {

// Bytes a message is read ahead by: what the host commits before they arrive (less for a
// message's start: most messages are small).
inline constexpr std::size_t kReadChunk = 1 << 20;
inline constexpr std::size_t kFirstReadChunk = 64 << 10;

// Reads one whole websocket message into `buffer`, kReadChunk bytes at a time, committing memory
// only ahead of each read. After each read `progress()` may end the read early by returning an
// error (a budget exceeded); `done(ec)` is called once, with the message complete when !ec.
template <class Stream, class Progress, class Done>
void async_read_chunked(Stream& ws, MessageBuffer& buffer, Progress progress, Done done) {
  const std::size_t chunk = buffer.size() == 0 ? kFirstReadChunk : kReadChunk;
  if (!buffer.reserve_next(chunk)) {
    return done(make_error_code(boost::system::errc::not_enough_memory));
  }
  ws.async_read_some(buffer, chunk,
                     [&ws, &buffer, progress = std::move(progress), done = std::move(done)](
                         boost::system::error_code ec, std::size_t) mutable {
                       if (!ec) ec = progress();
                       if (ec || ws.is_message_done()) return done(ec);
                       async_read_chunked(ws, buffer, std::move(progress), std::move(done));
                     });
}

}  // namespace tb::bridge
