// The session's single-writer queue (transport/session_writer.hpp), without a socket: answers go
// out whole and in order, a tagged answer piece by piece, and an answer's bytes are given back once
// it is written or dropped, never while a write reads them.
#include "transport/session_writer.hpp"

#include <gtest/gtest.h>

#include "transport/framing.hpp"

namespace tb::bridge {
namespace {

Outgoing answer(std::size_t size, const std::shared_ptr<MemoryAccount>& account,
                std::uint8_t fill = 0) {
  Outgoing out;
  out.frame = OutFrame::of_bytes(std::vector<std::uint8_t>(size, fill));
  out.charge = MemoryCharge(account, size);
  return out;
}

std::size_t size_of(const SessionWriter::Buffers& buffers) {
  std::size_t n = 0;
  for (const auto& b : buffers) n += b.size();
  return n;
}

TEST(SessionWriter, AnswersAreWrittenOneAtATimeInOrder) {
  auto account = std::make_shared<MemoryAccount>();
  SessionWriter writer;
  EXPECT_TRUE(writer.idle());
  EXPECT_TRUE(writer.push(answer(10, account, 1)));
  const auto& first = writer.next();
  EXPECT_TRUE(writer.writing());
  EXPECT_FALSE(writer.push(answer(20, account, 2)));  // a write is in flight: it starts none
  ASSERT_EQ(size_of(first), 10u);
  EXPECT_EQ(static_cast<const std::uint8_t*>(first[0].data())[0], 1);
  EXPECT_EQ(account->bytes(), 30u);

  EXPECT_EQ(writer.written(false), SessionWriter::After::kWrite);
  EXPECT_EQ(account->bytes(), 20u);  // the first answer's bytes are given back
  const auto& second = writer.next();
  ASSERT_EQ(size_of(second), 20u);
  EXPECT_EQ(static_cast<const std::uint8_t*>(second[0].data())[0], 2);
  EXPECT_EQ(writer.written(false), SessionWriter::After::kIdle);
  EXPECT_TRUE(writer.idle());
  EXPECT_EQ(account->bytes(), 0u);
  EXPECT_TRUE(writer.push(answer(5, account)));  // idle again: the next push starts a write
}

TEST(SessionWriter, ATaggedAnswerGoesOutAsItsHeadAndSegments) {
  auto account = std::make_shared<MemoryAccount>();
  SessionWriter writer;
  writer.set_tagged(true);
  const std::size_t size = 2 * framing::kMaxFrame + 5;
  ASSERT_TRUE(writer.push(answer(size, account)));
  std::array<std::uint8_t, 9> head{};
  const auto expected =
      framing::tagged_messages(*OutFrame::of_bytes(std::vector<std::uint8_t>(size)), head);
  ASSERT_GT(expected.size(), 2u);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(size_of(writer.next()), size_of(expected[i])) << "piece " << i;
    EXPECT_EQ(account->bytes(), size) << "the answer is held until its last piece is written";
    EXPECT_EQ(writer.written(false),
              i + 1 < expected.size() ? SessionWriter::After::kWrite : SessionWriter::After::kIdle);
  }
  EXPECT_EQ(account->bytes(), 0u);
}

TEST(SessionWriter, AFailedWriteDropsEveryAnswer) {
  auto account = std::make_shared<MemoryAccount>();
  SessionWriter writer;
  writer.push(answer(10, account));
  writer.next();
  writer.push(answer(20, account));
  EXPECT_EQ(writer.written(true), SessionWriter::After::kFailed);
  EXPECT_TRUE(writer.idle());
  EXPECT_EQ(account->bytes(), 0u);
}

TEST(SessionWriter, DroppingUnsentAnswersKeepsTheOneBeingWritten) {
  auto account = std::make_shared<MemoryAccount>();
  SessionWriter writer;
  writer.push(answer(10, account));
  writer.next();
  writer.push(answer(20, account));
  writer.push(answer(40, account));
  writer.drop_unsent();
  EXPECT_EQ(account->bytes(), 10u);  // the write still reads it
  EXPECT_EQ(writer.written(false), SessionWriter::After::kIdle);
  EXPECT_EQ(account->bytes(), 0u);

  writer.push(answer(30, account));
  writer.drop_unsent();  // nothing in flight: everything goes
  EXPECT_TRUE(writer.idle());
  EXPECT_EQ(account->bytes(), 0u);
}

}  // namespace
}  // namespace tb::bridge
