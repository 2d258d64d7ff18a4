// Codec for the primitives every wire type is made of: bool, the integers (narrowed with a range
// check, since msgpack does not say how wide the Rust field is), floats, strings, bytes, unit.
#include "codec_values.hpp"

namespace tb::ir {

namespace {
template <class U>
bool read_narrow(Reader& r, U& v) {
  std::uint64_t wide = 0;
  if (!r.u64(wide)) return false;
  if (wide > std::numeric_limits<U>::max()) {
    return r.failf("integer {} does not fit in {} bits", wide, sizeof(U) * 8);
  }
  v = static_cast<U>(wide);
  return true;
}
}  // namespace

bool read_value(Reader& r, bool& v) {
  return r.boolean(v);
}
bool read_value(Reader& r, std::uint8_t& v) {
  return read_narrow(r, v);
}
bool read_value(Reader& r, std::uint16_t& v) {
  return read_narrow(r, v);
}
bool read_value(Reader& r, std::uint32_t& v) {
  return read_narrow(r, v);
}
bool read_value(Reader& r, std::uint64_t& v) {
  return r.u64(v);
}
bool read_value(Reader& r, std::int64_t& v) {
  return r.i64(v);
}
bool read_value(Reader& r, double& v) {
  return r.f64(v);
}
bool read_value(Reader& r, float& v) {
  double d = 0;
  if (!r.f64(d)) return false;
  v = static_cast<float>(d);
  return true;
}
bool read_value(Reader& r, std::string& v) {
  std::string_view s;
  if (!r.str(s)) return false;
  v.assign(s);
  return true;
}
bool read_value(Reader& r, Bytes& v) {
  return r.bin(v);
}
bool read_value(Reader& r, std::monostate&) {
  return r.nil();
}

void write_value(Writer& w, bool v) {
  w.boolean(v);
}
void write_value(Writer& w, std::uint8_t v) {
  w.u64(v);
}
void write_value(Writer& w, std::uint16_t v) {
  w.u64(v);
}
void write_value(Writer& w, std::uint32_t v) {
  w.u64(v);
}
void write_value(Writer& w, std::uint64_t v) {
  w.u64(v);
}
void write_value(Writer& w, std::int64_t v) {
  w.i64(v);
}
void write_value(Writer& w, double v) {
  w.f64(v);
}
void write_value(Writer& w, float v) {
  w.f32(v);
}
void write_value(Writer& w, const std::string& v) {
  w.str(v);
}
void write_value(Writer& w, const Bytes& v) {
  w.bin(v);
}
void write_value(Writer& w, std::monostate) {
  w.nil();
}

}  // namespace tb::ir
