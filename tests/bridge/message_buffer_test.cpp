// MessageBuffer: an upload's payload lands 16-byte aligned, so the upload can become a tensor over
// the message's memory instead of a copy; the message's bytes are unchanged.
#include "net/message_buffer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

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

// Receives `m` as the host does: a first chunk, alignment, then the rest in large reads.
ir::Bytes receive(const std::vector<std::uint8_t>& m) {
  MessageBuffer buffer(std::size_t{1} << 30);
  std::size_t at = 0;
  bool first = true;
  while (at < m.size()) {
    const std::size_t chunk = std::min(m.size() - at, first ? kFirstReadChunk : kReadChunk);
    EXPECT_TRUE(buffer.reserve_next(chunk));
    auto room = buffer.prepare(chunk);
    std::memcpy(room.data(), m.data() + at, chunk);
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
    EXPECT_LE(block->size, bytes.size() + 16) << "the block is trimmed to the message";
  }
}

TEST(MessageBuffer, SmallMessagesAndSmallBinariesStayWhereTheyAre) {
  const auto small = upload_message(44, 1000);
  const auto bytes = receive(small);
  EXPECT_EQ(std::memcmp(bytes.data(), small.data(), small.size()), 0);
  ASSERT_NE(ir::exclusive_block_of(bytes), nullptr);
  EXPECT_EQ(ir::exclusive_block_of(bytes)->size, small.size());
}

}  // namespace
}  // namespace tb::net
