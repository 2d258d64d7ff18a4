// Burn 0.23's message layer on `/session` after the handshake (burn-remote 0.23.0-pre.1
// src/transport/message.rs, link.rs): every websocket message starts with a tag byte.
// - 0x00 + msgpack: a whole message of at most 64 KiB;
// - 0x01 + u64 LE length: a head, after which the message's bytes follow in websocket messages of
//   at most 1 MiB each, with no tag.
// The 0.23 client drops the session on a whole message over 64 KiB, so every answer over that is
// segmented. No sockets here: the session's reader and writer (ws_session.cpp) use these.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>

#include "torchbridge/result.hpp"
#include "transport/out_frame.hpp"

namespace tb::bridge::framing {

inline constexpr std::size_t kMaxWhole = 64 << 10;  // MAX_WHOLE_MESSAGE_SIZE
inline constexpr std::size_t kMaxFrame = 1 << 20;   // MAX_FRAME_SIZE
inline constexpr std::size_t kMaxHead = 1 + kMaxWhole;
inline constexpr std::uint8_t kWholeTag = 0;
inline constexpr std::uint8_t kSegmentedTag = 1;

// A message's first websocket message: the whole message after its tag, or the length of a
// message whose bytes follow.
struct Head {
  bool whole = true;
  std::uint64_t length = 0;  // bytes after the tag (whole) or still to come (segmented)
};

// Reads a head as the 0.23 client reads one (MessageHead::try_from); anything else is an error
// naming what arrived.
Result<Head> parse_head(const std::uint8_t* data, std::size_t size);

// The websocket messages that carry `frame`, head first, as buffers over `frame`'s own segments
// (nothing is copied) and over `head`, which must outlive the writes.
std::vector<std::vector<boost::asio::const_buffer>> tagged_messages(
    const OutFrame& frame, std::array<std::uint8_t, 9>& head);

// The receiving side of a session's tagged messages, without the socket: the session
// (ws_session.cpp) reads each websocket message under the limit this gives, hands over each head
// and the size of each segment, and does what the answer says. Socket-free so that it is
// unit-tested and fuzzed (fuzz/segments_fuzzer.cpp) exactly as the session drives it.
class Reassembly {
 public:
  // `max_message_bytes`: the host's limit on a message's announced length (HostLimits).
  explicit Reassembly(std::uint64_t max_message_bytes) : max_(max_message_bytes) {}

  // A segmented message is being received: the next websocket message is one of its segments.
  bool in_message() const { return left_ > 0; }
  // The most bytes the next websocket message may hold: a head (a whole message of at most
  // 64 KiB after its tag, or a length), or a segment (at most a frame, and at most what is left).
  std::uint64_t read_limit() const;
  // The bytes of the segmented message received so far: where the next segment starts.
  std::uint64_t received() const { return length_ - left_; }

  struct HeadStep {
    enum class Kind {
      kWhole,      // the message follows the tag in this websocket message
      kSegmented,  // `length` bytes follow in segments (in_message() from now on)
      kReject,     // not a head: `reason` says why
      kTooBig,     // a segmented message of `length` bytes, over max_message_bytes
    };
    Kind kind = Kind::kReject;
    std::uint64_t length = 0;
    std::string reason;
  };
  // A head arrived (when not in_message()).
  HeadStep on_head(const std::uint8_t* data, std::size_t size);

  struct SegmentStep {
    enum class Kind { kMore, kComplete, kReject };
    Kind kind = Kind::kReject;
    std::string_view reason;  // kReject; the message is forgotten
  };
  // A segment of `got` bytes arrived (when in_message()).
  SegmentStep on_segment(std::uint64_t got);

  // Forgets the message being received (the session rejected it).
  void reset() { length_ = left_ = 0; }
  std::uint64_t max_message_bytes() const { return max_; }

 private:
  std::uint64_t max_;
  std::uint64_t length_ = 0;  // the segmented message's announced length
  std::uint64_t left_ = 0;    // its bytes still to come
};

}  // namespace tb::bridge::framing
