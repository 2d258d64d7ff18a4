// The one-pass read of a TensorIr's usual form (codec_tensor.cpp), declared for its tests.
#pragma once

#include <cstddef>
#include <cstdint>

#include "torchbridge/ir/types.hpp"

namespace tb::ir {

// [[id], [[d0, d1, ...]], "Status", "DType"]: every integer a fixint or a uint8..64, at most 15
// dims, a dtype without payload. True with the bytes it used, or false when the bytes are in any
// other form; it may have written into `v` then, and the checked path reads every field again.
bool scan_tensor(const std::uint8_t* p, const std::uint8_t* end, TensorIr& v, std::size_t& used);

}  // namespace tb::ir
