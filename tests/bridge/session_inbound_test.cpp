#include "transport/session_inbound.hpp"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace tb::test {
namespace {

using bridge::Inbound;
using Kind = Inbound::Step::Kind;

// What a websocket read does: bytes into the buffer the inbound readied, charged as they arrive.
void arrive(Inbound& in, const std::vector<std::uint8_t>& bytes,
            const std::shared_ptr<bridge::MemoryAccount>& account) {
  auto room = in.buffer().prepare(bytes.size());
  std::memcpy(room.data(), bytes.data(), bytes.size());
  in.buffer().commit(bytes.size());
  in.charge(account);
}

std::vector<std::uint8_t> segmented_head(std::uint64_t length) {
  std::vector<std::uint8_t> head{bridge::framing::kSegmentedTag};
  for (int i = 0; i < 8; ++i) head.push_back(static_cast<std::uint8_t>(length >> (8 * i)));
  return head;
}

TEST(Inbound, AWholeMessageHoldsItsChargeUntilItsOwnerTakesOver) {
  auto account = std::make_shared<bridge::MemoryAccount>();
  Inbound in(1 << 20, nullptr);
  EXPECT_EQ(in.prepare(false, 300), 300u);
  arrive(in, {1, 2, 3, 4}, account);
  EXPECT_EQ(account->bytes(), 4u);
  const auto step = in.on_read(false);
  ASSERT_EQ(step.kind, Kind::kMessage);
  EXPECT_EQ(step.arrived, 4u);
  EXPECT_EQ(std::vector<std::uint8_t>(step.message.data(), step.message.data() + 4),
            (std::vector<std::uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(account->bytes(), 4u) << "no window where the bytes count nowhere";
  in.release_charge();
  EXPECT_EQ(account->bytes(), 0u);
}

TEST(Inbound, ATaggedWholeMessageIsWhatFollowsItsTag) {
  auto account = std::make_shared<bridge::MemoryAccount>();
  Inbound in(1 << 20, nullptr);
  EXPECT_EQ(in.prepare(true, 300), bridge::framing::kMaxHead) << "a head, not the whole limit";
  arrive(in, {bridge::framing::kWholeTag, 7, 8}, account);
  const auto step = in.on_read(true);
  ASSERT_EQ(step.kind, Kind::kMessage);
  EXPECT_EQ(step.arrived, 3u);
  ASSERT_EQ(step.message.size(), 2u);
  EXPECT_EQ(step.message.data()[0], 7);
}

TEST(Inbound, SegmentsGoIntoOneBufferUntilTheMessageIsComplete) {
  auto account = std::make_shared<bridge::MemoryAccount>();
  Inbound in(1 << 20, nullptr);
  in.prepare(true, 0);
  arrive(in, segmented_head(5), account);
  ASSERT_EQ(in.on_read(true).kind, Kind::kMore);
  EXPECT_EQ(account->bytes(), 0u) << "the head's charge ends with the head";
  EXPECT_EQ(in.prepare(true, 0), 5u) << "a segment holds at most what is left";
  arrive(in, {1, 2, 3}, account);
  auto step = in.on_read(true);
  ASSERT_EQ(step.kind, Kind::kMore);
  EXPECT_EQ(step.arrived, 3u);
  EXPECT_EQ(in.prepare(true, 0), 2u);
  arrive(in, {4, 5}, account);
  EXPECT_EQ(account->bytes(), 5u) << "the whole message so far";
  step = in.on_read(true);
  ASSERT_EQ(step.kind, Kind::kMessage);
  EXPECT_EQ(step.arrived, 2u);
  ASSERT_EQ(step.message.size(), 5u);
  EXPECT_EQ(step.message.data()[4], 5);
  in.release_charge();
  EXPECT_EQ(account->bytes(), 0u);
  EXPECT_EQ(in.prepare(true, 0), bridge::framing::kMaxHead) << "the next read is a head again";
}

TEST(Inbound, ABadHeadIsRejectedAndForgotten) {
  auto account = std::make_shared<bridge::MemoryAccount>();
  Inbound in(1 << 20, nullptr);
  in.prepare(true, 0);
  arrive(in, {9, 9}, account);
  const auto step = in.on_read(true);
  EXPECT_EQ(step.kind, Kind::kReject);
  EXPECT_FALSE(step.reason.empty());
  EXPECT_EQ(account->bytes(), 0u);
}

TEST(Inbound, AnAnnouncedLengthOverTheLimitIsTooBig) {
  auto account = std::make_shared<bridge::MemoryAccount>();
  Inbound in(100, nullptr);
  in.prepare(true, 0);
  arrive(in, segmented_head(101), account);
  const auto step = in.on_read(true);
  EXPECT_EQ(step.kind, Kind::kTooBig);
  EXPECT_EQ(step.length, 101u);
  EXPECT_EQ(in.max_message_bytes(), 100u);
}

TEST(Inbound, DropEndsTheChargeAndTheReassembly) {
  auto account = std::make_shared<bridge::MemoryAccount>();
  Inbound in(1 << 20, nullptr);
  in.prepare(true, 0);
  arrive(in, segmented_head(10), account);
  ASSERT_EQ(in.on_read(true).kind, Kind::kMore);
  in.prepare(true, 0);
  arrive(in, {1, 2, 3}, account);
  EXPECT_EQ(account->bytes(), 3u);
  in.drop();
  EXPECT_EQ(account->bytes(), 0u);
  EXPECT_EQ(in.prepare(true, 0), bridge::framing::kMaxHead);
}

// A host over its memory limit refuses a message only once it has grown past its first read: a
// sync or a small read must reach a session whose op is being failed for its memory.
TEST(Inbound, OnlyAMessagePastItsFirstReadIsRefusedForMemory) {
  auto account = std::make_shared<bridge::MemoryAccount>();
  Inbound in(std::uint64_t{1} << 30, nullptr);
  in.prepare(false, std::size_t{1} << 30);
  arrive(in, std::vector<std::uint8_t>(100, 1), account);
  EXPECT_FALSE(in.past_first_read());
  arrive(in, std::vector<std::uint8_t>(tb::net::kFirstReadChunk - 100, 1), account);
  EXPECT_FALSE(in.past_first_read()) << "a whole first read";
  arrive(in, {1}, account);
  EXPECT_TRUE(in.past_first_read());
  EXPECT_EQ(account->bytes(), tb::net::kFirstReadChunk + 1) << "charged all along";
}

}  // namespace
}  // namespace tb::test
