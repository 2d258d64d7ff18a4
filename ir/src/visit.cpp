#include "torchbridge/ir/visit.hpp"

#include <array>
#include <cstring>
#include <type_traits>

namespace tb::ir {

namespace {

// Whether a field of this name holds an op's outputs. Asked once per field of each payload type
// (output_fields), never per op.
bool is_output_field(const char* name) {
  switch (name[0]) {
    case 'o':
      return std::strcmp(name, "out") == 0 || std::strcmp(name, "out_indices") == 0 ||
             std::strcmp(name, "outputs") == 0 || std::strcmp(name, "offset_grad") == 0;
    case 'i':
      return std::strcmp(name, "input_grad") == 0;
    case 'w':
      return std::strcmp(name, "weight_grad") == 0;
    case 'm':
      return std::strcmp(name, "mask_grad") == 0;
    case 'b':
      return std::strcmp(name, "bias_grad") == 0;
    default:
      return false;
  }
}

// The payloads whose names say otherwise (burn-ir 0.23 visit_mut): attention's backward reads the
// forward's `out` and `logsumexp` and writes the three gradients; its forward with logsumexp
// writes both.
template <class U>
bool is_output_field_of(const char* name) {
  if constexpr (std::is_same_v<U, AttentionBackwardOpIr>) {
    return std::strcmp(name, "query_grad") == 0 || std::strcmp(name, "key_grad") == 0 ||
           std::strcmp(name, "value_grad") == 0;
  } else if constexpr (std::is_same_v<U, AttentionWithLogsumexpOpIr>) {
    return std::strcmp(name, "out") == 0 || std::strcmp(name, "logsumexp") == 0;
  } else {
    return is_output_field(name);
  }
}

// Which fields of U hold outputs, by position: worked out the first time a U is walked, so the walk
// of an op compares no field names.
template <class U>
const std::array<bool, FieldList<U>::kCount>& output_fields() {
  static const auto flags = [] {
    std::array<bool, FieldList<U>::kCount> f{};
    U probe{};
    std::size_t i = 0;
    FieldList<U>::visit(probe, [&](const char* name, auto&) {
      f[i++] = is_output_field_of<U>(name);
      return true;
    });
    return f;
  }();
  return flags;
}

template <class V, class T>
void walk(V& v, T& value, bool is_output);
template <class V, class T>
void walk(V& v, std::vector<T>& values, bool is_output);
template <class V, class T>
void walk(V& v, const std::vector<T>& values, bool is_output);
template <class V, class T>
void walk(V& v, std::optional<T>& value, bool is_output);
template <class V, class T>
void walk(V& v, const std::optional<T>& value, bool is_output);

template <class V, class T>
void walk(V& v, T& value, bool is_output) {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, TensorIr>) {
    v.tensor(value, is_output);
  } else if constexpr (std::is_same_v<U, ScalarIr>) {
    v.scalar(value);
  } else if constexpr (std::is_same_v<U, Slice>) {
    v.range(value);
  } else if constexpr (std::is_same_v<U, PadModeIr>) {
    if (value.kind == PadModeKind::Constant) v.scalar(value.value);
  } else if constexpr (kHasFieldList<U>) {
    const auto& outputs = output_fields<U>();
    std::size_t i = 0;
    FieldList<U>::visit(value, [&](const char*, auto& field) {
      walk(v, field, is_output || outputs[i++]);
      return true;
    });
  }
}

template <class V, class T>
void walk(V& v, std::vector<T>& values, bool is_output) {
  for (auto& e : values) walk(v, e, is_output);
}
template <class V, class T>
void walk(V& v, const std::vector<T>& values, bool is_output) {
  for (const auto& e : values) walk(v, e, is_output);
}
template <class V, class T>
void walk(V& v, std::optional<T>& value, bool is_output) {
  if (value) walk(v, *value, is_output);
}
template <class V, class T>
void walk(V& v, const std::optional<T>& value, bool is_output) {
  if (value) walk(v, *value, is_output);
}

template <class V, class Op>
void visit_impl(Op& op, V& v) {
  std::visit(
      [&](auto& payload) {
        using P = std::decay_t<decltype(payload)>;
        if constexpr (std::is_same_v<P, TensorIr>) {
          v.tensor(payload, false);  // Drop
        } else if constexpr (!std::is_same_v<P, UnitPayload>) {
          walk(v, payload, false);
        }
      },
      op.payload);
}

}  // namespace

void visit(OperationIr& op, OpVisitor& visitor) {
  visit_impl(op, visitor);
}
void visit(const OperationIr& op, ConstOpVisitor& visitor) {
  visit_impl(op, visitor);
}

}  // namespace tb::ir
