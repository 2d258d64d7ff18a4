// Writer: msgpack in the forms rmp-serde writes (msgpack_io.hpp), contiguous or segmented.
#include <cstring>

#include <msgpack.hpp>

#include "torchbridge/ir/msgpack_io.hpp"

namespace tb::ir {

namespace {
using Packer = msgpack::packer<Writer>;
}  // namespace

Writer::Writer() : out_(&own_) {}
Writer::Writer(std::vector<std::uint8_t>& out) : out_(&out) {}
Writer::~Writer() = default;

void Writer::write(const char* data, std::size_t size) {
  out_->insert(out_->end(), reinterpret_cast<const std::uint8_t*>(data),
               reinterpret_cast<const std::uint8_t*>(data) + size);
}

void Writer::raw(const void* data, std::size_t size) {
  write(static_cast<const char*>(data), size);
}

void Writer::nil() {
  out_->push_back(0xc0);
}
void Writer::boolean(bool v) {
  out_->push_back(v ? 0xc3 : 0xc2);
}
void Writer::u64(std::uint64_t v) {
  if (v < 128) {
    out_->push_back(static_cast<std::uint8_t>(v));
    return;
  }
  Packer(*this).pack_uint64(v);
}
void Writer::i64(std::int64_t v) {
  if (v >= 0 && v < 128) {
    out_->push_back(static_cast<std::uint8_t>(v));
    return;
  }
  Packer(*this).pack_int64(v);
}
// By hand: msgpack-cxx 4 packs integral doubles as integers, rmp-serde always writes float64.
void Writer::f64(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, 8);
  std::uint8_t buf[9] = {0xcb};
  for (int i = 0; i < 8; ++i) buf[1 + i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
  out_->insert(out_->end(), buf, buf + 9);
}
void Writer::f32(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, 4);
  std::uint8_t buf[5] = {0xca};
  for (int i = 0; i < 4; ++i) buf[1 + i] = static_cast<std::uint8_t>(bits >> (24 - 8 * i));
  out_->insert(out_->end(), buf, buf + 5);
}
void Writer::str(std::string_view v) {
  Packer p(*this);
  p.pack_str(static_cast<std::uint32_t>(v.size()));
  p.pack_str_body(v.data(), static_cast<std::uint32_t>(v.size()));
}
void Writer::bin(const void* data, std::size_t size) {
  Packer p(*this);
  p.pack_bin(static_cast<std::uint32_t>(size));
  p.pack_bin_body(static_cast<const char*>(data), static_cast<std::uint32_t>(size));
}
void Writer::bin(const Bytes& v) {
  if (segment_threshold_ == 0 || v.size() < segment_threshold_) return bin(v.data(), v.size());
  Packer(*this).pack_bin(static_cast<std::uint32_t>(v.size()));
  flush_segment();
  segments_.push_back(v);
}
void Writer::flush_segment() {
  if (out_->empty()) return;
  segments_.push_back(Bytes::from_vector(std::move(*out_)));
  out_->clear();
}
std::vector<Bytes> Writer::take_segments() {
  flush_segment();
  return std::move(segments_);
}
void Writer::array(std::uint32_t count) {
  if (count < 16) {
    out_->push_back(static_cast<std::uint8_t>(0x90 | count));
    return;
  }
  Packer(*this).pack_array(count);
}
void Writer::map(std::uint32_t count) {
  if (count < 16) {
    out_->push_back(static_cast<std::uint8_t>(0x80 | count));
    return;
  }
  Packer(*this).pack_map(count);
}

}  // namespace tb::ir
