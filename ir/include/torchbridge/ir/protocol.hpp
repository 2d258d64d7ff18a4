// Burn's remote session protocol (burn-remote 0.22.1 and 0.23.0-pre.1 src/shared/task.rs and
// friends): what a client sends on `/session`, what the server answers. Field order is wire order.
// One set of types serves every version: variants that only some versions have say so in the
// tables' Wire column (WireRange, operation.hpp), and profile.hpp holds what else differs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "torchbridge/ir/operation.hpp"

namespace tb::ir {

// burn-remote 0.22.1's PROTOCOL_VERSION, the oldest this host serves (profile.hpp lists them all).
inline constexpr std::uint16_t kProtocolVersion = 2;

using RequestId = std::uint64_t;
using GraphId = std::uint64_t;          // newtype: a bare integer on the wire
using LocalTransferId = std::uint64_t;  // newtype: a bare integer on the wire
// Newtype over [u8; 32]: a 32-element array of integers on the wire (not bin).
using TransferCapability = std::array<std::uint8_t, 32>;

TB_STRUCT(SessionId, (std::uint64_t, id));

// burn-communication Address: [scheme, host, port?].
TB_STRUCT(Address, (std::string, scheme), (std::string, host),
          (std::optional<std::uint16_t>, port));

TB_UNIT_ENUM(PeerKind, Iroh, WebSocket);
// burn-remote PeerId / PeerAddr: WebSocket(Address) | Iroh(..). An Iroh peer is kept as its raw
// msgpack so it re-encodes unchanged; this host speaks websocket only.
struct Peer {
  PeerKind kind = PeerKind::WebSocket;
  Address address;
  Bytes iroh_raw;
  friend bool operator==(const Peer& a, const Peer& b) {
    return a.kind == b.kind &&
           (a.kind == PeerKind::WebSocket ? a.address == b.address : a.iroh_raw == b.iroh_raw);
  }
  friend bool operator!=(const Peer& a, const Peer& b) { return !(a == b); }
};
using PeerId = Peer;
using PeerAddr = Peer;

TB_STRUCT(SessionInit, (std::uint16_t, version), (SessionId, session_id),
          (std::uint32_t, device_index), (Bytes, authorization));
TB_STRUCT(SessionInfo, (std::uint16_t, version), (DeviceSettings, settings),
          (std::uint32_t, device_count), (std::optional<PeerId>, peer_id));

TB_UNIT_ENUM(RefusalKind, Unauthorized, NoSuchDevice, IncompatibleProtocol);
// Unauthorized | NoSuchDevice { device_count: u32 } | IncompatibleProtocol { server_version: u16 }.
struct SessionRefusal {
  RefusalKind kind = RefusalKind::Unauthorized;
  std::uint32_t value = 0;  // device_count or server_version
  friend bool operator==(const SessionRefusal& a, const SessionRefusal& b) {
    return a.kind == b.kind && a.value == b.value;
  }
  friend bool operator!=(const SessionRefusal& a, const SessionRefusal& b) { return !(a == b); }
};

TB_STRUCT(TensorRemote, (TransferCapability, capability), (PeerAddr, peer));
TB_STRUCT(GraphBinding, (TensorId, relative), (TensorId, concrete));
TB_STRUCT(GraphBindings, (std::vector<GraphBinding>, tensors), (Dims, shapes),
          (std::vector<ScalarIr>, scalars), (std::vector<Slice>, ranges));
TB_STRUCT(ProfileToken, (std::uint64_t, id), (std::uint64_t, opened_on));
TB_STRUCT(ProfileOptions, (bool, flush));
// core::time::Duration as serde writes it.
TB_STRUCT(Duration, (std::uint64_t, secs), (std::uint32_t, nanos));

// ---- Task: one payload struct per variant; `Seed` is a newtype variant (a bare u64). ---------
TB_STRUCT(SeedTask, (std::uint64_t, seed));
TB_STRUCT(RegisterOperationTask, (StreamId, stream_id), (OperationIr, op));
TB_STRUCT(RegisterAndExecuteGraphTask, (StreamId, stream_id), (GraphId, graph_id),
          (std::vector<OperationIr>, relative_graph), (GraphBindings, bindings));
TB_STRUCT(ExecuteGraphTask, (StreamId, stream_id), (GraphId, graph_id), (GraphBindings, bindings));
TB_STRUCT(RegisterTensorTask, (StreamId, stream_id), (TensorId, id), (TensorData, data));
TB_STRUCT(RegisterAliasTask, (StreamId, stream_id), (TensorId, new_id), (TensorId, src_id));
TB_STRUCT(RegisterTensorRemoteTask, (StreamId, stream_id), (TensorRemote, remote),
          (TensorId, new_id));
TB_STRUCT(ExposeTensorRemoteTask, (StreamId, stream_id), (TensorIr, tensor), (std::uint32_t, count),
          (TransferCapability, capability), (PeerId, target));
TB_STRUCT(ExposeTensorLocalTask, (StreamId, stream_id), (TensorIr, tensor),
          (LocalTransferId, transfer_id));
TB_STRUCT(RegisterTensorLocalTask, (StreamId, stream_id), (LocalTransferId, transfer_id),
          (TensorId, new_id));
TB_STRUCT(ReadTensorTask, (RequestId, request_id), (StreamId, stream_id), (TensorIr, tensor));
// Protocol 6: several reads answered together, all or nothing, in request order.
TB_STRUCT(ReadTensorsTask, (RequestId, request_id), (StreamId, stream_id),
          (std::vector<TensorIr>, tensors));
// Protocol 6: member `member` of the all-reduce `collective` over the devices whose sessions are
// `sessions` (by member); each member's result is registered under `out` on its own device.
TB_STRUCT(LocalAllReducePart, (TensorIr, tensor), (TensorId, out), (std::uint64_t, collective),
          (std::uint32_t, member), (std::vector<SessionId>, sessions), (ReduceOperation, op));
TB_STRUCT(AllReduceLocalTask, (StreamId, stream_id), (LocalAllReducePart, part));
TB_STRUCT(SyncBackendTask, (RequestId, request_id), (StreamId, stream_id));
TB_STRUCT(DTypeUsageTask, (RequestId, request_id), (DType, dtype));
TB_STRUCT(ProfileStartTask, (RequestId, request_id), (StreamId, stream_id));
TB_STRUCT(ProfileEndTask, (RequestId, request_id), (StreamId, stream_id), (ProfileToken, token),
          (ProfileOptions, options));
TB_STRUCT(ProfileAbandonTask, (StreamId, stream_id), (ProfileToken, token));

// X-macro table of Task's variants: X(Variant, Payload, Wire), Wire as in the op tables (all, v2,
// v6). Order is Burn's (0.23 inserted AllReduceLocal and replaced ReadTensor with ReadTensors).
// clang-format off
#define TB_TASKS(X)                                                                     \
  X(Seed, SeedTask, all) X(RegisterOperation, RegisterOperationTask, all)               \
  X(RegisterAndExecuteGraph, RegisterAndExecuteGraphTask, all)                          \
  X(ExecuteGraph, ExecuteGraphTask, all) X(RegisterTensor, RegisterTensorTask, all)     \
  X(RegisterAlias, RegisterAliasTask, all)                                              \
  X(RegisterTensorRemote, RegisterTensorRemoteTask, all)                                \
  X(ExposeTensorRemote, ExposeTensorRemoteTask, all)                                    \
  X(ExposeTensorLocal, ExposeTensorLocalTask, all)                                      \
  X(RegisterTensorLocal, RegisterTensorLocalTask, all)                                  \
  X(AllReduceLocal, AllReduceLocalTask, v6)                                             \
  X(ReadTensor, ReadTensorTask, v2) X(ReadTensors, ReadTensorsTask, v6)                 \
  X(SyncBackend, SyncBackendTask, all) X(DTypeUsage, DTypeUsageTask, all)               \
  X(ProfileStart, ProfileStartTask, all) X(ProfileEnd, ProfileEndTask, all)             \
  X(ProfileAbandon, ProfileAbandonTask, all)
// clang-format on

#define TB_TASK_ALT(V, P, W) , P
// Index 0 (monostate) is "no task"; it never goes on the wire.
using Task = std::variant<std::monostate TB_TASKS(TB_TASK_ALT)>;
#undef TB_TASK_ALT
// The Burn variant name of a task ("ReadTensor").
std::string_view task_name(const Task& task);
// Whether protocol `version` has the task's variant.
bool task_on_wire(const Task& task, std::uint16_t version);

// ---- RemoteMessage: Task(Task) | Init(SessionInit) | Close(SessionId). -----------------------
using RemoteMessage = std::variant<Task, SessionInit, SessionId>;
// A client frame on `/session` is one msgpack array of messages.
using ClientFrame = std::vector<RemoteMessage>;

// ---- Responses. -----------------------------------------------------------------------------
TB_UNIT_ENUM(ExecutionErrorKind, WithContext, Generic, DevicePoisoned);
// burn-std ExecutionError: every variant holds one `reason` string on the wire.
struct ExecutionError {
  ExecutionErrorKind kind = ExecutionErrorKind::Generic;
  std::string reason;
  friend bool operator==(const ExecutionError& a, const ExecutionError& b) {
    return a.kind == b.kind && a.reason == b.reason;
  }
  friend bool operator!=(const ExecutionError& a, const ExecutionError& b) { return !(a == b); }
};

// Rust's Result<T, ExecutionError>: {"Ok": T} | {"Err": E}. T = std::monostate for `()`.
template <class T>
using WireResult = std::variant<T, ExecutionError>;

// enumset DTypeUsageSet: a bitmask of DTypeUsage {Storage = 1, Arithmetic = 2, Accelerated = 4}.
enum DTypeUsageBits : std::uint8_t {
  kUsageStorage = 1,
  kUsageArithmetic = 2,
  kUsageAccelerated = 4,
};
struct DTypeUsageSet {
  std::uint8_t bits = 0;
  friend bool operator==(DTypeUsageSet a, DTypeUsageSet b) { return a.bits == b.bits; }
  friend bool operator!=(DTypeUsageSet a, DTypeUsageSet b) { return a.bits != b.bits; }
};

TB_STRUCT(InitResponse, (SessionInfo, info));
TB_STRUCT(ReadTensorResponse, (WireResult<TensorData>, result));
TB_STRUCT(ReadTensorsResponse, (WireResult<std::vector<TensorData>>, result));
TB_STRUCT(SyncBackendResponse, (WireResult<std::monostate>, result));
TB_STRUCT(DTypeUsageResponse, (DTypeUsageSet, usage));
TB_STRUCT(ProfileStartResponse, (WireResult<std::optional<ProfileToken>>, result));
TB_STRUCT(ProfileEndResponse, (WireResult<std::optional<Duration>>, result));
TB_STRUCT(InitRefusedResponse, (SessionRefusal, refusal));

// X-macro table of TaskResponseContent's variants (all newtype variants): X(Variant, Payload).
// clang-format off
#define TB_RESPONSES(X)                                                        \
  X(Init, InitResponse) X(ReadTensor, ReadTensorResponse)                      \
  X(ReadTensors, ReadTensorsResponse)                                          \
  X(SyncBackend, SyncBackendResponse) X(DTypeUsage, DTypeUsageResponse)        \
  X(ProfileStart, ProfileStartResponse) X(ProfileEnd, ProfileEndResponse)      \
  X(InitRefused, InitRefusedResponse)
// clang-format on

#define TB_RESPONSE_ALT(V, P) , P
// Index 0 (monostate) is "no content"; it never goes on the wire.
using TaskResponseContent = std::variant<std::monostate TB_RESPONSES(TB_RESPONSE_ALT)>;
#undef TB_RESPONSE_ALT
std::string_view response_name(const TaskResponseContent& content);

// A server frame on `/session`: one bare TaskResponse.
TB_STRUCT(TaskResponse, (TaskResponseContent, content), (RequestId, id));

// ---- The `/data` route (burn-communication src/external_comm.rs ExternalCommMessage). -------
// A downloading host sends TensorRequest(transfer id); the exposing host answers Tensor(data).
TB_STRUCT(TensorRequestMessage, (std::uint64_t, transfer_id));
TB_STRUCT(TensorMessage, (TensorData, data));
// clang-format off
#define TB_DATA_MESSAGES(X) X(TensorRequest, TensorRequestMessage) X(Tensor, TensorMessage)
// clang-format on
#define TB_DATA_ALT(V, P) , P
using DataMessage = std::variant<std::monostate TB_DATA_MESSAGES(TB_DATA_ALT)>;
#undef TB_DATA_ALT

}  // namespace tb::ir
