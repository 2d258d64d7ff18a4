// read_value / write_value for every wire type. Private to tb_ir: users call decode<T>/encode<T>.
//
// All overloads live in tb::ir so that argument-dependent lookup finds them from the generic
// templates; overloads for std types are declared up front for the same reason.
#pragma once

#include <array>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "name_table.hpp"
#include "torchbridge/ir/msgpack_io.hpp"
#include "torchbridge/ir/protocol.hpp"

namespace tb::ir {

// ---- Declarations (std types and primitives) ----------------------------------------------
bool read_value(Reader& r, bool& v);
bool read_value(Reader& r, std::uint8_t& v);
bool read_value(Reader& r, std::uint16_t& v);
bool read_value(Reader& r, std::uint32_t& v);
bool read_value(Reader& r, std::uint64_t& v);
bool read_value(Reader& r, std::int64_t& v);
bool read_value(Reader& r, double& v);
bool read_value(Reader& r, float& v);
bool read_value(Reader& r, std::string& v);
bool read_value(Reader& r, Bytes& v);
bool read_value(Reader& r, std::monostate& v);
template <class T>
bool read_value(Reader& r, std::optional<T>& v);
template <class T>
bool read_value(Reader& r, std::vector<T>& v);
template <class T, std::size_t N>
bool read_value(Reader& r, std::array<T, N>& v);
template <class A, class B>
bool read_value(Reader& r, std::pair<A, B>& v);
template <class E>
std::enable_if_t<kIsUnitEnum<E>, bool> read_value(Reader& r, E& v);
template <class T>
std::enable_if_t<kHasFieldList<T>, bool> read_value(Reader& r, T& v);
template <class T>
bool read_value(Reader& r, WireResult<T>& v);

void write_value(Writer& w, bool v);
void write_value(Writer& w, std::uint8_t v);
void write_value(Writer& w, std::uint16_t v);
void write_value(Writer& w, std::uint32_t v);
void write_value(Writer& w, std::uint64_t v);
void write_value(Writer& w, std::int64_t v);
void write_value(Writer& w, double v);
void write_value(Writer& w, float v);
void write_value(Writer& w, const std::string& v);
void write_value(Writer& w, const Bytes& v);
void write_value(Writer& w, std::monostate);
template <class T>
void write_value(Writer& w, const std::optional<T>& v);
template <class T>
void write_value(Writer& w, const std::vector<T>& v);
template <class T, std::size_t N>
void write_value(Writer& w, const std::array<T, N>& v);
template <class A, class B>
void write_value(Writer& w, const std::pair<A, B>& v);
template <class E>
std::enable_if_t<kIsUnitEnum<E>, void> write_value(Writer& w, E v);
template <class T>
std::enable_if_t<kHasFieldList<T>, void> write_value(Writer& w, const T& v);
template <class T>
void write_value(Writer& w, const WireResult<T>& v);

// ---- Data-carrying enums and other hand-shaped types (codec_types.cpp) ---------------------
bool read_value(Reader& r, DType& v);
bool read_value(Reader& r, QuantStore& v);
bool read_value(Reader& r, ScalarIr& v);
bool read_value(Reader& r, Distribution& v);
bool read_value(Reader& r, PadModeIr& v);
bool read_value(Reader& r, CoordinateTransformModeIr& v);
bool read_value(Reader& r, TensorData& v);
bool read_value(Reader& r, Peer& v);
bool read_value(Reader& r, SessionRefusal& v);
bool read_value(Reader& r, ExecutionError& v);
bool read_value(Reader& r, DTypeUsageSet& v);
bool read_value(Reader& r, ProfileToken& v);
void write_value(Writer& w, const DType& v);
void write_value(Writer& w, const QuantStore& v);
void write_value(Writer& w, const ScalarIr& v);
void write_value(Writer& w, const Distribution& v);
void write_value(Writer& w, const PadModeIr& v);
void write_value(Writer& w, const CoordinateTransformModeIr& v);
void write_value(Writer& w, const TensorData& v);
void write_value(Writer& w, const Peer& v);
void write_value(Writer& w, const SessionRefusal& v);
void write_value(Writer& w, const ExecutionError& v);
void write_value(Writer& w, DTypeUsageSet v);

// codec_tensor.cpp: every tensor of every op; a one-pass scan of its usual form.
bool read_value(Reader& r, TensorIr& v);
// codec_ops.cpp
bool read_value(Reader& r, OperationIr& v);
void write_value(Writer& w, const OperationIr& v);
// codec_protocol.cpp
bool read_value(Reader& r, Task& v);
bool read_value(Reader& r, RemoteMessage& v);
bool read_value(Reader& r, TaskResponseContent& v);
void write_value(Writer& w, const Task& v);
void write_value(Writer& w, const RemoteMessage& v);
void write_value(Writer& w, const TaskResponseContent& v);
bool read_value(Reader& r, DataMessage& v);
void write_value(Writer& w, const DataMessage& v);

// ---- Enum helpers --------------------------------------------------------------------------
// Reads the head of an externally tagged enum value: a bare string (a unit variant; has_payload
// false) or a one-entry map whose value, the payload, is next (has_payload true).
bool read_enum_head(Reader& r, const char* enum_name, std::string_view& variant, bool& has_payload);
bool unknown_variant(Reader& r, const char* enum_name, std::string_view variant);

// ---- Template definitions -----------------------------------------------------------------
template <class T>
bool read_value(Reader& r, std::optional<T>& v) {
  if (r.try_nil()) {
    v.reset();
    return true;
  }
  return read_value(r, v.emplace());
}

template <class T>
bool read_value(Reader& r, std::vector<T>& v) {
  std::uint32_t n = 0;
  if (!r.array(n)) return false;
  v.clear();
  // n is bounded by the bytes left, not by element size: grow as elements arrive.
  v.reserve(std::min<std::uint32_t>(n, 4096));
  for (std::uint32_t i = 0; i < n; ++i) {
    PathGuard g(r, static_cast<std::int64_t>(i));
    if constexpr (std::is_same_v<T, RemoteMessage>) {
      // A client frame's messages: built holding an empty Task (see fresh_alternative).
      if (!read_value(r, v.emplace_back(std::in_place_index<0>, std::in_place_index<0>))) {
        return false;
      }
    } else if (!read_value(r, v.emplace_back())) {
      return false;
    }
  }
  return true;
}

template <class T, std::size_t N>
bool read_value(Reader& r, std::array<T, N>& v) {
  if (!r.array_of(N)) return false;
  for (std::size_t i = 0; i < N; ++i) {
    PathGuard g(r, static_cast<std::int64_t>(i));
    if (!read_value(r, v[i])) return false;
  }
  return true;
}

template <class A, class B>
bool read_value(Reader& r, std::pair<A, B>& v) {
  if (!r.array_of(2)) return false;
  return read_value(r, v.first) && read_value(r, v.second);
}

template <class E>
std::enable_if_t<kIsUnitEnum<E>, bool> read_value(Reader& r, E& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, EnumNames<E>::kName, name, has_payload)) return false;
  const int i = find_name<EnumNames<E>::kNames>(name);
  if (i < 0) return unknown_variant(r, EnumNames<E>::kName, name);
  // A unit variant may arrive as {"Name": nil}; rmp-serde accepts it, so do we.
  if (has_payload && !r.nil()) return false;
  v = static_cast<E>(i);
  return true;
}

// A newtype wrapper (a one-field struct serialised as its field: Task::Seed, the responses).
template <class T>
struct IsNewtype : std::false_type {};
template <>
struct IsNewtype<SeedTask> : std::true_type {};
#define TB_RESPONSE_NEWTYPE(V, P) \
  template <>                     \
  struct IsNewtype<P> : std::true_type {};
TB_RESPONSES(TB_RESPONSE_NEWTYPE)
TB_DATA_MESSAGES(TB_RESPONSE_NEWTYPE)
#undef TB_RESPONSE_NEWTYPE

template <class T>
std::enable_if_t<kHasFieldList<T>, bool> read_value(Reader& r, T& v) {
  if constexpr (IsNewtype<T>::value) {
    static_assert(FieldList<T>::kCount == 1);
    return FieldList<T>::visit(v, [&](const char*, auto& field) { return read_value(r, field); });
  } else if constexpr (FieldLayouts<T>::kSince == 0) {
    if (!r.array_of(FieldList<T>::kCount)) return false;
    return FieldList<T>::visit(v, [&](const char* name, auto& field) {
      PathGuard g(r, name);
      return read_value(r, field);
    });
  } else {
    // Two layouts of different lengths: the length says which arrived.
    using L = FieldLayouts<T>;
    constexpr std::size_t kOldCount = FieldList<T>::kCount - bit_count(L::kNew);
    constexpr std::size_t kNewCount = FieldList<T>::kCount - bit_count(L::kOld);
    static_assert(kOldCount != kNewCount, "a layout change must change the field count");
    std::uint32_t n = 0;
    if (!r.array(n)) return false;
    if (n != kOldCount && n != kNewCount) {
      return r.failf("expected an array of {} (protocol < {}) or {} elements for {}, got {}",
                     kOldCount, L::kSince, kNewCount, FieldList<T>::kName, n);
    }
    const bool old_layout = n == kOldCount;
    const std::uint64_t skip = old_layout ? L::kNew : L::kOld;
    std::size_t i = 0;
    const bool ok = FieldList<T>::visit(v, [&](const char* name, auto& field) {
      if ((skip >> i++) & 1) return true;
      PathGuard g(r, name);
      return read_value(r, field);
    });
    if (ok) L::complete(v, old_layout);
    return ok;
  }
}

template <class T>
bool read_value(Reader& r, WireResult<T>& v) {
  std::uint32_t n = 0;
  if (!r.map(n)) return false;
  if (n != 1) return r.failf("expected a one-entry map for enum Result, got {} entries", n);
  std::string_view key;
  if (!r.str(key)) return false;
  if (key == "Ok") {
    PathGuard g(r, "Ok");
    return read_value(r, v.template emplace<0>());
  }
  if (key == "Err") {
    PathGuard g(r, "Err");
    return read_value(r, v.template emplace<1>());
  }
  return unknown_variant(r, "Result", key);
}

template <class T>
void write_value(Writer& w, const std::optional<T>& v) {
  if (v) {
    write_value(w, *v);
  } else {
    w.nil();
  }
}

template <class T>
void write_value(Writer& w, const std::vector<T>& v) {
  w.array(static_cast<std::uint32_t>(v.size()));
  for (const auto& e : v) write_value(w, e);
}

template <class T, std::size_t N>
void write_value(Writer& w, const std::array<T, N>& v) {
  w.array(N);
  for (const auto& e : v) write_value(w, e);
}

template <class A, class B>
void write_value(Writer& w, const std::pair<A, B>& v) {
  w.array(2);
  write_value(w, v.first);
  write_value(w, v.second);
}

template <class E>
std::enable_if_t<kIsUnitEnum<E>, void> write_value(Writer& w, E v) {
  w.str(enum_name(v));
}

template <class T>
std::enable_if_t<kHasFieldList<T>, void> write_value(Writer& w, const T& v) {
  std::uint64_t skip = 0;
  if constexpr (FieldLayouts<T>::kSince != 0) {
    skip = w.protocol() < FieldLayouts<T>::kSince ? FieldLayouts<T>::kNew : FieldLayouts<T>::kOld;
  }
  if constexpr (!IsNewtype<T>::value) {
    w.array(static_cast<std::uint32_t>(FieldList<T>::kCount - bit_count(skip)));
  }
  std::size_t i = 0;
  FieldList<T>::visit(v, [&](const char*, const auto& field) {
    if (!((skip >> i++) & 1)) write_value(w, field);
    return true;
  });
}

template <class T>
void write_value(Writer& w, const WireResult<T>& v) {
  w.map(1);
  if (v.index() == 0) {
    w.str("Ok");
    write_value(w, std::get<0>(v));
  } else {
    w.str("Err");
    write_value(w, std::get<1>(v));
  }
}

// decode<T> / encode<T> bodies, instantiated where the type's overloads are visible.
template <class T>
Result<T> decode_impl(const Bytes& bytes, DecodeLimits limits, const char* root) {
  Reader r(bytes, limits);
  T value{};
  bool ok = false;
  {
    PathGuard g(r, root);
    ok = read_value(r, value);
    if (ok && !r.at_end()) ok = r.failf("{} trailing byte(s) after the value", r.remaining());
  }
  if (!ok) return r.take_error();
  return value;
}

}  // namespace tb::ir
