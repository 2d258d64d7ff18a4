// MessageBuffer: an upload's payload lands 16-byte aligned, so the upload can become a tensor over
// the message's memory instead of a copy; the message's bytes are unchanged; a large message of a
// size seen before is received into the warm block the last one left (ir::BlockCache).
#include "net/message_buffer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "torchbridge/ir/block_cache.hpp"
#include "torchbridge/ir/exclusive_block.hpp"

namespace tb::net {
namespace {

// A message as msgpack writes an upload: `header` bytes, a bin32 marker and length, the payload,
// a short trailer.
std::vector<std::uint8_t> upload_message(std::size_t header, std::uint32_t payload) {
  std::vector<std::uint8_t> m(header, 0x90);
  m.push_back(0xc6);
  for (int shift = 24; shift >= 0; shift -= 8) m.push_back((payload >> shift) & 0xff);
  for (std::uint32_t i = 0; i < payload; ++i) m.push_back(static_cast<std::uint8_t>(i * 7));
  m.insert(m.end(), {0x91, 0x02, 0xa3});
  return m;
}

// Receives `m` as async_read_chunked does: a first chunk, alignment, then the rest in large reads,
// into the room the block has before growing it. `growths` counts the reads that grew the block.
// The blocks the tests' buffers take from and give back to.
std::shared_ptr<ir::BlockCache> test_blocks() {
  static const auto blocks = std::make_shared<ir::BlockCache>(64 << 20);
  return blocks;
}

ir::Bytes receive(const std::vector<std::uint8_t>& m, int* growths = nullptr,
                  std::size_t max = std::size_t{1} << 30) {
  MessageBuffer buffer(max, test_blocks());
  std::size_t at = 0;
  bool first = true;
  while (at < m.size()) {
    const std::size_t ahead = next_read_size(buffer);
    const std::size_t chunk = std::min(m.size() - at, ahead);
    const std::size_t capacity = buffer.capacity();
    EXPECT_TRUE(buffer.reserve_next(ahead));
    if (growths && !first && buffer.capacity() != capacity) ++*growths;
    auto into = buffer.prepare(chunk);
    std::memcpy(into.data(), m.data() + at, chunk);
    buffer.commit(chunk);
    at += chunk;
    if (first) buffer.align_large_payload();
    first = false;
  }
  return buffer.release();
}

TEST(MessageBuffer, AnUploadsPayloadLandsAlignedAndTheMessageIsUnchanged) {
  for (std::size_t header : {44u, 45u, 98u, 301u}) {
    const auto m = upload_message(header, 3 * 1024 * 1024 + 4);
    const auto bytes = receive(m);
    ASSERT_EQ(bytes.size(), m.size());
    EXPECT_EQ(std::memcmp(bytes.data(), m.data(), m.size()), 0) << header;
    const auto payload = reinterpret_cast<std::uintptr_t>(bytes.data() + header + 5);
    EXPECT_EQ(payload % 16, 0u) << "header of " << header << " bytes";
    const auto* block = ir::exclusive_block_of(bytes);
    ASSERT_NE(block, nullptr);
    EXPECT_GE(block->size, bytes.size());
    EXPECT_LE(block->size, bytes.size() + 16 + ir::BlockCache::kTakeSlack)
        << "the block is trimmed to about the message";
  }
}

TEST(MessageBuffer, SmallMessagesAndSmallBinariesStayWhereTheyAre) {
  const auto small = upload_message(44, 1000);
  const auto bytes = receive(small);
  EXPECT_EQ(std::memcmp(bytes.data(), small.data(), small.size()), 0);
  ASSERT_NE(ir::exclusive_block_of(bytes), nullptr);
  EXPECT_LE(ir::exclusive_block_of(bytes)->size, small.size() + ir::BlockCache::kTakeSlack);
}

// The marker is searched for in a message's first 512 bytes: a small binary's marker before it is
// passed over, a large one's next to the end of the scan is found, one beyond it is not looked for
// (and the message is unchanged either way).
TEST(MessageBuffer, TheFirstLargeBinaryWithinTheScanIsTheOneAligned) {
  for (std::size_t header : {40u, 301u, 506u, 508u}) {
    auto m = upload_message(header, 3 * 1024 * 1024 + 4);
    const std::uint8_t small_bin32[] = {0xc6, 0x00, 0x00, 0x03, 0xe8};  // 1,000 bytes: not large
    std::memcpy(m.data() + 10, small_bin32, sizeof small_bin32);
    const auto bytes = receive(m);
    ASSERT_EQ(bytes.size(), m.size());
    EXPECT_EQ(std::memcmp(bytes.data(), m.data(), m.size()), 0) << header;
    const auto payload = reinterpret_cast<std::uintptr_t>(bytes.data() + header + 5);
    if (header + 5 <= 512) {
      EXPECT_EQ(payload % 16, 0u) << "header of " << header << " bytes";
    }
  }
}

// The tests' cache, emptied.
class WarmBlocks : public ::testing::Test {
 protected:
  void SetUp() override { cache.trim(); }
  ir::BlockCache& cache = *test_blocks();
};

TEST_F(WarmBlocks, ALargeMessageOfASizeSeenBeforeIsReceivedIntoTheWarmBlockItLeft) {
  const auto m = upload_message(60, 3 * 1024 * 1024);
  const std::uint8_t* block = nullptr;
  {
    int growths = 0;
    const auto bytes = receive(m, &growths);
    EXPECT_GT(growths, 0) << "the first one grows its block as its bytes arrive";
    block = bytes.owner() ? static_cast<const std::uint8_t*>(bytes.owner().get()) : nullptr;
  }
  ASSERT_GT(cache.bytes(), 0u) << "the released block is kept";
  int growths = 0;
  // Unbounded, as the C++ client's buffer is by default.
  const auto again = receive(m, &growths, std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(std::memcmp(again.data(), m.data(), m.size()), 0);
  EXPECT_EQ(again.owner().get(), block) << "the same block, warm";
  EXPECT_EQ(growths, 0) << "read into the room it has, never grown";
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(again.data() + 60 + 5) % 16, 0u);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST_F(WarmBlocks, ADeclaredLengthNeverAllocatesAndOverTheLimitTakesNoBlock) {
  // A header declaring 1 GiB, and only the header: nothing is reserved for it.
  MessageBuffer buffer(std::size_t{2} << 30, test_blocks());
  auto head = upload_message(40, 0);
  head[41] = 0x40;  // bin32 length 0x40000000
  ASSERT_TRUE(buffer.reserve_next(kFirstReadChunk));
  std::memcpy(buffer.prepare(head.size()).data(), head.data(), head.size());
  buffer.commit(head.size());
  buffer.align_large_payload();
  EXPECT_LE(buffer.capacity(), kFirstReadChunk + 64);

  // A kept block is not taken for a message over the buffer's limit.
  const auto m = upload_message(60, 1024 * 1024);
  { const auto kept = receive(m); }
  const auto before = cache.bytes();
  ASSERT_GT(before, 0u);
  MessageBuffer small(512 * 1024, test_blocks());
  ASSERT_TRUE(small.reserve_next(kFirstReadChunk));
  std::memcpy(small.prepare(kFirstReadChunk).data(), m.data(), kFirstReadChunk);
  small.commit(kFirstReadChunk);
  small.align_large_payload();
  EXPECT_EQ(cache.bytes(), before);
  EXPECT_LT(small.capacity(), std::size_t{1} << 20) << "nothing for the declared length";
}

}  // namespace
}  // namespace tb::net
