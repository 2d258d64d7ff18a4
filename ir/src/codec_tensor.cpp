// TensorIr: every op names two or three, so a frame of Burn's plain client is mostly tensors.
// Read field by field (a path segment, an out-of-line call and a name search each), one took about
// 790 instructions, 15% of a replayed LU's host CPU (docs/benchmarks.md, Dec 8). Almost every one
// arrives in the same short form, which one pass over the bytes reads; anything else (long forms,
// a Bool or QFloat dtype with its payload, an error) goes through the checked field-by-field path
// from the start, so errors and their paths are unchanged.
#include "codec_tensor.hpp"

#include <cstring>

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

// A name of at most 16 bytes as two little-endian words and its length: a comparison of three
// words per candidate ("ReadWrite" is 9 bytes).
struct ShortName {
  std::array<std::uint64_t, 2> words{};
  std::size_t size = 0;
  constexpr bool operator==(const ShortName& o) const {
    return words[0] == o.words[0] && words[1] == o.words[1] && size == o.size;
  }
};
constexpr std::size_t kShortNameMax = 16;
constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

[[gnu::always_inline]] inline bool scan_short_name(const std::uint8_t*& p, const std::uint8_t* end,
                                                   ShortName& out) {
  if (p == end || (*p & 0xe0) != 0xa0) return false;
  const std::size_t n = *p & 0x1f;
  if (n > kShortNameMax || static_cast<std::size_t>(end - p) < n + 1) return false;
  out = ShortName{};
  if (kLittleEndian && static_cast<std::size_t>(end - p) > kShortNameMax) {
    // Two word loads, the bytes past the name masked off: the frame goes on for 16 more bytes.
    std::memcpy(out.words.data(), p + 1, sizeof out.words);
    const auto keep = [](std::size_t bytes) {
      return bytes >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * bytes)) - 1;
    };
    out.words[0] &= keep(n);
    out.words[1] &= n > 8 ? keep(n - 8) : 0;
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      out.words[i / 8] |= std::uint64_t{p[1 + i]} << (8 * (i % 8));
    }
  }
  out.size = n;
  p += n + 1;
  return true;
}

constexpr ShortName short_name(std::string_view name) {
  ShortName s;
  for (std::size_t i = 0; i < name.size() && i < kShortNameMax; ++i) {
    s.words[i / 8] |= std::uint64_t{static_cast<unsigned char>(name[i])} << (8 * (i % 8));
  }
  s.size = name.size() <= kShortNameMax ? name.size() : ~std::size_t{0};  // longer: never matches
  return s;
}

template <const auto& Names>
constexpr auto short_names() {
  std::array<ShortName, std::tuple_size_v<std::decay_t<decltype(Names)>>> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = short_name(Names[i]);
  return out;
}
template <const auto& Names>
inline constexpr auto kShortNames = short_names<Names>();

template <const auto& Names>
int find_short(const ShortName& name) {
  for (std::size_t i = 0; i < kShortNames<Names>.size(); ++i) {
    if (kShortNames<Names>[i] == name) return static_cast<int>(i);
  }
  return -1;
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
  ShortName status;
  ShortName dtype;
  if (!scan_short_name(p, end, status) || !scan_short_name(p, end, dtype)) return false;
  const int s = find_short<EnumNames<TensorStatus>::kNames>(status);
  const int d = find_short<EnumNames<DTypeKind>::kNames>(dtype);
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
