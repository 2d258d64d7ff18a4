// The single-writer queue of a session's answers, apart from the socket: which answer goes next,
// in which websocket messages (bare, or tagged pieces), and what each one holds until its write
// completes. SessionConnection writes the buffers it gives and reports each completion back;
// socket-free so that its order and its bookkeeping are unit-tested
// (tests/bridge/session_writer_test.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include <boost/asio/buffer.hpp>

#include "session/session_worker.hpp"

namespace tb::bridge {

class SessionWriter {
 public:
  using Buffers = std::vector<boost::asio::const_buffer>;

  // Queues an answer; true when no write is in flight, so the caller starts one (next()).
  bool push(Outgoing out);
  // The buffers of the websocket message to write now: the next piece of the answer being
  // written, or the first of the oldest answer's. They borrow the answer's own bytes and stay
  // valid until written() is told of that write.
  const Buffers& next();
  // What the caller does once a write completed.
  enum class After {
    kWrite,   // write next()
    kIdle,    // every queued answer is written
    kFailed,  // the write failed; every answer was dropped
  };
  After written(bool failed);

  // From the next answer on, answers go out in tagged framing (framing.hpp).
  void set_tagged(bool tagged) { tagged_ = tagged; }
  bool writing() const { return writing_; }
  // Nothing is being written and nothing waits.
  bool idle() const { return !writing_ && writes_.empty(); }
  // Drops the answers not yet started: their places and bytes are given back now.
  void drop_unsent();

 private:
  std::deque<Outgoing> writes_;
  Buffers buffers_;  // bare framing: the answer's segments as one message
  // Tagged framing: the answer's websocket messages, the one being written, and their head.
  std::vector<Buffers> pieces_;
  std::size_t piece_ = 0;
  std::array<std::uint8_t, 9> head_{};
  bool tagged_ = false;
  bool writing_ = false;
};

}  // namespace tb::bridge
