#include "transport/framing.hpp"

#include <algorithm>

namespace tb::bridge::framing {

Result<Head> parse_head(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return make_error(ErrorCode::kDecode, "a message with no head");
  if (data[0] == kWholeTag) return Head{true, size - 1};
  if (data[0] == kSegmentedTag && size == 9) {
    std::uint64_t length = 0;
    for (int i = 8; i >= 1; --i) length = (length << 8) | data[i];
    if (length == 0) {
      return make_error(ErrorCode::kDecode, "a segmented message of 0 bytes");
    }
    return Head{false, length};
  }
  return make_error(ErrorCode::kDecode, "a message head with tag {} and {} bytes", data[0],
                    size - 1);
}

std::uint64_t Reassembly::read_limit() const {
  return in_message() ? std::min<std::uint64_t>(kMaxFrame, left_) : kMaxHead;
}

Reassembly::HeadStep Reassembly::on_head(const std::uint8_t* data, std::size_t size) {
  auto parsed = parse_head(data, size);
  if (!parsed) return {HeadStep::Kind::kReject, 0, parsed.error().what()};
  const std::uint64_t length = parsed.value().length;
  // The host's limit holds for a whole message too (it may be set below 64 KiB); a segmented
  // message's declared length is checked before the session commits any memory to it.
  if (length > max_) return {HeadStep::Kind::kTooBig, length, {}};
  if (parsed.value().whole) return {HeadStep::Kind::kWhole, length, {}};
  length_ = left_ = length;
  return {HeadStep::Kind::kSegmented, length, {}};
}

Reassembly::SegmentStep Reassembly::on_segment(std::uint64_t got) {
  // Longer than what is left cannot arrive through read_limit(); refused all the same.
  if (got == 0 || got > left_) {
    reset();
    return {SegmentStep::Kind::kReject, got == 0 ? "an empty frame in the middle of a message"
                                                 : "a segment longer than its message"};
  }
  left_ -= got;
  if (left_ > 0) return {SegmentStep::Kind::kMore, {}};
  reset();
  return {SegmentStep::Kind::kComplete, {}};
}

std::vector<std::vector<boost::asio::const_buffer>> tagged_messages(
    const OutFrame& frame, std::array<std::uint8_t, 9>& head) {
  std::vector<std::vector<boost::asio::const_buffer>> messages;
  if (frame.size <= kMaxWhole) {
    head[0] = kWholeTag;
    auto& whole = messages.emplace_back();
    whole.reserve(frame.segments.size() + 1);
    whole.emplace_back(head.data(), 1);
    for (const auto& s : frame.segments) whole.emplace_back(s.data(), s.size());
    return messages;
  }
  head[0] = kSegmentedTag;
  for (int i = 0; i < 8; ++i) head[1 + i] = static_cast<std::uint8_t>(frame.size >> (8 * i));
  messages.push_back({boost::asio::const_buffer(head.data(), head.size())});
  messages.reserve(1 + (frame.size + kMaxFrame - 1) / kMaxFrame);
  // Windows of kMaxFrame bytes over the segments, cut where a window ends.
  std::size_t room = 0;
  for (const auto& s : frame.segments) {
    std::size_t offset = 0;
    while (offset < s.size()) {
      if (room == 0) {
        messages.emplace_back();
        room = kMaxFrame;
      }
      const std::size_t n = std::min(room, s.size() - offset);
      messages.back().emplace_back(s.data() + offset, n);
      offset += n;
      room -= n;
    }
  }
  return messages;
}

}  // namespace tb::bridge::framing
