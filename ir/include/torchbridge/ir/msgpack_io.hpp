// A bounds-checked msgpack pull reader and a writer (msgpack-cxx's packer) with rmp-serde's
// canonical forms.
//
// Why a pull reader rather than msgpack-cxx's object tree: the tree parser allocates every declared
// array before reading its elements, so a few hostile bytes (nested array32 headers) make it
// allocate gigabytes. Reading straight into typed values checks every declared length against the
// bytes that remain, allocates nothing on its own, and leaves tensor bytes in the frame (zero
// copy). msgpack-cxx stays the oracle for structure in the tests.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "torchbridge/ir/bytes.hpp"
#include "torchbridge/result.hpp"

namespace tb::ir {

enum class MsgKind : std::uint8_t {
  kNil,
  kBool,
  kUInt,
  kInt,
  kFloat,
  kStr,
  kBin,
  kArray,
  kMap,
  kExt,
  kInvalid,
  kEnd
};

std::string_view to_string(MsgKind kind) noexcept;

struct DecodeLimits {
  // Depth of nesting that skip() follows; typed decoding is bounded by the types themselves.
  std::uint32_t max_depth = 64;
};

class Reader {
 public:
  explicit Reader(const Bytes& buffer, DecodeLimits limits = {});

  // Each returns false after recording an error; once failed, every later call fails too.
  //
  // The one-byte forms (fixint, fixstr, fixarray, fixmap) and the short integers are read inline:
  // every id, dim, count and variant name of a frame is one. Decoding was a quarter of the host's
  // instructions on the op-by-op frames of Burn's plain client, much of it calls for one byte
  // (docs/benchmarks.md, Dec 7: replays). Every other form, and every error, goes out of line.
  bool nil();
  bool try_nil();  // consumes a nil if one is next
  bool boolean(bool& out);
  bool u64(std::uint64_t& out) {
    if (!failed_ && pos_ < size_) {
      const std::uint8_t b = data_[pos_];
      if (b <= 0x7f) {
        out = b;
        ++pos_;
        return true;
      }
      // uint8, uint16 and uint32: tensor ids, dims and byte counts.
      if (b >= 0xcc && b <= 0xce && size_ - pos_ - 1 >= (std::size_t{1} << (b - 0xcc))) {
        ++pos_;
        return read_be(std::size_t{1} << (b - 0xcc), out);
      }
    }
    return u64_slow(out);
  }
  bool i64(std::int64_t& out) {
    if (!failed_ && pos_ < size_) {
      const std::uint8_t b = data_[pos_];
      if (b <= 0x7f || b >= 0xe0) {  // positive and negative fixint: the byte as an int8
        out = static_cast<std::int8_t>(b);
        ++pos_;
        return true;
      }
    }
    return i64_slow(out);
  }
  bool f64(double& out);
  bool str(std::string_view& out) {
    if (!failed_ && pos_ < size_ && (data_[pos_] & 0xe0) == 0xa0) {
      const std::size_t len = data_[pos_] & 0x1f;
      if (size_ - pos_ - 1 >= len) {
        out = std::string_view(reinterpret_cast<const char*>(data_ + pos_ + 1), len);
        pos_ += 1 + len;
        return true;
      }
    }
    return str_slow(out);
  }
  bool bin(Bytes& out);  // a view into the frame
  // Every element takes at least one byte: a count beyond the bytes left is refused before anyone
  // sizes a container from it (a map's entries take two).
  bool array(std::uint32_t& count) {
    if (!failed_ && pos_ < size_ && (data_[pos_] & 0xf0) == 0x90) {
      const std::size_t n = data_[pos_] & 0x0f;
      if (size_ - pos_ - 1 >= n) {
        ++pos_;
        count = static_cast<std::uint32_t>(n);
        return true;
      }
    }
    return array_slow(count);
  }
  // An array of exactly `expected` elements.
  bool array_of(std::uint32_t expected) {
    std::uint32_t n = 0;
    if (!array(n)) return false;
    return n == expected || count_mismatch(expected, n);
  }
  bool map(std::uint32_t& count) {
    if (!failed_ && pos_ < size_ && (data_[pos_] & 0xf0) == 0x80) {
      const std::size_t n = data_[pos_] & 0x0f;
      if (size_ - pos_ - 1 >= 2 * n) {
        ++pos_;
        count = static_cast<std::uint32_t>(n);
        return true;
      }
    }
    return map_slow(count);
  }
  bool skip();

  // The raw bytes read since `start` (a position()), as a view into the frame.
  Bytes slice_from(std::size_t start) const { return buffer_.slice(start, pos_ - start); }

  MsgKind peek() const {
    if (pos_ >= size_) return MsgKind::kEnd;
    const std::uint8_t b = data_[pos_];
    if (b <= 0x7f) return MsgKind::kUInt;
    if (b <= 0x8f) return MsgKind::kMap;
    if (b <= 0x9f) return MsgKind::kArray;
    if (b <= 0xbf) return MsgKind::kStr;
    if (b >= 0xe0) return MsgKind::kInt;
    return peek_marker(b);
  }
  // The bytes not yet read (none once failed), for a decoder that scans a type's usual form in
  // one pass and otherwise falls back to the checked calls above (read_value(TensorIr)).
  // `advance` moves past bytes such a scan accepted, at most remaining().
  const std::uint8_t* cursor() const { return failed_ ? data_ + size_ : data_ + pos_; }
  const std::uint8_t* end() const { return data_ + size_; }
  void advance(std::size_t n) { pos_ += n; }
  bool at_end() const { return pos_ == size_; }
  std::size_t remaining() const { return size_ - pos_; }
  std::size_t position() const { return pos_; }
  bool failed() const { return failed_; }

  // The decode path shown in errors: "Task > RegisterOperation[1] > NumericFloat[1] > AddScalar".
  // A store into a fixed array: every field of every frame passes here, and a vector's
  // push_back (out of line) was 2.8% of the host's CPU in Burn's LU. Beyond kPathDepth only the
  // depth is counted, and the path in an error ends in "…".
  void push(const char* name) { push_segment({name, -1}); }
  void push_index(std::int64_t index) { push_segment({nullptr, index}); }
  void pop() { --depth_; }

  bool fail(std::string message);
  template <class... Args>
  bool failf(fmt::format_string<Args...> format, Args&&... args) {
    return fail(fmt::format(format, std::forward<Args>(args)...));
  }
  // Describes what is next, for "expected X, got Y" messages.
  std::string describe_next() const;

  const Error& error() const { return error_; }
  Error take_error() { return std::move(error_); }

 private:
  struct Segment {
    const char* name;
    std::int64_t index;
  };
  bool need(std::size_t n) { return (!failed_ && size_ - pos_ >= n) || need_slow(n); }
  bool need_slow(std::size_t n);
  static MsgKind peek_marker(std::uint8_t b);
  bool u64_slow(std::uint64_t& out);
  bool i64_slow(std::int64_t& out);
  bool str_slow(std::string_view& out);
  bool array_slow(std::uint32_t& count);
  bool map_slow(std::uint32_t& count);
  bool count_mismatch(std::uint32_t expected, std::uint32_t got);
  bool skip_depth(std::uint32_t depth);
  bool read_be(std::size_t n, std::uint64_t& out) {
    if (!need(n)) return false;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | data_[pos_ + i];
    pos_ += n;
    out = v;
    return true;
  }
  std::string path_string() const;

  Bytes buffer_;
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  DecodeLimits limits_;
  static constexpr std::size_t kPathDepth = 32;
  void push_segment(Segment s) {
    if (depth_ < kPathDepth) path_[depth_] = s;
    ++depth_;
  }
  std::array<Segment, kPathDepth> path_{};
  std::size_t depth_ = 0;
  bool failed_ = false;
  Error error_;
};

// RAII path segment.
class PathGuard {
 public:
  PathGuard(Reader& r, const char* name) : r_(r) { r_.push(name); }
  PathGuard(Reader& r, std::int64_t index) : r_(r) { r_.push_index(index); }
  ~PathGuard() { r_.pop(); }
  PathGuard(const PathGuard&) = delete;
  PathGuard& operator=(const PathGuard&) = delete;

 private:
  Reader& r_;
};

// Appends msgpack in the forms rmp-serde writes: smallest integer encodings (non-negative signed
// values in the unsigned forms), f64 always as float64, str/bin/array/map with the smallest header.
class Writer {
 public:
  Writer();
  explicit Writer(std::vector<std::uint8_t>& out);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void nil();
  void boolean(bool v);
  void u64(std::uint64_t v);
  void i64(std::int64_t v);
  void f64(double v);
  void f32(float v);
  void str(std::string_view v);
  void bin(const void* data, std::size_t size);
  // In segmented mode (below) a payload of at least the threshold is not copied: the bytes so far
  // become one segment and `v` itself (sharing its owner) the next.
  void bin(const Bytes& v);
  void array(std::uint32_t count);
  void map(std::uint32_t count);
  // Bytes already in msgpack form.
  void raw(const void* data, std::size_t size);

  // The protocol version whose layouts are written where a struct's layout changed between
  // versions (FieldLayouts); Burn 0.22.1's by default.
  void set_protocol(std::uint16_t version) { protocol_ = version; }
  std::uint16_t protocol() const { return protocol_; }

  std::vector<std::uint8_t>& buffer() { return *out_; }
  std::vector<std::uint8_t> take() { return std::move(*out_); }

  // Scatter-gather output: large `bin` payloads stay views of their storage, so a message that
  // carries a tensor is written from the tensor's own memory (docs/decisions.md: exclusive blocks,
  // uploads without a copy). `take_segments` returns the message as consecutive segments.
  void segment_payloads_from(std::size_t threshold) { segment_threshold_ = threshold; }
  std::vector<Bytes> take_segments();

  // msgpack-cxx's packer calls this.
  void write(const char* data, std::size_t size);

 private:
  void flush_segment();

  std::vector<std::uint8_t> own_;
  std::vector<std::uint8_t>* out_;
  std::size_t segment_threshold_ = 0;  // 0: one contiguous buffer
  std::uint16_t protocol_ = 2;
  std::vector<Bytes> segments_;
};

}  // namespace tb::ir
