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
#include <vector>

#include <boost/asio/buffer.hpp>

#include "out_frame.hpp"
#include "torchbridge/result.hpp"

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

}  // namespace tb::bridge::framing
