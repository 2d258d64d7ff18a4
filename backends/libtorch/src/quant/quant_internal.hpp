// Private to the quant/ files: the scheme and number-format facts (defined in quant_scheme.cpp)
// and the few tensor helpers (quant.cpp) that the tensor-level code in quant.cpp and
// quant_bytes.cpp shares. Not part of quant.hpp's interface.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "quant/quant.hpp"
#include "torchbridge/ir/quant_value.hpp"

namespace tb::backend::libtorch::quant::detail {

// Value kinds (bits per value, minifloat or integer, QuantValue::range) and QuantStore::size_bits
// are ir's, shared with DType::element_size and the client.
using ir::is_minifloat;
using ir::quant_store_bits;
using ir::quant_value_bits;
using ir::quant_value_range;

// Scale levels: the innermost level's dtype, and the per-tensor dtype of a two-level scheme.
ir::ScaleDtype scale_dtype(const ir::QuantScheme& s);
std::optional<ir::ScaleDtype> global_dtype(const ir::QuantScheme& s);

// Scale dtypes: bytes per scale, largest finite value, the scale burn-flex keeps, and the codec.
std::size_t scale_size(ir::ScaleDtype d);
float max_representable(ir::ScaleDtype d);
float validated(float scale, ir::ScaleDtype d);
void encode_scale(float s, ir::ScaleDtype d, std::vector<std::uint8_t>& out);
float decode_scale(const std::uint8_t* p, ir::ScaleDtype d);

// Block shapes: BlockSize::to_dim_vec, params_shape, and the bytes of the scales region.
std::vector<std::int64_t> block_dims(const ir::BlockSize& b, std::size_t rank);
std::vector<std::int64_t> grid_of(const std::vector<std::int64_t>& shape, const ir::QuantScheme& s);
std::size_t params_bytes(const ir::QuantScheme& s, std::int64_t num_params);

// Every code of a minifloat kind decoded (E2M1 codes read from the low nibble).
const std::array<float, 256>& minifloat_table(ir::QuantValue kind);

// A QTensor's codes as plain integers, whether stored as a torch quantized tensor or not.
at::Tensor plain_values(const QTensor& q);
// int8 values wrapped as torch qint8 when the scheme and its scale allow it (torch_qint8).
at::Tensor as_torch(at::Tensor values, const ir::QuantScheme& s, const at::Tensor& scales);
// A tensor's values as f32 on the host.
std::vector<float> floats_of(const at::Tensor& t);
// The element count of a shape, and a shape for messages.
std::int64_t product(const std::vector<std::int64_t>& v);
std::string shape_str(const std::vector<std::int64_t>& v);

}  // namespace tb::backend::libtorch::quant::detail
