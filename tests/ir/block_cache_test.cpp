// BlockCache: freed message blocks kept warm for the next message of about their size, within a
// bound in bytes and in blocks, oldest first out (never a larger block for a smaller one),
// expiring when idle.
#include "torchbridge/ir/block_cache.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "torchbridge/ir/exclusive_block.hpp"

namespace tb::ir {
namespace {

constexpr std::size_t kKiB = 1024;

std::uint8_t* block(std::size_t n) {
  return static_cast<std::uint8_t*>(std::malloc(n));
}

TEST(BlockCache, TakesTheSmallestKeptBlockWithinTheRange) {
  BlockCache cache(16 << 20);
  auto* a = block(512 * kKiB);
  auto* b = block(256 * kKiB);
  auto* c = block(300 * kKiB);
  cache.give(a, 512 * kKiB);
  cache.give(b, 256 * kKiB);
  cache.give(c, 300 * kKiB);
  EXPECT_EQ(cache.bytes(), 1068 * kKiB);

  const auto got = cache.take(250 * kKiB, 400 * kKiB);
  EXPECT_EQ(got.data, b);
  EXPECT_EQ(got.size, 256 * kKiB);
  // Nothing fits [600 KiB, 700 KiB]: the 512 KiB block is too small, none is larger.
  EXPECT_EQ(cache.take(600 * kKiB, 700 * kKiB).data, nullptr);
  // [100 KiB, 200 KiB]: the 300 KiB block is too large for it.
  EXPECT_EQ(cache.take(100 * kKiB, 200 * kKiB).data, nullptr);
  EXPECT_EQ(cache.bytes(), 812 * kKiB);
  const auto stats = cache.stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.kept, 3u);
  std::free(got.data);
}

TEST(BlockCache, SmallBlocksAndBlocksOverTheLimitAreFreedNotKept) {
  BlockCache cache(1 << 20);
  cache.give(block(BlockCache::kMinBlock - 1), BlockCache::kMinBlock - 1);
  cache.give(block((1 << 20) + 1), (1 << 20) + 1);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.stats().kept, 0u);
  cache.give(nullptr, 1 << 20);  // nothing to keep
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(BlockCache, TheOldestGoFirstToStayWithinTheLimit) {
  BlockCache cache(1 << 20);
  std::vector<std::uint8_t*> blocks;
  for (int i = 0; i < 5; ++i) {
    blocks.push_back(block(256 * kKiB));
    cache.give(blocks.back(), 256 * kKiB);
  }
  // Four fit in 1 MiB: the first was freed to make room for the fifth.
  EXPECT_EQ(cache.bytes(), 1u << 20);
  std::vector<std::uint8_t*> taken;
  for (auto got = cache.take(0, 1 << 20); got.data; got = cache.take(0, 1 << 20)) {
    taken.push_back(got.data);
  }
  EXPECT_EQ(taken, std::vector<std::uint8_t*>(blocks.begin() + 1, blocks.end()));
  for (auto* p : taken) std::free(p);
}

TEST(BlockCache, ASmallerBlockNeverPushesOutALargerOne) {
  BlockCache cache(1 << 20);
  auto* large = block(768 * kKiB);
  cache.give(large, 768 * kKiB);
  // Room for 512 KiB only by freeing the 768 KiB block: the 512 KiB one is freed instead.
  cache.give(block(512 * kKiB), 512 * kKiB);
  EXPECT_EQ(cache.bytes(), 768 * kKiB);
  EXPECT_EQ(cache.stats().kept, 1u);
  // A block as large or larger makes room as usual.
  cache.give(block(1 << 20), 1 << 20);
  EXPECT_EQ(cache.bytes(), 1u << 20);
  EXPECT_EQ(cache.take(768 * kKiB, 768 * kKiB).data, nullptr) << "the older one went";
}

TEST(BlockCache, KeepsAtMostMaxBlocks) {
  BlockCache cache(std::size_t{1} << 30);
  for (std::size_t i = 0; i < BlockCache::kMaxBlocks + 3; ++i) {
    cache.give(block(BlockCache::kMinBlock), BlockCache::kMinBlock);
  }
  EXPECT_EQ(cache.bytes(), BlockCache::kMaxBlocks * BlockCache::kMinBlock);
}

TEST(BlockCache, IdleBlocksExpireAndALowerLimitOrATrimFreesThem) {
  BlockCache cache(4 << 20);
  cache.give(block(1 << 20), 1 << 20);
  cache.give(block(1 << 20), 1 << 20);
  const auto now = std::chrono::steady_clock::now();
  cache.expire(now);
  EXPECT_EQ(cache.bytes(), 2u << 20) << "not idle yet";
  cache.expire(now + BlockCache::kMaxIdle + std::chrono::seconds(1));
  EXPECT_EQ(cache.bytes(), 0u);

  cache.give(block(1 << 20), 1 << 20);
  cache.give(block(1 << 20), 1 << 20);
  cache.set_limit(1 << 20);
  EXPECT_EQ(cache.bytes(), 1u << 20);
  EXPECT_EQ(cache.limit(), 1u << 20);
  cache.trim();
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(BlockCache, AnExclusiveBlockGoesBackToItsCacheWhenItsBytesGo) {
  const auto owned = std::make_shared<BlockCache>(16 << 20);
  BlockCache& cache = *owned;
  std::vector<std::uint8_t> values(300 * kKiB, 7);
  const std::uint8_t* first = nullptr;
  {
    const Bytes bytes = exclusive_copy_of(values.data(), values.size(), owned);
    ASSERT_NE(exclusive_block_of(bytes), nullptr);
    EXPECT_EQ(bytes, Bytes::copy_of(values.data(), values.size()));
    first = bytes.data();
    EXPECT_EQ(cache.bytes(), 0u);
  }
  EXPECT_EQ(cache.bytes(), values.size());
  // The next copy of that size is made into the same, warm block.
  values.assign(values.size(), 9);
  const Bytes again = exclusive_copy_of(values.data(), values.size(), owned);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.data()[0], 9);
  EXPECT_EQ(cache.bytes(), 0u);
  // Small copies are left to malloc.
  const Bytes small = exclusive_copy_of(values.data(), 100, owned);
  EXPECT_EQ(exclusive_block_of(small), nullptr);
}

// A block outlives the owner of its cache (a tensor over an upload may outlive its host): the
// cache stays alive while a block refers to it, and the block still goes back to it.
TEST(BlockCache, ABlockKeepsItsCacheAliveAfterItsOwnerLetsGo) {
  auto owned = std::make_shared<BlockCache>(16 << 20);
  const std::weak_ptr<BlockCache> watch = owned;
  std::vector<std::uint8_t> values(300 * kKiB, 7);
  std::optional<Bytes> bytes = exclusive_copy_of(values.data(), values.size(), owned);
  owned.reset();
  ASSERT_FALSE(watch.expired()) << "the block's cache went before the block";
  EXPECT_EQ(watch.lock()->bytes(), 0u);
  bytes.reset();
  EXPECT_TRUE(watch.expired()) << "the last block gone, the cache goes too";
}

// Without a cache the block is plain malloc'd memory, freed with its bytes.
TEST(BlockCache, AnExclusiveCopyWithoutACacheIsStillExclusive) {
  std::vector<std::uint8_t> values(300 * kKiB, 7);
  const Bytes bytes = exclusive_copy_of(values.data(), values.size(), nullptr);
  ASSERT_NE(exclusive_block_of(bytes), nullptr);
  EXPECT_EQ(exclusive_block_of(bytes)->cache, nullptr);
  EXPECT_EQ(bytes, Bytes::copy_of(values.data(), values.size()));
}

}  // namespace
}  // namespace tb::ir
