// Codec for Burn's hand-shaped value types (data-carrying enums, TensorData, ...); the
// primitives they are made of are codec_primitives.cpp's.
#include "codec_values.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::ir {

bool read_enum_head(Reader& r, const char* enum_name, std::string_view& variant,
                    bool& has_payload) {
  const MsgKind kind = r.peek();
  if (kind == MsgKind::kStr) {
    has_payload = false;
    return r.str(variant);
  }
  if (kind == MsgKind::kMap) {
    std::uint32_t n = 0;
    if (!r.map(n)) return false;
    if (n != 1) {
      return r.failf("expected a one-entry map for enum {}, got {} entries", enum_name, n);
    }
    has_payload = true;
    return r.str(variant);
  }
  return r.failf("expected enum {} (a string or a one-entry map), got {}", enum_name,
                 r.describe_next());
}

bool unknown_variant(Reader& r, const char* enum_name, std::string_view variant) {
  return r.failf("unknown variant \"{}\" of enum {}", variant, enum_name);
}

namespace {
// Reads a variant that must carry a payload; `read` reads it.
template <class F>
bool expect_payload(Reader& r, bool has_payload, const char* enum_name, std::string_view variant,
                    F&& read) {
  if (!has_payload) return r.failf("variant {}::{} needs a payload", enum_name, variant);
  PathGuard g(r, enum_name);
  return read();
}
}  // namespace

// ---- DType ---------------------------------------------------------------------------------
bool read_value(Reader& r, DType& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, "DType", name, has_payload)) return false;
  const int i = find_name<EnumNames<DTypeKind>::kNames>(name);
  if (i < 0) return unknown_variant(r, "DType", name);
  v = DType(static_cast<DTypeKind>(i));
  if (v.kind == DTypeKind::Bool) {
    return expect_payload(r, has_payload, "DType", name,
                          [&] { return read_value(r, v.bool_store); });
  }
  if (v.kind == DTypeKind::QFloat) {
    return expect_payload(r, has_payload, "DType", name, [&] { return read_value(r, v.scheme); });
  }
  return !has_payload || r.nil();
}

void write_value(Writer& w, const DType& v) {
  if (v.kind == DTypeKind::Bool) {
    w.map(1);
    w.str("Bool");
    write_value(w, v.bool_store);
  } else if (v.kind == DTypeKind::QFloat) {
    w.map(1);
    w.str("QFloat");
    write_value(w, v.scheme);
  } else {
    w.str(enum_name(v.kind));
  }
}

bool read_value(Reader& r, QuantStore& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, "QuantStore", name, has_payload)) return false;
  const int i = find_name<EnumNames<QuantStoreKind>::kNames>(name);
  if (i < 0) return unknown_variant(r, "QuantStore", name);
  v.kind = static_cast<QuantStoreKind>(i);
  v.packing_dim = 0;
  if (v.kind == QuantStoreKind::Native) return !has_payload || r.nil();
  return expect_payload(r, has_payload, "QuantStore", name,
                        [&] { return read_value(r, v.packing_dim); });
}

void write_value(Writer& w, const QuantStore& v) {
  if (v.kind == QuantStoreKind::Native) {
    w.str("Native");
    return;
  }
  w.map(1);
  w.str(enum_name(v.kind));
  w.u64(v.packing_dim);
}

// ---- ScalarIr, Distribution, PadModeIr -------------------------------------------------------
bool read_value(Reader& r, ScalarIr& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, "ScalarIr", name, has_payload)) return false;
  const int i = find_name<EnumNames<ScalarKind>::kNames>(name);
  if (i < 0) return unknown_variant(r, "ScalarIr", name);
  return expect_payload(r, has_payload, "ScalarIr", name, [&] {
    switch (static_cast<ScalarKind>(i)) {
      case ScalarKind::Float:
        return read_value(r, v.value.emplace<double>());
      case ScalarKind::Int:
        return read_value(r, v.value.emplace<std::int64_t>());
      case ScalarKind::UInt:
        return read_value(r, v.value.emplace<std::uint64_t>());
      case ScalarKind::Bool:
        return read_value(r, v.value.emplace<bool>());
    }
    return false;
  });
}

void write_value(Writer& w, const ScalarIr& v) {
  w.map(1);
  w.str(enum_name(v.kind()));
  std::visit([&](auto x) { write_value(w, x); }, v.value);
}

bool read_value(Reader& r, Distribution& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, "Distribution", name, has_payload)) return false;
  const int i = find_name<EnumNames<DistributionKind>::kNames>(name);
  if (i < 0) return unknown_variant(r, "Distribution", name);
  v = Distribution{static_cast<DistributionKind>(i), 0, 0};
  switch (v.kind) {
    case DistributionKind::Default:
      return !has_payload || r.nil();
    case DistributionKind::Bernoulli:
      return expect_payload(r, has_payload, "Distribution", name, [&] { return r.f64(v.a); });
    case DistributionKind::Uniform:
    case DistributionKind::Normal:
      return expect_payload(r, has_payload, "Distribution", name,
                            [&] { return r.array_of(2) && r.f64(v.a) && r.f64(v.b); });
  }
  return false;
}

void write_value(Writer& w, const Distribution& v) {
  if (v.kind == DistributionKind::Default) {
    w.str("Default");
    return;
  }
  w.map(1);
  w.str(enum_name(v.kind));
  if (v.kind == DistributionKind::Bernoulli) {
    w.f64(v.a);
  } else {
    w.array(2);
    w.f64(v.a);
    w.f64(v.b);
  }
}

bool read_value(Reader& r, PadModeIr& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, "PadModeIr", name, has_payload)) return false;
  const int i = find_name<EnumNames<PadModeKind>::kNames>(name);
  if (i < 0) return unknown_variant(r, "PadModeIr", name);
  v.kind = static_cast<PadModeKind>(i);
  v.value = ScalarIr{};
  if (v.kind != PadModeKind::Constant) return !has_payload || r.nil();
  return expect_payload(r, has_payload, "PadModeIr", name, [&] { return read_value(r, v.value); });
}

void write_value(Writer& w, const PadModeIr& v) {
  if (v.kind != PadModeKind::Constant) {
    w.str(enum_name(v.kind));
    return;
  }
  w.map(1);
  w.str("Constant");
  write_value(w, v.value);
}

// A unit variant, or {"TfCropAndResize": [roi, extrapolation_value]} (a struct variant).
bool read_value(Reader& r, CoordinateTransformModeIr& v) {
  constexpr const char* kEnum = "CoordinateTransformModeIr";
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, kEnum, name, has_payload)) return false;
  const int i = find_name<EnumNames<CoordinateTransformKind>::kNames>(name);
  if (i < 0) return unknown_variant(r, kEnum, name);
  v = {};
  v.kind = static_cast<CoordinateTransformKind>(i);
  if (v.kind != CoordinateTransformKind::TfCropAndResize) return !has_payload || r.nil();
  return expect_payload(r, has_payload, kEnum, name, [&] {
    if (!r.array_of(2)) return false;
    PathGuard g(r, name.data());
    return read_value(r, v.roi) && read_value(r, v.extrapolation_value);
  });
}

void write_value(Writer& w, const CoordinateTransformModeIr& v) {
  if (v.kind != CoordinateTransformKind::TfCropAndResize) {
    w.str(enum_name(v.kind));
    return;
  }
  w.map(1);
  w.str("TfCropAndResize");
  w.array(2);
  write_value(w, v.roi);
  write_value(w, v.extrapolation_value);
}

// ---- TensorData ------------------------------------------------------------------------------
bool read_value(Reader& r, TensorData& v) {
  if (!r.array_of(3)) return false;
  {
    PathGuard g(r, "bytes");
    if (!r.bin(v.bytes)) return false;
  }
  {
    PathGuard g(r, "shape");
    if (!read_value(r, v.shape)) return false;
  }
  {
    PathGuard g(r, "dtype");
    if (!read_value(r, v.dtype)) return false;
  }
  // Burn's own deserializer refuses a byte length that disagrees with shape and dtype (quantized
  // data excepted, whose length it does not check either).
  if (!v.dtype.is_quantized()) {
    std::uint64_t numel = 1;
    for (auto d : v.shape) {
      if (d != 0 && numel > std::numeric_limits<std::uint64_t>::max() / d) {
        return r.fail("TensorData shape overflows");
      }
      numel *= d;
    }
    const std::uint64_t expected = numel * v.dtype.element_size();
    if (v.bytes.size() != expected) {
      return r.failf("TensorData of shape {} and dtype {} needs {} bytes, got {}",
                     fmt::join(v.shape, "x"), v.dtype.name(), expected, v.bytes.size());
    }
  }
  return true;
}

void write_value(Writer& w, const TensorData& v) {
  w.array(3);
  write_value(w, v.bytes);
  write_value(w, v.shape);
  write_value(w, v.dtype);
}

// ---- Protocol enums ----------------------------------------------------------------------------
bool read_value(Reader& r, Peer& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, "PeerId", name, has_payload)) return false;
  const int i = find_name<EnumNames<PeerKind>::kNames>(name);
  if (i < 0) return unknown_variant(r, "PeerId", name);
  v.kind = static_cast<PeerKind>(i);
  return expect_payload(r, has_payload, "PeerId", name, [&] {
    if (v.kind == PeerKind::WebSocket) return read_value(r, v.address);
    const std::size_t start = r.position();
    if (!r.skip()) return false;
    v.iroh_raw = r.slice_from(start);
    return true;
  });
}

void write_value(Writer& w, const Peer& v) {
  w.map(1);
  w.str(enum_name(v.kind));
  if (v.kind == PeerKind::WebSocket) {
    write_value(w, v.address);
  } else {
    w.raw(v.iroh_raw.data(), v.iroh_raw.size());
  }
}

bool read_value(Reader& r, SessionRefusal& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, "SessionRefusal", name, has_payload)) return false;
  const int i = find_name<EnumNames<RefusalKind>::kNames>(name);
  if (i < 0) return unknown_variant(r, "SessionRefusal", name);
  v.kind = static_cast<RefusalKind>(i);
  v.value = 0;
  if (v.kind == RefusalKind::Unauthorized) return !has_payload || r.nil();
  return expect_payload(r, has_payload, "SessionRefusal", name, [&] {
    if (!r.array_of(1)) return false;
    if (v.kind == RefusalKind::IncompatibleProtocol) {
      std::uint16_t version = 0;
      if (!read_value(r, version)) return false;
      v.value = version;
      return true;
    }
    return read_value(r, v.value);
  });
}

void write_value(Writer& w, const SessionRefusal& v) {
  if (v.kind == RefusalKind::Unauthorized) {
    w.str("Unauthorized");
    return;
  }
  w.map(1);
  w.str(enum_name(v.kind));
  w.array(1);
  w.u64(v.value);
}

bool read_value(Reader& r, ExecutionError& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, "ExecutionError", name, has_payload)) return false;
  const int i = find_name<EnumNames<ExecutionErrorKind>::kNames>(name);
  if (i < 0) return unknown_variant(r, "ExecutionError", name);
  v.kind = static_cast<ExecutionErrorKind>(i);
  return expect_payload(r, has_payload, "ExecutionError", name,
                        [&] { return r.array_of(1) && read_value(r, v.reason); });
}

void write_value(Writer& w, const ExecutionError& v) {
  w.map(1);
  w.str(enum_name(v.kind));
  w.array(1);
  w.str(v.reason);
}

bool read_value(Reader& r, DTypeUsageSet& v) {
  std::uint64_t bits = 0;
  if (!r.u64(bits)) return false;
  if (bits > 7) return r.failf("DTypeUsageSet has unknown bits: {:#x}", bits);
  v.bits = static_cast<std::uint8_t>(bits);
  return true;
}

void write_value(Writer& w, DTypeUsageSet v) {
  w.u64(v.bits);
}

bool read_value(Reader& r, ProfileToken& v) {
  // `opened_on` is #[serde(default)]: a one-element array is a token opened on place 0.
  std::uint32_t n = 0;
  if (!r.array(n)) return false;
  if (n != 1 && n != 2) return r.failf("expected array of 1 or 2 elements, got {}", n);
  v.opened_on = 0;
  return r.u64(v.id) && (n == 1 || r.u64(v.opened_on));
}

// ---- Instantiations ------------------------------------------------------------------------
#define TB_CODEC_INSTANTIATE(T)                                  \
  template <>                                                    \
  Result<T> decode<T>(const Bytes& bytes, DecodeLimits limits) { \
    return decode_impl<T>(bytes, limits, #T);                    \
  }                                                              \
  template <>                                                    \
  void encode<T>(Writer & writer, const T& value) {              \
    write_value(writer, value);                                  \
  }
TB_CODEC_INSTANTIATE(DType)
TB_CODEC_INSTANTIATE(TensorIr)
TB_CODEC_INSTANTIATE(TensorData)
TB_CODEC_INSTANTIATE(DeviceSettings)
TB_CODEC_INSTANTIATE(QuantScheme)
TB_CODEC_INSTANTIATE(GraphBindings)
TB_CODEC_INSTANTIATE(SessionInit)
TB_CODEC_INSTANTIATE(SessionInfo)
TB_CODEC_INSTANTIATE(ScalarIr)
TB_CODEC_INSTANTIATE(StreamId)
TB_CODEC_INSTANTIATE(TensorId)
TB_CODEC_INSTANTIATE(Slice)

}  // namespace tb::ir
