#include "runtime/dtype.hpp"

#include <cstring>

#include <fmt/format.h>

#include "torchbridge/ir/exclusive_block.hpp"

namespace tb::backend::libtorch {

using ir::DTypeKind;

at::ScalarType storage_type(const ir::DType& dtype) {
  switch (dtype.kind) {
    case DTypeKind::F64:
      return at::kDouble;
    case DTypeKind::F32:
    case DTypeKind::Flex32:
      return at::kFloat;
    case DTypeKind::F16:
      return at::kHalf;
    case DTypeKind::BF16:
      return at::kBFloat16;
    case DTypeKind::I64:
    case DTypeKind::U64:
    case DTypeKind::U32:
      return at::kLong;
    case DTypeKind::I32:
    case DTypeKind::U16:
      return at::kInt;
    case DTypeKind::I16:
      return at::kShort;
    case DTypeKind::I8:
      return at::kChar;
    case DTypeKind::U8:
      return at::kByte;
    case DTypeKind::Bool:
      return at::kBool;
    case DTypeKind::QFloat:
      return at::kChar;  // the values of a quantized tensor
  }
  return at::kFloat;
}

at::Tensor to_storage(const at::Tensor& value, const ir::DType& declared) {
  const at::ScalarType st = storage_type(declared);
  at::Tensor v = value.scalar_type() == st ? value : value.to(st);
  if (declared.kind == DTypeKind::U16) return v.bitwise_and(0xFFFF);
  if (declared.kind == DTypeKind::U32) return v.bitwise_and(std::int64_t{0xFFFFFFFF});
  return v;
}

std::string shape_string(at::IntArrayRef sizes) {
  return fmt::format("[{}]", fmt::join(sizes, ", "));
}

bool same_shape(at::IntArrayRef sizes, const ir::Dims& dims) {
  if (sizes.size() != dims.size()) return false;
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (static_cast<std::uint64_t>(sizes[i]) != dims[i]) return false;
  return true;
}

namespace {

// The ATen type whose bytes match Burn's wire encoding, when there is one.
std::optional<at::ScalarType> wire_type(const ir::DType& d) {
  switch (d.kind) {
    case DTypeKind::U16:
    case DTypeKind::U32:
      return std::nullopt;
    case DTypeKind::U64:
      return at::kLong;  // same bits
    case DTypeKind::Bool:
      return d.bool_store == ir::BoolStore::U32 ? std::nullopt : std::optional(at::kByte);
    case DTypeKind::QFloat:
      return std::nullopt;
    default:
      return storage_type(d);
  }
}

std::vector<std::int64_t> sizes_of(const ir::Dims& dims) {
  return std::vector<std::int64_t>(dims.begin(), dims.end());
}

template <class Wire, class Stored>
at::Tensor widen(const ir::Bytes& bytes, std::vector<std::int64_t> sizes, at::ScalarType st) {
  at::Tensor out = at::empty(sizes, at::TensorOptions().dtype(st));
  auto* dst = out.data_ptr<Stored>();
  const std::size_t n = bytes.size() / sizeof(Wire);
  for (std::size_t i = 0; i < n; ++i) {
    Wire w;
    std::memcpy(&w, bytes.data() + i * sizeof(Wire), sizeof(Wire));
    dst[i] = static_cast<Stored>(w);
  }
  return out;
}

template <class Wire, class Stored>
ir::Bytes narrow(const at::Tensor& contiguous) {
  const auto n = static_cast<std::size_t>(contiguous.numel());
  std::vector<std::uint8_t> out(n * sizeof(Wire));
  const auto* src = contiguous.data_ptr<Stored>();
  for (std::size_t i = 0; i < n; ++i) {
    const auto w = static_cast<Wire>(src[i]);
    std::memcpy(out.data() + i * sizeof(Wire), &w, sizeof(Wire));
  }
  return ir::Bytes::from_vector(std::move(out));
}

// A view of a CPU tensor's bytes that keeps the tensor alive.
ir::Bytes view_of(const at::Tensor& contiguous) {
  auto owner = std::make_shared<at::Tensor>(contiguous);
  const auto* data = static_cast<const std::uint8_t*>(owner->data_ptr());
  const auto size = static_cast<std::size_t>(owner->numel()) * owner->element_size();
  return ir::Bytes(std::shared_ptr<const void>(owner, data), data, size);
}

}  // namespace

bool can_borrow(const ir::Bytes& bytes, std::size_t element_size) {
  // Uploads of at least this size become tensors over the message's own memory.
  constexpr std::size_t kBorrowFrom = 64 * 1024;
  // What the tensor may pin beyond its own bytes (the rest of its message: task headers, small
  // tasks beside it), uncounted by the tensor limits.
  constexpr std::size_t kPinSlack = 64 * 1024;
  const auto* block = ir::exclusive_block_of(bytes);
  return block != nullptr && bytes.size() >= kBorrowFrom &&
         block->size - std::min(block->size, bytes.size()) <= kPinSlack &&
         reinterpret_cast<std::uintptr_t>(bytes.data()) % element_size == 0;
}

Result<at::Tensor> tensor_from_data(const ir::TensorData& data, const at::Device& device) {
  if (data.dtype.is_quantized()) {
    return make_error(ErrorCode::kInternal, "quantized data goes through quant::from_data");
  }
  const std::uint64_t numel = ir::num_elements(data.shape);
  const std::uint64_t expected = numel * data.dtype.element_size();
  if (data.bytes.size() != expected) {
    return make_error(ErrorCode::kInvalidArgument,
                      "TensorData of shape [{}] and dtype {} needs {} bytes, got {}",
                      fmt::join(data.shape, ", "), data.dtype.name(), expected, data.bytes.size());
  }
  auto sizes = sizes_of(data.shape);
  at::Tensor host;
  if (auto wt = wire_type(data.dtype)) {
    if (can_borrow(data.bytes, data.dtype.element_size())) {
      // The tensor keeps the received message's buffer, which is exclusively the frame's.
      auto* p = const_cast<std::uint8_t*>(data.bytes.data());
      host = at::from_blob(
          p, sizes, [owner = data.bytes.owner()](void*) {}, at::TensorOptions().dtype(*wt));
    } else {
      host = at::empty(sizes, at::TensorOptions().dtype(*wt));
      if (expected) std::memcpy(host.data_ptr(), data.bytes.data(), expected);
    }
  } else if (data.dtype.kind == DTypeKind::U16) {
    host = widen<std::uint16_t, std::int32_t>(data.bytes, sizes, at::kInt);
  } else if (data.dtype.kind == DTypeKind::U32) {
    host = widen<std::uint32_t, std::int64_t>(data.bytes, sizes, at::kLong);
  } else {  // Bool(U32)
    host = widen<std::uint32_t, std::uint8_t>(data.bytes, sizes, at::kByte);
  }
  if (data.dtype.is_bool()) host = host.ne(0);
  return device.is_cpu() ? host : host.to(device);
}

Result<ir::TensorData> data_from_tensor(const at::Tensor& tensor, const ir::DType& dtype) {
  if (dtype.is_quantized()) {
    return make_error(ErrorCode::kInternal, "quantized data goes through quant::to_data");
  }
  ir::TensorData out;
  out.dtype = dtype;
  out.shape.assign(tensor.sizes().begin(), tensor.sizes().end());
  at::Tensor t = tensor.device().is_cpu() ? tensor : tensor.cpu();
  switch (dtype.kind) {
    case DTypeKind::U16:
      out.bytes = narrow<std::uint16_t, std::int32_t>(t.to(at::kInt).contiguous());
      return out;
    case DTypeKind::U32:
      out.bytes = narrow<std::uint32_t, std::int64_t>(t.to(at::kLong).contiguous());
      return out;
    case DTypeKind::Bool:
      if (dtype.bool_store == ir::BoolStore::U32) {
        out.bytes = narrow<std::uint32_t, std::uint8_t>(t.ne(0).to(at::kByte).contiguous());
        return out;
      }
      out.bytes = view_of(t.ne(0).to(at::kByte).contiguous());
      return out;
    default:
      break;
  }
  const at::ScalarType st = *wire_type(dtype);
  out.bytes = view_of((t.scalar_type() == st ? t : t.to(st)).contiguous());
  return out;
}

}  // namespace tb::backend::libtorch
