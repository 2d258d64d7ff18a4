// What a session's websocket is receiving: the buffer the next read fills, the memory the message
// holds against the host as its bytes arrive, and in tagged framing (0.23) the reassembly of its
// segments into one message (framing::Reassembly). Socket-free: the connection (ws_session.cpp)
// reads into `buffer()` and hands over each finished websocket message; the tests commit bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "memory.hpp"
#include "net/message_buffer.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "torchbridge/ir/bytes.hpp"
#include "transport/framing.hpp"

namespace tb::bridge {

class Inbound {
 public:
  // `max_message_bytes`: the host's limit on a message (HostLimits); `blocks`: the host's warm
  // message blocks.
  Inbound(std::uint64_t max_message_bytes, std::shared_ptr<ir::BlockCache> blocks)
      : reassembly_(max_message_bytes), blocks_(std::move(blocks)) {}

  // Readies the buffer of the next websocket message and returns the most bytes it may hold.
  // Tagged: a head, or the next segment into the same buffer. Otherwise a whole message of at most
  // `whole_limit` bytes.
  std::size_t prepare(bool tagged, std::size_t whole_limit);
  tb::net::MessageBuffer& buffer() { return *message_; }
  // Charges the bytes arrived so far to `account` (after each chunk a read brings in).
  void charge(std::shared_ptr<MemoryAccount> account) {
    receiving_ = MemoryCharge(std::move(account), message_->size());
  }
  // Whether the message has grown past its first read (tb::net::past_first_read).
  bool past_first_read() const { return tb::net::past_first_read(message_->size()); }

  struct Step {
    enum class Kind {
      kMessage,  // `message` is whole; its charge holds until release_charge()
      kMore,     // a segment arrived; read the next
      kReject,   // not a valid head or segment: `reason`
      kTooBig,   // a head announced `length` bytes, over the limit
    };
    Kind kind = Kind::kReject;
    ir::Bytes message;
    std::uint64_t arrived = 0;  // the payload bytes of this websocket message
    std::uint64_t length = 0;
    std::string reason;
  };
  // A websocket message has been read into buffer().
  Step on_read(bool tagged);

  // The finished message's bytes are counted by their new owner: its charge ends.
  void release_charge() { receiving_ = {}; }
  // Forgets the message being received, its charge and any reassembly (a rejection, an error).
  void drop();
  std::uint64_t max_message_bytes() const { return reassembly_.max_message_bytes(); }

 private:
  Step on_head();
  Step on_segment();

  framing::Reassembly reassembly_;
  std::shared_ptr<ir::BlockCache> blocks_;
  std::unique_ptr<tb::net::MessageBuffer> message_;
  MemoryCharge receiving_;
};

}  // namespace tb::bridge
