// Burn 0.23's message layer (framing.hpp), checked against burn-remote 0.23.0-pre.1's own rules
// (src/transport/message.rs and its tests).
#include "transport/framing.hpp"

#include <numeric>

#include <gtest/gtest.h>

namespace tb::bridge::framing {
namespace {

std::vector<std::uint8_t> bytes_of(const std::vector<boost::asio::const_buffer>& message) {
  std::vector<std::uint8_t> out;
  for (const auto& b : message) {
    const auto* p = static_cast<const std::uint8_t*>(b.data());
    out.insert(out.end(), p, p + b.size());
  }
  return out;
}

// A message of `n` bytes in segments of `piece` bytes (as OutFrame borrows tensor payloads).
OutFrame frame_of(std::size_t n, std::size_t piece) {
  OutFrame f;
  std::vector<std::uint8_t> all(n);
  std::iota(all.begin(), all.end(), std::uint8_t{0});
  for (std::size_t at = 0; at < n; at += piece) {
    const std::size_t len = std::min(piece, n - at);
    f.segments.push_back(ir::Bytes::copy_of(all.data() + at, len));
  }
  f.size = n;
  return f;
}

TEST(Framing, AMessageOfAtMost64KiBIsOneTaggedMessage) {
  std::array<std::uint8_t, 9> head{};
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, kMaxWhole}) {
    const auto f = frame_of(n, 1000);
    const auto messages = tagged_messages(f, head);
    ASSERT_EQ(messages.size(), 1u) << n;
    const auto bytes = bytes_of(messages[0]);
    ASSERT_EQ(bytes.size(), n + 1);
    EXPECT_EQ(bytes[0], kWholeTag);
    EXPECT_EQ(bytes[1], 0);
    EXPECT_EQ(bytes[n], static_cast<std::uint8_t>(n - 1));
  }
}

// "a_message_one_byte_over_the_whole_size_follows_its_head" and the frame-size cases.
TEST(Framing, ALargerMessageIsAHeadThenSegmentsOfAtMost1MiB) {
  std::array<std::uint8_t, 9> head{};
  struct Case {
    std::size_t size, piece, messages;
  };
  for (const Case c : {Case{kMaxWhole + 1, 7000, 2}, Case{kMaxFrame, kMaxFrame, 2},
                       Case{kMaxFrame + 1, 300000, 3}, Case{5 * kMaxFrame + 3, 1 << 16, 7}}) {
    const auto f = frame_of(c.size, c.piece);
    const auto messages = tagged_messages(f, head);
    ASSERT_EQ(messages.size(), c.messages) << c.size;
    const auto h = bytes_of(messages[0]);
    ASSERT_EQ(h.size(), 9u);
    auto parsed = parse_head(h.data(), h.size());
    ASSERT_TRUE(parsed);
    EXPECT_FALSE(parsed.value().whole);
    EXPECT_EQ(parsed.value().length, c.size);
    std::vector<std::uint8_t> body;
    for (std::size_t i = 1; i < messages.size(); ++i) {
      const auto m = bytes_of(messages[i]);
      EXPECT_GT(m.size(), 0u);
      EXPECT_LE(m.size(), kMaxFrame);
      if (i + 1 < messages.size()) {
        EXPECT_EQ(m.size(), kMaxFrame);
      }
      body.insert(body.end(), m.begin(), m.end());
    }
    ASSERT_EQ(body.size(), c.size);
    for (std::size_t i = 0; i < body.size(); i += 4099) {
      ASSERT_EQ(body[i], static_cast<std::uint8_t>(i)) << i;
    }
  }
}

TEST(Framing, TheSegmentsAreViewsOfTheFramesOwnBytes) {
  std::array<std::uint8_t, 9> head{};
  const auto f = frame_of(3 * kMaxFrame, 3 * kMaxFrame);
  const auto messages = tagged_messages(f, head);
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[1][0].data(), f.segments[0].data());
}

TEST(Framing, HeadsAreReadAsBurnsClientReadsThem) {
  const std::uint8_t whole[] = {0, 0x91, 0x01};
  auto w = parse_head(whole, sizeof(whole));
  ASSERT_TRUE(w);
  EXPECT_TRUE(w.value().whole);
  EXPECT_EQ(w.value().length, 2u);
  const std::uint8_t seg[] = {1, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0};
  auto s = parse_head(seg, sizeof(seg));
  ASSERT_TRUE(s);
  EXPECT_EQ(s.value().length, 0x10000u);
  const std::uint8_t huge[] = {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(parse_head(huge, sizeof(huge)).value().length, UINT64_MAX);
  // No head, an unknown tag, a length of the wrong size, an empty segmented message.
  EXPECT_FALSE(parse_head(whole, 0));
  const std::uint8_t tag2[] = {2, 0};
  EXPECT_FALSE(parse_head(tag2, sizeof(tag2)));
  EXPECT_FALSE(parse_head(seg, 8));
  const std::uint8_t zero[] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_FALSE(parse_head(zero, sizeof(zero)));
  // Bare msgpack (what a 0.22.1 client sends) is not a head: 0x91 is no tag.
  EXPECT_FALSE(parse_head(whole + 1, 2));
}

// The receiving side, as the session drives it: heads, segments and the read limits between them.
TEST(Reassembly, AWholeMessageIsDispatchedAndTheNextReadIsAHeadAgain) {
  Reassembly r(1 << 20);
  EXPECT_FALSE(r.in_message());
  EXPECT_EQ(r.read_limit(), kMaxHead);
  const std::uint8_t whole[] = {kWholeTag, 0x91, 0x01};
  const auto step = r.on_head(whole, sizeof(whole));
  EXPECT_EQ(step.kind, Reassembly::HeadStep::Kind::kWhole);
  EXPECT_EQ(step.length, 2u);
  EXPECT_FALSE(r.in_message());
  EXPECT_EQ(r.read_limit(), kMaxHead);
}

TEST(Reassembly, SegmentsAreReadUpToWhatIsLeftThenTheMessageIsComplete) {
  using Segment = Reassembly::SegmentStep::Kind;
  const std::uint64_t length = 2 * kMaxFrame + 5;
  Reassembly r(4 * kMaxFrame);
  std::uint8_t head[9] = {kSegmentedTag};
  for (int i = 0; i < 8; ++i) head[1 + i] = static_cast<std::uint8_t>(length >> (8 * i));
  const auto step = r.on_head(head, sizeof(head));
  ASSERT_EQ(step.kind, Reassembly::HeadStep::Kind::kSegmented);
  EXPECT_EQ(step.length, length);
  EXPECT_TRUE(r.in_message());
  EXPECT_EQ(r.read_limit(), kMaxFrame);
  EXPECT_EQ(r.received(), 0u);
  EXPECT_EQ(r.on_segment(kMaxFrame).kind, Segment::kMore);
  EXPECT_EQ(r.received(), kMaxFrame);
  EXPECT_EQ(r.on_segment(kMaxFrame - 1).kind, Segment::kMore);
  EXPECT_EQ(r.read_limit(), 6u);
  EXPECT_EQ(r.on_segment(6).kind, Segment::kComplete);
  EXPECT_FALSE(r.in_message());
  EXPECT_EQ(r.read_limit(), kMaxHead);
}

TEST(Reassembly, RefusesAnEmptySegmentABadHeadAndALengthOverTheLimit) {
  using Head = Reassembly::HeadStep::Kind;
  Reassembly r(1000);
  const std::uint8_t over[9] = {kSegmentedTag, 0xe9, 0x03};  // 1001 bytes
  const auto big = r.on_head(over, sizeof(over));
  EXPECT_EQ(big.kind, Head::kTooBig);
  EXPECT_EQ(big.length, 1001u);
  EXPECT_FALSE(r.in_message());
  const std::uint8_t bad[] = {2, 0};
  const auto rejected = r.on_head(bad, sizeof(bad));
  EXPECT_EQ(rejected.kind, Head::kReject);
  EXPECT_EQ(rejected.reason, "a message head with tag 2 and 1 bytes");
  EXPECT_EQ(r.on_head(bad, 0).kind, Head::kReject);
  const std::uint8_t fits[9] = {kSegmentedTag, 0xe8, 0x03};  // 1000 bytes
  ASSERT_EQ(r.on_head(fits, sizeof(fits)).kind, Head::kSegmented);
  EXPECT_EQ(r.on_segment(10).kind, Reassembly::SegmentStep::Kind::kMore);
  const auto empty = r.on_segment(0);
  EXPECT_EQ(empty.kind, Reassembly::SegmentStep::Kind::kReject);
  EXPECT_EQ(empty.reason, "an empty frame in the middle of a message");
  EXPECT_FALSE(r.in_message());
  // What read_limit() keeps out is refused too, should it arrive.
  ASSERT_EQ(r.on_head(fits, sizeof(fits)).kind, Head::kSegmented);
  EXPECT_EQ(r.on_segment(1001).kind, Reassembly::SegmentStep::Kind::kReject);
  EXPECT_FALSE(r.in_message());
}

TEST(Reassembly, AWholeMessageOverTheLimitIsRefusedToo) {
  // --max-message-bytes may be below the 64 KiB a whole message can hold.
  Reassembly r(1000);
  std::vector<std::uint8_t> whole(1 + 1001, 0x90);
  whole[0] = kWholeTag;
  const auto over = r.on_head(whole.data(), whole.size());
  EXPECT_EQ(over.kind, Reassembly::HeadStep::Kind::kTooBig);
  EXPECT_EQ(over.length, 1001u);
  EXPECT_EQ(r.on_head(whole.data(), whole.size() - 1).kind, Reassembly::HeadStep::Kind::kWhole);
}

}  // namespace
}  // namespace tb::bridge::framing
