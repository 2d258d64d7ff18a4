// fmt formatters for every IR value, for logs and error messages:
//   fmt::format("{}", op)  ->  "NumericFloat.Add(f32) {lhs: #1[2, 3] f32 ReadOnly, ...}"
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "torchbridge/ir/protocol.hpp"

namespace tb::ir {

using FormatBuffer = fmt::memory_buffer;

void format_value(FormatBuffer& out, const DType& v);
void format_value(FormatBuffer& out, const QuantStore& v);
void format_value(FormatBuffer& out, const ScalarIr& v);
void format_value(FormatBuffer& out, const Distribution& v);
void format_value(FormatBuffer& out, const PadModeIr& v);
void format_value(FormatBuffer& out, const CoordinateTransformModeIr& v);
void format_value(FormatBuffer& out, const TensorIr& v);
void format_value(FormatBuffer& out, const Shape& v);
void format_value(FormatBuffer& out, const TensorId& v);
void format_value(FormatBuffer& out, const StreamId& v);
void format_value(FormatBuffer& out, const TensorData& v);
void format_value(FormatBuffer& out, const Bytes& v);
void format_value(FormatBuffer& out, const Peer& v);
void format_value(FormatBuffer& out, const SessionRefusal& v);
void format_value(FormatBuffer& out, const ExecutionError& v);
void format_value(FormatBuffer& out, DTypeUsageSet v);
void format_value(FormatBuffer& out, const OperationIr& v);
void format_value(FormatBuffer& out, const Task& v);
void format_value(FormatBuffer& out, const RemoteMessage& v);
void format_value(FormatBuffer& out, const TaskResponseContent& v);
void format_value(FormatBuffer& out, std::monostate);
void format_value(FormatBuffer& out, const std::string& v);

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> format_value(FormatBuffer& out, T v) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<unsigned>(v));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}
template <class E>
std::enable_if_t<kIsUnitEnum<E>> format_value(FormatBuffer& out, E v) {
  const auto name = enum_name(v);
  out.append(name.data(), name.data() + name.size());
}
template <class T>
void format_value(FormatBuffer& out, const std::optional<T>& v);
template <class T>
void format_value(FormatBuffer& out, const std::vector<T>& v);
template <class T, std::size_t N>
void format_value(FormatBuffer& out, const std::array<T, N>& v);
template <class A, class B>
void format_value(FormatBuffer& out, const std::pair<A, B>& v);
template <class T>
void format_value(FormatBuffer& out, const WireResult<T>& v);
template <class T>
std::enable_if_t<kHasFieldList<T>> format_value(FormatBuffer& out, const T& v);

template <class T>
void format_value(FormatBuffer& out, const std::optional<T>& v) {
  if (v) {
    format_value(out, *v);
  } else {
    out.append(std::string_view("None"));
  }
}
template <class Seq>
void format_seq(FormatBuffer& out, const Seq& seq) {
  out.push_back('[');
  bool first = true;
  for (const auto& e : seq) {
    if (!first) out.append(std::string_view(", "));
    first = false;
    format_value(out, e);
  }
  out.push_back(']');
}
template <class T>
void format_value(FormatBuffer& out, const std::vector<T>& v) {
  format_seq(out, v);
}
template <class T, std::size_t N>
void format_value(FormatBuffer& out, const std::array<T, N>& v) {
  format_seq(out, v);
}
template <class A, class B>
void format_value(FormatBuffer& out, const std::pair<A, B>& v) {
  out.push_back('(');
  format_value(out, v.first);
  out.append(std::string_view(", "));
  format_value(out, v.second);
  out.push_back(')');
}
template <class T>
void format_value(FormatBuffer& out, const WireResult<T>& v) {
  if (v.index() == 0) {
    out.append(std::string_view("Ok("));
    format_value(out, std::get<0>(v));
  } else {
    out.append(std::string_view("Err("));
    format_value(out, std::get<1>(v));
  }
  out.push_back(')');
}
template <class T>
std::enable_if_t<kHasFieldList<T>> format_value(FormatBuffer& out, const T& v) {
  out.append(std::string_view(FieldList<T>::kName));
  out.append(std::string_view(" {"));
  bool first = true;
  FieldList<T>::visit(v, [&](const char* name, const auto& field) {
    if (!first) out.append(std::string_view(", "));
    first = false;
    out.append(std::string_view(name));
    out.append(std::string_view(": "));
    format_value(out, field);
    return true;
  });
  out.push_back('}');
}

// The IR types fmt formats through format_value (std containers are left to fmt's own support).
template <class T>
struct IsFormattable
    : std::bool_constant<kHasFieldList<T> || kIsUnitEnum<T> || std::is_same_v<T, DType> ||
                         std::is_same_v<T, QuantStore> || std::is_same_v<T, ScalarIr> ||
                         std::is_same_v<T, Distribution> || std::is_same_v<T, PadModeIr> ||
                         std::is_same_v<T, CoordinateTransformModeIr> ||
                         std::is_same_v<T, TensorData> || std::is_same_v<T, Bytes> ||
                         std::is_same_v<T, Peer> || std::is_same_v<T, SessionRefusal> ||
                         std::is_same_v<T, ExecutionError> || std::is_same_v<T, DTypeUsageSet> ||
                         std::is_same_v<T, OperationIr> || std::is_same_v<T, Task> ||
                         std::is_same_v<T, RemoteMessage> ||
                         std::is_same_v<T, TaskResponseContent>> {};

template <class T>
std::string to_string(const T& v) {
  FormatBuffer out;
  format_value(out, v);
  return fmt::to_string(out);
}

}  // namespace tb::ir

template <class T>
struct fmt::formatter<T, char, std::enable_if_t<tb::ir::IsFormattable<T>::value>>
    : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const T& v, Ctx& ctx) const {
    tb::ir::FormatBuffer out;
    tb::ir::format_value(out, v);
    return fmt::formatter<std::string_view>::format(std::string_view(out.data(), out.size()), ctx);
  }
};
