#include "torchbridge/ir/format.hpp"

namespace tb::ir {

namespace {
void append(FormatBuffer& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}
template <class... Args>
void appendf(FormatBuffer& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}
}  // namespace

void format_value(FormatBuffer& out, const std::string& v) {
  appendf(out, "{:?}", v);
}
void format_value(FormatBuffer& out, std::monostate) {
  append(out, "()");
}

void format_value(FormatBuffer& out, const DType& v) {
  if (v.kind == DTypeKind::QFloat) {
    append(out, "qfloat(");
    format_value(out, v.scheme);
    out.push_back(')');
  } else {
    append(out, v.name());
  }
}

void format_value(FormatBuffer& out, const QuantStore& v) {
  append(out, enum_name(v.kind));
  if (v.kind != QuantStoreKind::Native) appendf(out, "({})", v.packing_dim);
}

void format_value(FormatBuffer& out, const ScalarIr& v) {
  std::visit(
      [&](auto x) {
        using X = decltype(x);
        if constexpr (std::is_same_v<X, double>) {
          appendf(out, "{}f", x);
        } else if constexpr (std::is_same_v<X, std::int64_t>) {
          appendf(out, "{}i", x);
        } else if constexpr (std::is_same_v<X, std::uint64_t>) {
          appendf(out, "{}u", x);
        } else {
          append(out, x ? "true" : "false");
        }
      },
      v.value);
}

void format_value(FormatBuffer& out, const Distribution& v) {
  switch (v.kind) {
    case DistributionKind::Default:
      append(out, "Default");
      break;
    case DistributionKind::Bernoulli:
      appendf(out, "Bernoulli({})", v.a);
      break;
    case DistributionKind::Uniform:
      appendf(out, "Uniform({}, {})", v.a, v.b);
      break;
    case DistributionKind::Normal:
      appendf(out, "Normal({}, {})", v.a, v.b);
      break;
  }
}

void format_value(FormatBuffer& out, const PadModeIr& v) {
  append(out, enum_name(v.kind));
  if (v.kind == PadModeKind::Constant) {
    out.push_back('(');
    format_value(out, v.value);
    out.push_back(')');
  }
}

void format_value(FormatBuffer& out, const CoordinateTransformModeIr& v) {
  append(out, enum_name(v.kind));
  if (v.kind == CoordinateTransformKind::TfCropAndResize) {
    appendf(out, "(roi [[{}, {}], [{}, {}]], extrapolation {})", v.roi[0][0], v.roi[0][1],
            v.roi[1][0], v.roi[1][1], v.extrapolation_value);
  }
}

void format_value(FormatBuffer& out, const TensorId& v) {
  appendf(out, "#{}", v.value);
}
void format_value(FormatBuffer& out, const StreamId& v) {
  appendf(out, "stream {}", v.value);
}
void format_value(FormatBuffer& out, const Shape& v) {
  appendf(out, "[{}]", fmt::join(v.dims, ", "));
}

void format_value(FormatBuffer& out, const TensorIr& v) {
  format_value(out, v.id);
  format_value(out, v.shape);
  out.push_back(' ');
  format_value(out, v.dtype);
  out.push_back(' ');
  append(out, enum_name(v.status));
}

void format_value(FormatBuffer& out, const Bytes& v) {
  appendf(out, "<{} bytes>", v.size());
}

void format_value(FormatBuffer& out, const TensorData& v) {
  appendf(out, "TensorData {{[{}] ", fmt::join(v.shape, ", "));
  format_value(out, v.dtype);
  appendf(out, ", {} bytes}}", v.bytes.size());
}

void format_value(FormatBuffer& out, const Peer& v) {
  if (v.kind == PeerKind::WebSocket) {
    appendf(out, "{}://{}", v.address.scheme, v.address.host);
    if (v.address.port) appendf(out, ":{}", *v.address.port);
  } else {
    appendf(out, "iroh <{} bytes>", v.iroh_raw.size());
  }
}

void format_value(FormatBuffer& out, const SessionRefusal& v) {
  append(out, enum_name(v.kind));
  if (v.kind != RefusalKind::Unauthorized) appendf(out, "({})", v.value);
}

void format_value(FormatBuffer& out, const ExecutionError& v) {
  appendf(out, "{}({:?})", enum_name(v.kind), v.reason);
}

void format_value(FormatBuffer& out, DTypeUsageSet v) {
  append(out, "{");
  bool first = true;
  const char* names[] = {"Storage", "Arithmetic", "Accelerated"};
  for (int i = 0; i < 3; ++i) {
    if (v.bits & (1 << i)) {
      if (!first) append(out, ", ");
      first = false;
      append(out, names[i]);
    }
  }
  append(out, "}");
}

void format_value(FormatBuffer& out, const OperationIr& v) {
  append(out, v.name());
  if (category_has_dtype(v.category())) {
    out.push_back('(');
    format_value(out, v.dtype);
    out.push_back(')');
  }
  out.push_back(' ');
  std::visit(
      [&](const auto& p) {
        if constexpr (std::is_same_v<std::decay_t<decltype(p)>, UnitPayload>) {
          append(out, "()");
        } else {
          format_value(out, p);
        }
      },
      v.payload);
}

void format_value(FormatBuffer& out, const Task& v) {
  std::visit(
      [&](const auto& p) {
        if constexpr (std::is_same_v<std::decay_t<decltype(p)>, std::monostate>) {
          append(out, "(no task)");
        } else {
          format_value(out, p);
        }
      },
      v);
}

void format_value(FormatBuffer& out, const RemoteMessage& v) {
  std::visit([&](const auto& p) { format_value(out, p); }, v);
}

void format_value(FormatBuffer& out, const TaskResponseContent& v) {
  std::visit(
      [&](const auto& p) {
        if constexpr (std::is_same_v<std::decay_t<decltype(p)>, std::monostate>) {
          append(out, "(no content)");
        } else {
          format_value(out, p);
        }
      },
      v);
}

}  // namespace tb::ir
