// TensorIr: every op names two or three, so a frame of Burn's plain client is mostly tensors.
// Read field by field (a path segment, an out-of-line call and a name search each), one took about
// 790 instructions, 15% of a replayed LU's host CPU (docs/benchmarks.md, Dec 8). Almost every one
// arrives in the same short form, which one pass over the bytes reads; anything else (long forms,
// a Bool or QFloat dtype with its payload, an error) goes through the checked field-by-field path
// from the start, so errors and their paths are unchanged.
#include "codec_tensor.hpp"

#include "codec_values.hpp"

namespace tb::ir {

namespace {

// A msgpack unsigned integer in a form rmp-serde writes for a u64: positive fixint or uint8..64.
[[gnu::always_inline]] inline bool scan_uint(const std::uint8_t*& p, const std::uint8_t* end,
                                             std::uint64_t& out) {
  if (p == end) return false;
  const std::uint8_t b = *p;
  if (b <= 0x7f) {
    out = b;
    ++p;
    return true;
  }
  if (b < 0xcc || b > 0xcf) return false;
  const std::size_t n = std::size_t{1} << (b - 0xcc);
  if (static_cast<std::size_t>(end - p) < n + 1) return false;
  std::uint64_t v = 0;
  for (std::size_t i = 1; i <= n; ++i) v = (v << 8) | p[i];
  p += n + 1;
  out = v;
  return true;
}

// A fixstr, as a view into the frame.
[[gnu::always_inline]] inline bool scan_fixstr(const std::uint8_t*& p, const std::uint8_t* end,
                                               std::string_view& out) {
  if (p == end || (*p & 0xe0) != 0xa0) return false;
  const std::size_t n = *p & 0x1f;
  if (static_cast<std::size_t>(end - p) < n + 1) return false;
  out = std::string_view(reinterpret_cast<const char*>(p + 1), n);
  p += n + 1;
  return true;
}

}  // namespace

bool scan_tensor(const std::uint8_t* p, const std::uint8_t* end, TensorIr& v, std::size_t& used) {
  const std::uint8_t* const start = p;
  if (end - p < 3 || p[0] != 0x94 || p[1] != 0x91) return false;
  p += 2;
  if (!scan_uint(p, end, v.id.value)) return false;
  if (end - p < 2 || p[0] != 0x91 || (p[1] & 0xf0) != 0x90) return false;
  const std::size_t rank = p[1] & 0x0f;
  p += 2;
  auto& dims = v.shape.dims;
  dims.resize(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    if (!scan_uint(p, end, dims[i])) return false;
  }
  std::string_view status;
  std::string_view dtype;
  if (!scan_fixstr(p, end, status) || !scan_fixstr(p, end, dtype)) return false;
  const int s = find_name<EnumNames<TensorStatus>::kNames>(status);
  const int d = find_name<EnumNames<DTypeKind>::kNames>(dtype);
  if (s < 0 || d < 0) return false;
  const auto kind = static_cast<DTypeKind>(d);
  if (kind == DTypeKind::Bool || kind == DTypeKind::QFloat) return false;  // they carry a payload
  v.status = static_cast<TensorStatus>(s);
  v.dtype = DType(kind);
  used = static_cast<std::size_t>(p - start);
  return true;
}

bool read_value(Reader& r, TensorIr& v) {
  std::size_t used = 0;
  if (scan_tensor(r.cursor(), r.end(), v, used)) {
    r.advance(used);
    return true;
  }
  return read_value<TensorIr>(r, v);
}

}  // namespace tb::ir
