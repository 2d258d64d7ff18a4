// Burn's quantized tensors (DType::QFloat(QuantScheme)) on ATen.
//
// A QTensor holds the logical values (one element per tensor element, unpacked) and the scales:
// - per-tensor symmetric 8-bit schemes (Q8F/Q8S, no block level) are torch qint8 tensors (scale =
//   the scheme's f32 scale, zero point 0), dequantized by torch itself;
// - every other scheme keeps int8 values (integer kinds) or uint8 codes (E4M3/E5M2/E2M1) plus an
//   f32 scale grid, and uses plain ATen ops.
// Arithmetic follows burn-flex's formulas (burn-flex src/ops/qtensor.rs): q = clamp(round(x *
// (1 / s))) with Rust's round (half away from zero), x = s * q, s = global * block scale. The
// minifloat kinds are encoded as burn-cubecl/cubek do (round to nearest even, saturating), since
// burn-flex stores them as integers, which no other Burn backend reads back.
//
// Bytes are Burn's (burn-std src/tensor/quantization.rs, burn-cubecl src/ops/qtensor.rs): values,
// then block scales in their scale dtype, then (two-level schemes) the per-tensor scale, no padding
// between them. A packed store packs along its packing axis, stored innermost, each line padded to
// whole words. Two other layouts Burn itself produces are read and written back as they came.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "torchbridge/ir/protocol.hpp"
#include "torchbridge/result.hpp"

namespace tb::backend::libtorch::quant {

// How the values region of a QFloat TensorData is laid out.
enum class Packing : std::uint8_t {
  // quantized_data_len / burn-cubecl: packing axis swapped innermost, each line whole words.
  kPerLine,
  // Words over the flattened tensor, only the last one padded (burn-std's unpack_q_to_i8s).
  kFlat,
  // One byte per value, unpacked, whatever the store says (TensorData::quantized).
  kBytes,
};

struct QTensor {
  ir::QuantScheme scheme;
  // Logical shape. kQInt8 (torch_qint8(scheme)), kChar (integer kinds) or kByte (minifloat codes).
  at::Tensor values;
  // f32, the block grid (shape = Burn's params_shape: [1] for a per-tensor level), on the grid of
  // the scale dtype; same device as values.
  at::Tensor scales;
  // The per-tensor scale of a two-level scheme.
  std::optional<float> global;
  // The scales region exactly as Burn lays it out (block scales, then global).
  std::shared_ptr<const std::vector<std::uint8_t>> params;
  Packing packing = Packing::kPerLine;

  std::vector<std::int64_t> shape() const { return values.sizes().vec(); }
  std::uint64_t nbytes() const;
};

// Whether a scheme is held as a torch qint8 tensor: symmetric 8-bit integers, one scale.
bool torch_qint8(const ir::QuantScheme& scheme);
// Whether Burn's backends can quantize against this scheme (burn-std quantizable()).
bool quantizable(const ir::QuantScheme& scheme);
// What DTypeUsage answers for QFloat(scheme): Storage when it can be registered, read, moved,
// quantized and dequantized here; nothing otherwise.
ir::DTypeUsageSet usage(const ir::QuantScheme& scheme);
// "Q8S/per-tensor(F32)/Native", for messages.
std::string describe(const ir::QuantScheme& scheme);

// ScaleDtype::round_up: the smallest value of the scale dtype not below `scale`.
float round_up_scale(float scale, ir::ScaleDtype dtype);
// The minifloat codecs (cubecl's host types): code -> value, value -> code (nearest even,
// saturating; NaN -> 0x7F, E2M1 has no NaN and takes 0).
float decode_minifloat(ir::QuantValue kind, std::uint8_t code);
std::uint8_t encode_minifloat(ir::QuantValue kind, float value);

// How values become integer codes. burn-flex 0.22.1 multiplies by 1 / scale and rounds half away
// from zero; burn-flex 0.23 divides by the scale and rounds half to even, as GPU kernels round. A
// session keeps to its Burn version's (Executor::QuantRules).
enum class Encoding : std::uint8_t { kMulInverseHalfAway, kDivideHalfEven };

// RegisterTensor / ReadTensor of QFloat data.
Result<QTensor> from_data(const ir::TensorData& data, const at::Device& device);
// `canonical`: in the layout burn-std 0.23 checks (per-line packing, scales in the packed order)
// whatever layout `q` was registered in; otherwise in that layout, its bytes as they came.
Result<ir::TensorData> to_data(const QTensor& q, bool canonical = false);

// Burn's dequantize: f32 values on q's device.
Result<at::Tensor> dequantize(const QTensor& q);
// Burn's quantize with given scales (`scales` in params_shape, `global` [1] for a two-level
// scheme).
Result<QTensor> quantize(const at::Tensor& x, const ir::QuantScheme& scheme,
                         const at::Tensor& scales, const std::optional<at::Tensor>& global,
                         Encoding encoding = Encoding::kMulInverseHalfAway);
// Burn's quantize_dynamic: scales from each block's largest magnitude.
Result<QTensor> quantize_dynamic(const at::Tensor& x, const ir::QuantScheme& scheme,
                                 Encoding encoding = Encoding::kMulInverseHalfAway);
// `x` requantized with the scales (and layout) of `like`: the inverse of dequantize(like) for
// values that only moved.
Result<QTensor> requantize_like(const at::Tensor& x, const QTensor& like,
                                Encoding encoding = Encoding::kMulInverseHalfAway);
QTensor to_device(const QTensor& q, const at::Device& device);

// A quantized tensor on its way to another device: its values dequantized by torch, and what it
// takes to requantize them with the same scales. `raw` is set instead when dequantize cannot carry
// the values exactly (a zero or non-finite scale, NaN codes, a lookup table), so they move as-is.
struct Transfer {
  at::Tensor dequantized;
  QTensor meta;  // meta.values undefined unless raw
  bool raw = false;
};
Result<Transfer> prepare_transfer(const QTensor& q);
Result<QTensor> finish_transfer(const Transfer& t, const at::Device& device);

// What the executor's op context offers the quantization lowering (lower_quant.cpp).
class QuantIo {
 public:
  virtual ~QuantIo() = default;
  // The quantized tensor behind an input; nullptr when it holds plain values.
  virtual const QTensor* quantized(const ir::TensorIr& t) const = 0;
  virtual Status store_quantized(const ir::TensorIr& t, QTensor value) = 0;
  // The session's encoding (Executor::QuantRules).
  virtual Encoding encoding() const = 0;
};

}  // namespace tb::backend::libtorch::quant
