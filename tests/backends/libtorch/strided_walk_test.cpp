// The strided walk (lower/strided_walk.hpp) visits every position once, in row-major order, with
// the right offset in each tensor, however it merges dims.
#include "lower/strided_walk.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tb::backend::libtorch {
namespace {

using strided_walk::Dims;

// The offsets a plain odometer over `sizes` gives for `strides` (no merging).
std::vector<std::int64_t> reference(const Dims& sizes, const Dims& strides) {
  std::vector<std::int64_t> out;
  std::int64_t n = 1;
  for (const auto s : sizes) n *= s;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t rest = i, offset = 0;
    for (auto d = static_cast<std::int64_t>(sizes.size()) - 1; d >= 0; --d) {
      offset += rest % sizes[d] * strides[d];
      rest /= sizes[d];
    }
    out.push_back(offset);
  }
  return out;
}

TEST(StridedWalk, MergesWhatItCanAndVisitsInRowMajorOrder) {
  // A contiguous block with a dim of 1 becomes one run; its transpose cannot merge.
  const Dims block{3, 3, 1};
  const auto contiguous = strided_walk::walk_of<1>({2, 1, 3}, {&block});
  EXPECT_EQ(contiguous.sizes, (Dims{6}));
  EXPECT_EQ(contiguous.strides[0], (Dims{1}));
  const Dims transposed{1, 2};
  EXPECT_EQ(strided_walk::walk_of<1>({2, 3}, {&transposed}).sizes, (Dims{2, 3}));
  // Two tensors merge only where both step through the dims as one.
  const Dims a{3, 1}, b{1, 2};
  EXPECT_EQ(strided_walk::walk_of<2>({2, 3}, {&a, &b}).sizes, (Dims{2, 3}));

  for (const auto& [sizes, strides_a, strides_b] :
       std::vector<std::tuple<Dims, Dims, Dims>>{{{4, 5}, {5, 1}, {1, 4}},
                                                 {{2, 1, 3, 2}, {6, 6, 2, 1}, {0, 0, 1, 0}},
                                                 {{3, 4}, {0, 1}, {4, 1}},
                                                 {{}, {}, {}},
                                                 {{1, 1}, {7, 9}, {1, 1}}}) {
    std::vector<std::int64_t> got_a, got_b;
    strided_walk::for_each_offsets<2>(sizes, {&strides_a, &strides_b},
                                      [&](const std::array<std::int64_t, 2>& o) {
                                        got_a.push_back(o[0]);
                                        got_b.push_back(o[1]);
                                      });
    EXPECT_EQ(got_a, reference(sizes, strides_a));
    EXPECT_EQ(got_b, reference(sizes, strides_b));
  }
}

}  // namespace
}  // namespace tb::backend::libtorch
