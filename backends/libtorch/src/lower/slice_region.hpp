// The region of a tensor Burn's slice ranges select, as one strided view: read by the slice and
// slice-assignment lowerings (lower_base.cpp) and by the executor's held zero slices
// (exec/zero_slice_add.hpp), which must select exactly what the lowering would.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "torchbridge/ir/types.hpp"
#include "torchbridge/result.hpp"

namespace tb::backend::libtorch {

// The region selected by Burn's `ranges`, ascending: sizes, strides and storage offset in `t`'s
// storage, and the dims whose traversal is reversed (negative step).
struct SliceRegion {
  std::vector<std::int64_t> sizes, strides;
  std::int64_t offset = 0;
  std::vector<std::int64_t> flips;
};

// Per leading dim, the range [start', end') clamped to the dim; a negative step only reverses the
// traversal of that same range (end'-1, end'-1-|step|, ...), unlike Python. An error for more
// ranges than dims or a step of 0.
Result<SliceRegion> slice_region(const at::Tensor& t, const std::vector<ir::Slice>& ranges);

// The region as a strided view of `t`, in Burn's order (flipped where the step is negative).
at::Tensor slice_of(const at::Tensor& t, const SliceRegion& r);

}  // namespace tb::backend::libtorch
