// Burn's value types that every IR payload is built from (burn-ir, burn-std, cubecl-common).
// Field order is wire order; see docs/protocol-0.22.1.md for the msgpack forms.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "torchbridge/ir/bytes.hpp"
#include "torchbridge/ir/fields.hpp"

namespace tb::ir {

// Aliases that keep commas out of TB_STRUCT field types.
template <std::size_t N>
using Usizes = std::array<std::uint64_t, N>;
using UsizePair = std::pair<std::uint64_t, std::uint64_t>;
// Rust f32 fields (0.23's interpolate options): float32 on the wire.
template <std::size_t N>
using F32s = std::array<float, N>;
template <std::size_t N>
using PaddingPairs = std::array<UsizePair, N>;
using U8x5 = std::array<std::uint8_t, 5>;
using Dims = std::vector<std::uint64_t>;

TB_UNIT_ENUM(TensorStatus, ReadOnly, ReadWrite, NotInit);
TB_UNIT_ENUM(BoolStore, Native, U8, U32);
TB_UNIT_ENUM(FloatDType, F64, F32, Flex32, F16, BF16);
TB_UNIT_ENUM(IntDType, I64, I32, I16, I8, U64, U32, U16, U8);
TB_UNIT_ENUM(QuantValue, Q8F, E5M2, E4M3, Q4F, E2M1, Q2F, Q8S, Q4S, Q2S);
TB_UNIT_ENUM(QuantMode, Symmetric, Lookup);
TB_UNIT_ENUM(ScaleDtype, F32, F16, BF16, UE8M0, UE4M3);
TB_UNIT_ENUM(QuantPropagation, Propagate, Inhibit);
TB_UNIT_ENUM(QuantStoreKind, Native, PackedNative, PackedU32);
TB_UNIT_ENUM(IndexingUpdateOp, Assign, Add, Mul, Min, Max);
TB_UNIT_ENUM(ReduceOperation, Sum, Mean);
TB_UNIT_ENUM(InterpolateModeIr, Nearest, NearestExact, Bilinear, Bicubic, Lanczos3);
TB_UNIT_ENUM(GridSamplePaddingModeIr, Zeros, Border, Reflection);
// 0.23's interpolate options (burn-ir 0.23.0-pre.1 src/operation.rs:2015-2073).
TB_UNIT_ENUM(CoordinateTransformKind, HalfPixel, AlignCorners, Asymmetric, PytorchHalfPixel,
             HalfPixelSymmetric, TfCropAndResize);
TB_UNIT_ENUM(NearestRoundingModeIr, RoundPreferFloor, RoundPreferCeil, Floor, Ceil);
// burn-std CausalAlignment; BottomRight is what 0.22.1 did.
TB_UNIT_ENUM(CausalAlignment, BottomRight, TopLeft);
// DType's variants; Bool and QFloat carry data (see DType).
TB_UNIT_ENUM(DTypeKind, F64, F32, Flex32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, Bool,
             QFloat);
TB_UNIT_ENUM(ScalarKind, Float, Int, UInt, Bool);
TB_UNIT_ENUM(DistributionKind, Default, Bernoulli, Uniform, Normal);
TB_UNIT_ENUM(PadModeKind, Constant, Reflect, Edge);

// cubecl QuantStore: Native | PackedNative(usize) | PackedU32(usize) (the packing dim).
struct QuantStore {
  QuantStoreKind kind = QuantStoreKind::Native;
  std::uint64_t packing_dim = 0;
  friend bool operator==(const QuantStore& a, const QuantStore& b) {
    return a.kind == b.kind && (a.kind == QuantStoreKind::Native || a.packing_dim == b.packing_dim);
  }
  friend bool operator!=(const QuantStore& a, const QuantStore& b) { return !(a == b); }
};

// Canonical block shape: leading 1s dropped, at most 5 dims, unused storage slots are 1.
TB_STRUCT(BlockSize, (U8x5, storage), (std::uint8_t, len));
TB_STRUCT(BlockScale, (BlockSize, size), (ScaleDtype, dtype));
TB_STRUCT(QuantScheme, (QuantValue, value), (QuantStore, store), (QuantMode, mode),
          (std::optional<ScaleDtype>, tensor), (std::optional<BlockScale>, block));
TB_STRUCT(QuantConfig, (QuantScheme, scheme), (QuantPropagation, propagation));

BlockSize make_block_size(const std::vector<std::uint8_t>& dims);
// Cubecl's default scheme: Q8F, PackedU32(0), Symmetric, no level (which reads as per-tensor f32).
QuantScheme default_quant_scheme();

// burn-std DType.
struct DType {
  DTypeKind kind = DTypeKind::F32;
  BoolStore bool_store = BoolStore::Native;  // meaningful for Bool
  QuantScheme scheme{};                      // meaningful for QFloat

  DType() = default;
  DType(DTypeKind k) : kind(k) {}  // NOLINT: implicit on purpose, DType{DTypeKind::F32}
  static DType boolean(BoolStore store) {
    DType d(DTypeKind::Bool);
    d.bool_store = store;
    return d;
  }
  static DType qfloat(const QuantScheme& scheme) {
    DType d(DTypeKind::QFloat);
    d.scheme = scheme;
    return d;
  }

  bool is_float() const { return kind <= DTypeKind::BF16; }
  bool is_int() const { return kind >= DTypeKind::I64 && kind <= DTypeKind::I8; }
  bool is_uint() const { return kind >= DTypeKind::U64 && kind <= DTypeKind::U8; }
  bool is_bool() const { return kind == DTypeKind::Bool; }
  bool is_quantized() const { return kind == DTypeKind::QFloat; }
  // Bytes per element in Burn's TensorData; 0 for sub-byte quantized values.
  std::size_t element_size() const;
  // "f32", "bool(u8)", "qfloat", as Burn's DType::name.
  std::string_view name() const;

  friend bool operator==(const DType& a, const DType& b) {
    if (a.kind != b.kind) return false;
    if (a.kind == DTypeKind::Bool) return a.bool_store == b.bool_store;
    if (a.kind == DTypeKind::QFloat) return a.scheme == b.scheme;
    return true;
  }
  friend bool operator!=(const DType& a, const DType& b) { return !(a == b); }
};

TB_STRUCT(TensorId, (std::uint64_t, value));
TB_STRUCT(StreamId, (std::uint64_t, value));
TB_STRUCT(Shape, (Dims, dims));
TB_STRUCT(TensorIr, (TensorId, id), (Shape, shape), (TensorStatus, status), (DType, dtype));

std::uint64_t num_elements(const Dims& dims);

// burn-ir ScalarIr: Float(f64) | Int(i64) | UInt(u64) | Bool(bool).
struct ScalarIr {
  std::variant<double, std::int64_t, std::uint64_t, bool> value{0.0};

  ScalarKind kind() const { return static_cast<ScalarKind>(value.index()); }
  static ScalarIr f(double v) { return ScalarIr{v}; }
  static ScalarIr i(std::int64_t v) { return ScalarIr{v}; }
  static ScalarIr u(std::uint64_t v) { return ScalarIr{v}; }
  static ScalarIr b(bool v) { return ScalarIr{v}; }
  // The value converted as Burn's `ScalarIr::elem::<f64>()` / `<i64>` would.
  double as_double() const;
  std::int64_t as_int() const;

  friend bool operator==(const ScalarIr& a, const ScalarIr& b) { return a.value == b.value; }
  friend bool operator!=(const ScalarIr& a, const ScalarIr& b) { return !(a == b); }
};

TB_STRUCT(Slice, (std::int64_t, start), (std::optional<std::int64_t>, end), (std::int64_t, step));

// burn-std Distribution: Default | Bernoulli(p) | Uniform(low, high) | Normal(mean, std).
struct Distribution {
  DistributionKind kind = DistributionKind::Default;
  double a = 0;
  double b = 0;
  friend bool operator==(const Distribution& x, const Distribution& y) {
    return x.kind == y.kind && x.a == y.a && x.b == y.b;
  }
  friend bool operator!=(const Distribution& x, const Distribution& y) { return !(x == y); }
};

// burn-ir PadModeIr: Constant(ScalarIr) | Reflect | Edge.
struct PadModeIr {
  PadModeKind kind = PadModeKind::Constant;
  ScalarIr value;  // meaningful for Constant
  friend bool operator==(const PadModeIr& a, const PadModeIr& b) {
    return a.kind == b.kind && (a.kind != PadModeKind::Constant || a.value == b.value);
  }
  friend bool operator!=(const PadModeIr& a, const PadModeIr& b) { return !(a == b); }
};

// burn-std TensorData: row-major bytes, a flat shape (not Shape's [[dims]]) and a dtype.
struct TensorData {
  Bytes bytes;
  Dims shape;
  DType dtype;
  friend bool operator==(const TensorData& a, const TensorData& b) {
    return a.bytes == b.bytes && a.shape == b.shape && a.dtype == b.dtype;
  }
  friend bool operator!=(const TensorData& a, const TensorData& b) { return !(a == b); }
};

TB_STRUCT(DeviceSettings, (FloatDType, float_dtype), (IntDType, int_dtype), (BoolStore, bool_dtype),
          (QuantConfig, quantization));

}  // namespace tb::ir
