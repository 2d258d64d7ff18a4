// Codec for the session messages: RemoteMessage, Task, TaskResponse.
#include "codec_values.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::ir {

namespace {

#define TB_NAME_OF(V, P) #V,
#define TB_TASK_NAME_OF(V, P, W) #V,
#define TB_TASK_WIRE_OF(V, P, W) TB_WIRE_##W,
constexpr std::array<std::string_view, std::variant_size_v<Task> - 1> kTaskNames = {
    TB_TASKS(TB_TASK_NAME_OF)};
constexpr WireRange kTaskWires[] = {TB_TASKS(TB_TASK_WIRE_OF)};
#undef TB_TASK_NAME_OF
#undef TB_TASK_WIRE_OF
constexpr std::array<std::string_view, std::variant_size_v<TaskResponseContent> - 1>
    kResponseNames = {TB_RESPONSES(TB_NAME_OF)};
constexpr std::array<std::string_view, std::variant_size_v<DataMessage> - 1> kDataNames = {
    TB_DATA_MESSAGES(TB_NAME_OF)};
#undef TB_NAME_OF
constexpr std::array<std::string_view, 3> kMessageNames = {"Task", "Init", "Close"};

// Alternative I of v, empty, to be read into. Value-initialisation (`emplace<I>()`, and `Alt{}`
// too, as GCC builds it) zero-fills the whole object first where its default constructor is not
// user-provided, as for the tasks that hold an op and for std::variant itself: 1.1 KiB, the size
// of the largest op payload, for each of a message, its task and the task's op, 2.7% of the
// host's CPU in a replay of Burn's LU through the plain client. Such a task is default-initialised
// instead, which value-initialises each field (TB_STRUCT gives every field `{}`; an op's is its
// constructor, holding no payload), and moved in.
template <std::size_t I, class Variant>
auto& fresh_alternative(Variant& v) {
  using Alt = std::variant_alternative_t<I, Variant>;
  if constexpr (sizeof(Alt) > 256 && kHasFieldList<Alt>) {
    Alt x;
    return v.template emplace<I>(std::move(x));
  } else {
    return v.template emplace<I>();
  }
}

template <class Variant, std::size_t I = 1>
bool read_alternative(Reader& r, Variant& v, std::size_t index) {
  if constexpr (I < std::variant_size_v<Variant>) {
    if (index == I) return read_value(r, fresh_alternative<I>(v));
    return read_alternative<Variant, I + 1>(r, v, index);
  } else {
    return false;
  }
}

// Reads `{"Name": payload}` into alternative `index + 1` of a monostate-first variant.
template <const auto& Names, class Variant>
bool read_named(Reader& r, Variant& v, const char* enum_name) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, enum_name, name, has_payload)) return false;
  const int i = find_name<Names>(name);
  if (i < 0) return unknown_variant(r, enum_name, name);
  if (!has_payload) return r.failf("variant {}::{} needs a payload", enum_name, name);
  PathGuard g(r, Names[i].data());
  return read_alternative(r, v, static_cast<std::size_t>(i) + 1);
}

template <class Variant, class Names>
void write_named(Writer& w, const Variant& v, const Names& names) {
  w.map(1);
  w.str(names[v.index() - 1]);
  std::visit(
      [&](const auto& payload) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(payload)>, std::monostate>) {
          write_value(w, payload);
        }
      },
      v);
}

}  // namespace

std::string_view task_name(const Task& task) {
  return task.index() == 0 ? std::string_view("(none)") : kTaskNames[task.index() - 1];
}

bool task_on_wire(const Task& task, std::uint16_t version) {
  return task.index() != 0 && kTaskWires[task.index() - 1].has(version);
}

std::string_view response_name(const TaskResponseContent& content) {
  return content.index() == 0 ? std::string_view("(none)") : kResponseNames[content.index() - 1];
}

bool read_value(Reader& r, Task& v) {
  return read_named<kTaskNames>(r, v, "Task");
}
void write_value(Writer& w, const Task& v) {
  write_named(w, v, kTaskNames);
}

bool read_value(Reader& r, TaskResponseContent& v) {
  return read_named<kResponseNames>(r, v, "TaskResponseContent");
}
void write_value(Writer& w, const TaskResponseContent& v) {
  write_named(w, v, kResponseNames);
}

bool read_value(Reader& r, DataMessage& v) {
  return read_named<kDataNames>(r, v, "ExternalCommMessage");
}
void write_value(Writer& w, const DataMessage& v) {
  write_named(w, v, kDataNames);
}

bool read_value(Reader& r, RemoteMessage& v) {
  std::string_view name;
  bool has_payload = false;
  if (!read_enum_head(r, "RemoteMessage", name, has_payload)) return false;
  const int i = find_name<kMessageNames>(name);
  if (i < 0) return unknown_variant(r, "RemoteMessage", name);
  if (!has_payload) return r.failf("variant RemoteMessage::{} needs a payload", name);
  PathGuard g(r, kMessageNames[i].data());
  switch (i) {
    case 0:
      return read_value(r, v.emplace<Task>(std::in_place_index<0>));
    case 1:
      return read_value(r, v.emplace<SessionInit>());
    default:
      return read_value(r, v.emplace<SessionId>());
  }
}

void write_value(Writer& w, const RemoteMessage& v) {
  w.map(1);
  w.str(kMessageNames[v.index()]);
  std::visit([&](const auto& payload) { write_value(w, payload); }, v);
}

template <>
Result<Task> decode<Task>(const Bytes& bytes, DecodeLimits limits) {
  return decode_impl<Task>(bytes, limits, "Task");
}
template <>
void encode<Task>(Writer& writer, const Task& value) {
  write_value(writer, value);
}
template <>
Result<RemoteMessage> decode<RemoteMessage>(const Bytes& bytes, DecodeLimits limits) {
  return decode_impl<RemoteMessage>(bytes, limits, "RemoteMessage");
}
template <>
void encode<RemoteMessage>(Writer& writer, const RemoteMessage& value) {
  write_value(writer, value);
}
template <>
Result<ClientFrame> decode<ClientFrame>(const Bytes& bytes, DecodeLimits limits) {
  return decode_impl<ClientFrame>(bytes, limits, "ClientFrame");
}
template <>
void encode<ClientFrame>(Writer& writer, const ClientFrame& value) {
  write_value(writer, value);
}
template <>
Result<TaskResponse> decode<TaskResponse>(const Bytes& bytes, DecodeLimits limits) {
  return decode_impl<TaskResponse>(bytes, limits, "TaskResponse");
}
template <>
void encode<TaskResponse>(Writer& writer, const TaskResponse& value) {
  write_value(writer, value);
}

template <>
Result<DataMessage> decode<DataMessage>(const Bytes& bytes, DecodeLimits limits) {
  return decode_impl<DataMessage>(bytes, limits, "DataMessage");
}
template <>
void encode<DataMessage>(Writer& writer, const DataMessage& value) {
  write_value(writer, value);
}

}  // namespace tb::ir
