#include "torchbridge/ir/types.hpp"

#include <cmath>
#include <limits>

#include "torchbridge/ir/quant_value.hpp"
#include "torchbridge/result.hpp"

namespace tb {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kDecode:
      return "decode error";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kExecution:
      return "execution error";
    case ErrorCode::kLimit:
      return "limit exceeded";
    case ErrorCode::kUnauthorized:
      return "unauthorized";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kIo:
      return "i/o error";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "error";
}

std::string Error::what() const {
  return context.empty() ? message : context + ": " + message;
}

Error with_context(Error error, std::string_view ctx) {
  if (error.context.empty()) {
    error.context = std::string(ctx);
  } else {
    error.context = std::string(ctx) + " > " + error.context;
  }
  return error;
}

}  // namespace tb

namespace tb::ir {

BlockSize make_block_size(const std::vector<std::uint8_t>& dims) {
  std::size_t skip = 0;
  while (skip < dims.size() && dims[skip] == 1) ++skip;
  BlockSize b;
  b.storage.fill(1);
  const std::size_t len = std::min<std::size_t>(dims.size() - skip, b.storage.size());
  for (std::size_t i = 0; i < len; ++i) b.storage[i] = dims[skip + i];
  b.len = static_cast<std::uint8_t>(len);
  return b;
}

QuantScheme default_quant_scheme() {
  QuantScheme s;
  s.value = QuantValue::Q8F;
  s.store = QuantStore{QuantStoreKind::PackedU32, 0};
  s.mode = QuantMode::Symmetric;
  return s;
}

std::size_t DType::element_size() const {
  switch (kind) {
    case DTypeKind::F64:
    case DTypeKind::I64:
    case DTypeKind::U64:
      return 8;
    case DTypeKind::F32:
    case DTypeKind::Flex32:
    case DTypeKind::I32:
    case DTypeKind::U32:
      return 4;
    case DTypeKind::F16:
    case DTypeKind::BF16:
    case DTypeKind::I16:
    case DTypeKind::U16:
      return 2;
    case DTypeKind::I8:
    case DTypeKind::U8:
      return 1;
    case DTypeKind::Bool:
      return bool_store == BoolStore::U32 ? 4 : 1;
    case DTypeKind::QFloat:
      return quant_element_size(scheme);
  }
  return 0;
}

std::string_view DType::name() const {
  switch (kind) {
    case DTypeKind::F64:
      return "f64";
    case DTypeKind::F32:
      return "f32";
    case DTypeKind::Flex32:
      return "flex32";
    case DTypeKind::F16:
      return "f16";
    case DTypeKind::BF16:
      return "bf16";
    case DTypeKind::I64:
      return "i64";
    case DTypeKind::I32:
      return "i32";
    case DTypeKind::I16:
      return "i16";
    case DTypeKind::I8:
      return "i8";
    case DTypeKind::U64:
      return "u64";
    case DTypeKind::U32:
      return "u32";
    case DTypeKind::U16:
      return "u16";
    case DTypeKind::U8:
      return "u8";
    case DTypeKind::Bool:
      switch (bool_store) {
        case BoolStore::Native:
          return "bool";
        case BoolStore::U8:
          return "bool(u8)";
        case BoolStore::U32:
          return "bool(u32)";
      }
      return "bool";
    case DTypeKind::QFloat:
      return "qfloat";
  }
  return "?";
}

std::uint64_t num_elements(const Dims& dims) {
  std::uint64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// Burn's ElementConversion goes through num_traits casts: floats truncate toward zero when they
// become integers, bool is 0 or 1.
double ScalarIr::as_double() const {
  return std::visit([](auto v) { return static_cast<double>(v); }, value);
}

std::int64_t ScalarIr::as_int() const {
  return std::visit(
      [](auto v) -> std::int64_t {
        using V = decltype(v);
        if constexpr (std::is_same_v<V, double>) {
          if (std::isnan(v)) return 0;
          if (v >= 9.2233720368547758e18) return std::numeric_limits<std::int64_t>::max();
          if (v <= -9.2233720368547758e18) return std::numeric_limits<std::int64_t>::min();
          return static_cast<std::int64_t>(v);
        } else {
          return static_cast<std::int64_t>(v);
        }
      },
      value);
}

}  // namespace tb::ir
