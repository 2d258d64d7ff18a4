// The pull reader's containers: arrays and maps, whose declared counts are checked against the
// bytes left before anyone sizes a container from them, and skipping a value under the depth limit.
#include "torchbridge/ir/msgpack_io.hpp"

namespace tb::ir {

bool Reader::array_slow(std::uint32_t& count) {
  if (!need(1)) return false;
  const std::uint8_t b = data_[pos_];
  std::uint64_t n = 0;
  if (b >= 0x90 && b <= 0x9f) {
    n = b & 0x0f;
    ++pos_;
  } else if (b == 0xdc || b == 0xdd) {
    ++pos_;
    if (!read_be(b == 0xdc ? 2 : 4, n)) return false;
  } else {
    return failf("expected array, got {}", describe_next());
  }
  // Every element takes at least one byte: a longer declaration is a lie, refuse it before anyone
  // sizes a container from it.
  if (n > remaining()) {
    return failf("array declares {} elements but only {} byte(s) remain", n, remaining());
  }
  count = static_cast<std::uint32_t>(n);
  return true;
}

bool Reader::count_mismatch(std::uint32_t expected, std::uint32_t got) {
  return failf("expected array of {} elements, got {}", expected, got);
}

bool Reader::map_slow(std::uint32_t& count) {
  if (!need(1)) return false;
  const std::uint8_t b = data_[pos_];
  std::uint64_t n = 0;
  if (b >= 0x80 && b <= 0x8f) {
    n = b & 0x0f;
    ++pos_;
  } else if (b == 0xde || b == 0xdf) {
    ++pos_;
    if (!read_be(b == 0xde ? 2 : 4, n)) return false;
  } else {
    return failf("expected map, got {}", describe_next());
  }
  if (n * 2 > remaining()) {
    return failf("map declares {} entries but only {} byte(s) remain", n, remaining());
  }
  count = static_cast<std::uint32_t>(n);
  return true;
}

bool Reader::skip() {
  return skip_depth(0);
}

bool Reader::skip_depth(std::uint32_t depth) {
  if (depth >= limits_.max_depth) {
    return failf("nesting deeper than {} levels", limits_.max_depth);
  }
  const MsgKind kind = peek();
  std::uint64_t u = 0;
  switch (kind) {
    case MsgKind::kEnd:
      return need(1);
    case MsgKind::kNil:
      ++pos_;
      return true;
    case MsgKind::kBool:
      ++pos_;
      return true;
    case MsgKind::kUInt:
      return u64(u);
    case MsgKind::kInt: {
      std::int64_t i = 0;
      return i64(i);
    }
    case MsgKind::kFloat: {
      double d = 0;
      return f64(d);
    }
    case MsgKind::kStr: {
      std::string_view s;
      return str(s);
    }
    case MsgKind::kBin: {
      Bytes b;
      return bin(b);
    }
    case MsgKind::kArray: {
      std::uint32_t n = 0;
      if (!array(n)) return false;
      for (std::uint32_t i = 0; i < n; ++i)
        if (!skip_depth(depth + 1)) return false;
      return true;
    }
    case MsgKind::kMap: {
      std::uint32_t n = 0;
      if (!map(n)) return false;
      for (std::uint32_t i = 0; i < 2 * n; ++i)
        if (!skip_depth(depth + 1)) return false;
      return true;
    }
    case MsgKind::kExt: {
      const std::uint8_t b = data_[pos_++];
      std::uint64_t len = 0;
      if (b >= 0xd4 && b <= 0xd8) {
        len = std::uint64_t{1} << (b - 0xd4);
      } else if (!read_be(std::size_t{1} << (b - 0xc7), len)) {
        return false;
      }
      if (!need(len + 1)) return false;
      pos_ += len + 1;
      return true;
    }
    case MsgKind::kInvalid:
      return failf("invalid msgpack byte 0x{:02x} at offset {}", data_[pos_], pos_);
  }
  return false;
}

}  // namespace tb::ir
