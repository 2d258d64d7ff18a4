// Burn dtypes on ATen: which ScalarType stores each, and exact conversion at the edges.
//
// LibTorch 1.13 has no uint16/32/64: U16 lives in int32, U32 in int64 (both masked back into range
// after every op, so wrapping arithmetic and comparisons stay exact), U64 in int64 by bit pattern.
// Flex32 is f32. Every Bool store is kBool. Quantized tensors are handled in quant.hpp.
#pragma once

#include <string>

#include <ATen/ATen.h>

#include "torchbridge/ir/types.hpp"
#include "torchbridge/result.hpp"

namespace tb::backend::libtorch {

at::ScalarType storage_type(const ir::DType& dtype);

// Casts a computed value to the storage of `declared` (and brings U16/U32 back into range).
at::Tensor to_storage(const at::Tensor& value, const ir::DType& declared);

// A tensor on `device` from Burn's TensorData (row-major bytes of data.dtype).
// Whether an upload's bytes may become the tensor's storage instead of being copied: an exclusive
// owner (a received message) that they fill but for a small slack, aligned for their elements,
// and large enough for the copy to matter.
bool can_borrow(const ir::Bytes& bytes, std::size_t element_size);
Result<at::Tensor> tensor_from_data(const ir::TensorData& data, const at::Device& device);
// Burn's TensorData of `tensor` in `dtype` (bytes exactly numel * size(dtype)).
Result<ir::TensorData> data_from_tensor(const at::Tensor& tensor, const ir::DType& dtype);

std::string shape_string(at::IntArrayRef sizes);
bool same_shape(at::IntArrayRef sizes, const ir::Dims& dims);

}  // namespace tb::backend::libtorch
