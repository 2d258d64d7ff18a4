// The pull reader's head and scalars: what the next byte is, the error path, and nil, bool,
// integers, floats, strings and binary. Arrays, maps and skipping are msgpack_containers.cpp's.
#include "torchbridge/ir/msgpack_io.hpp"

#include <algorithm>
#include <cstring>

#include <msgpack.hpp>

namespace tb::ir {

std::string_view to_string(MsgKind kind) noexcept {
  switch (kind) {
    case MsgKind::kNil:
      return "nil";
    case MsgKind::kBool:
      return "bool";
    case MsgKind::kUInt:
      return "unsigned integer";
    case MsgKind::kInt:
      return "negative integer";
    case MsgKind::kFloat:
      return "float";
    case MsgKind::kStr:
      return "string";
    case MsgKind::kBin:
      return "binary";
    case MsgKind::kArray:
      return "array";
    case MsgKind::kMap:
      return "map";
    case MsgKind::kExt:
      return "ext";
    case MsgKind::kInvalid:
      return "invalid byte";
    case MsgKind::kEnd:
      return "end of input";
  }
  return "?";
}

Reader::Reader(const Bytes& buffer, DecodeLimits limits)
    : buffer_(buffer), data_(buffer.data()), size_(buffer.size()), limits_(limits) {}

bool Reader::fail(std::string message) {
  if (failed_) return false;
  failed_ = true;
  error_.code = ErrorCode::kDecode;
  error_.context = path_string();
  error_.message = std::move(message);
  return false;
}

std::string Reader::path_string() const {
  std::string out;
  for (std::size_t i = 0; i < std::min(depth_, kPathDepth); ++i) {
    const Segment& s = path_[i];
    if (s.name) {
      if (!out.empty()) out += " > ";
      out += s.name;
    } else {
      out += fmt::format("[{}]", s.index);
    }
  }
  if (depth_ > kPathDepth) out += " > …";
  return out;
}

bool Reader::need_slow(std::size_t n) {
  if (failed_) return false;
  if (size_ - pos_ < n) {
    return failf("truncated input: need {} more byte(s) at offset {}, have {}", n, pos_,
                 size_ - pos_);
  }
  return true;
}

MsgKind Reader::peek_marker(std::uint8_t b) {
  switch (b) {
    case 0xc0:
      return MsgKind::kNil;
    case 0xc2:
    case 0xc3:
      return MsgKind::kBool;
    case 0xc4:
    case 0xc5:
    case 0xc6:
      return MsgKind::kBin;
    case 0xc7:
    case 0xc8:
    case 0xc9:
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8:
      return MsgKind::kExt;
    case 0xca:
    case 0xcb:
      return MsgKind::kFloat;
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf:
      return MsgKind::kUInt;
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3:
      return MsgKind::kInt;
    case 0xd9:
    case 0xda:
    case 0xdb:
      return MsgKind::kStr;
    case 0xdc:
    case 0xdd:
      return MsgKind::kArray;
    case 0xde:
    case 0xdf:
      return MsgKind::kMap;
    default:
      return MsgKind::kInvalid;
  }
}

std::string Reader::describe_next() const {
  const MsgKind kind = peek();
  if (kind == MsgKind::kEnd) return "end of input";
  return fmt::format("{} (byte 0x{:02x} at offset {})", to_string(kind), data_[pos_], pos_);
}

bool Reader::nil() {
  if (!need(1)) return false;
  if (data_[pos_] != 0xc0) return failf("expected nil, got {}", describe_next());
  ++pos_;
  return true;
}

bool Reader::try_nil() {
  if (!failed_ && pos_ < size_ && data_[pos_] == 0xc0) {
    ++pos_;
    return true;
  }
  return false;
}

bool Reader::boolean(bool& out) {
  if (!need(1)) return false;
  const std::uint8_t b = data_[pos_];
  if (b != 0xc2 && b != 0xc3) return failf("expected bool, got {}", describe_next());
  out = b == 0xc3;
  ++pos_;
  return true;
}

// The forms u64() and i64() read inline (msgpack_io.hpp) never reach these: only a failed reader,
// the end of input, the other forms and the errors do.
bool Reader::u64_slow(std::uint64_t& out) {
  if (!need(1)) return false;
  const std::uint8_t b = data_[pos_];
  if (b >= 0xcc && b <= 0xcf) {
    ++pos_;
    return read_be(std::size_t{1} << (b - 0xcc), out);
  }
  if (b >= 0xd0 && b <= 0xd3) {
    std::int64_t v = 0;
    if (!i64(v)) return false;
    if (v < 0) return failf("expected unsigned integer, got {}", v);
    out = static_cast<std::uint64_t>(v);
    return true;
  }
  if (b >= 0xe0) return failf("expected unsigned integer, got {}", static_cast<std::int8_t>(b));
  return failf("expected unsigned integer, got {}", describe_next());
}

bool Reader::i64_slow(std::int64_t& out) {
  if (!need(1)) return false;
  const std::uint8_t b = data_[pos_];
  if (b >= 0xcc && b <= 0xcf) {
    std::uint64_t v = 0;
    ++pos_;
    if (!read_be(std::size_t{1} << (b - 0xcc), v)) return false;
    if (v > static_cast<std::uint64_t>(INT64_MAX)) return failf("integer {} overflows i64", v);
    out = static_cast<std::int64_t>(v);
    return true;
  }
  if (b >= 0xd0 && b <= 0xd3) {
    const std::size_t n = std::size_t{1} << (b - 0xd0);
    std::uint64_t v = 0;
    ++pos_;
    if (!read_be(n, v)) return false;
    switch (n) {
      case 1:
        out = static_cast<std::int8_t>(v);
        break;
      case 2:
        out = static_cast<std::int16_t>(v);
        break;
      case 4:
        out = static_cast<std::int32_t>(v);
        break;
      default:
        out = static_cast<std::int64_t>(v);
        break;
    }
    return true;
  }
  return failf("expected integer, got {}", describe_next());
}

bool Reader::f64(double& out) {
  if (!need(1)) return false;
  const std::uint8_t b = data_[pos_];
  if (b == 0xcb) {
    std::uint64_t bits = 0;
    ++pos_;
    if (!read_be(8, bits)) return false;
    std::memcpy(&out, &bits, 8);
    return true;
  }
  if (b == 0xca) {
    std::uint64_t bits = 0;
    ++pos_;
    if (!read_be(4, bits)) return false;
    const auto bits32 = static_cast<std::uint32_t>(bits);
    float f = 0;
    std::memcpy(&f, &bits32, 4);
    out = f;
    return true;
  }
  // serde's f64 visitor takes integers too (and msgpack-cxx writes integral doubles as integers).
  const MsgKind kind = peek();
  if (kind == MsgKind::kUInt) {
    std::uint64_t u = 0;
    if (!u64(u)) return false;
    out = static_cast<double>(u);
    return true;
  }
  if (kind == MsgKind::kInt) {
    std::int64_t i = 0;
    if (!i64(i)) return false;
    out = static_cast<double>(i);
    return true;
  }
  return failf("expected float, got {}", describe_next());
}

bool Reader::str_slow(std::string_view& out) {
  if (!need(1)) return false;
  const std::uint8_t b = data_[pos_];
  std::uint64_t len = 0;
  if (b >= 0xa0 && b <= 0xbf) {
    len = b & 0x1f;
    ++pos_;
  } else if (b >= 0xd9 && b <= 0xdb) {
    ++pos_;
    if (!read_be(std::size_t{1} << (b - 0xd9), len)) return false;
  } else {
    return failf("expected string, got {}", describe_next());
  }
  if (!need(len)) return false;
  out = std::string_view(reinterpret_cast<const char*>(data_ + pos_), len);
  pos_ += len;
  return true;
}

bool Reader::bin(Bytes& out) {
  if (!need(1)) return false;
  const std::uint8_t b = data_[pos_];
  if (b < 0xc4 || b > 0xc6) return failf("expected binary, got {}", describe_next());
  ++pos_;
  std::uint64_t len = 0;
  if (!read_be(std::size_t{1} << (b - 0xc4), len)) return false;
  if (!need(len)) return false;
  out = buffer_.slice(pos_, len);
  pos_ += len;
  return true;
}

}  // namespace tb::ir
