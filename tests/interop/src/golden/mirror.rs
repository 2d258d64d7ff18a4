//! Mirrors of the `pub(crate)` wire types of Burn Remote 0.22.1 (and the private `/data` message of
//! burn-communication 0.22.1), so the generator can serialize them with `rmp_serde::to_vec`.
//!
//! Copied verbatim (same field order, same serde attributes, same variant names and order; only
//! doc comments, impls and `#[cfg]` gates dropped) from:
//!
//! * `burn-remote-0.22.1/src/shared/task.rs`:
//!   `PROTOCOL_VERSION`, `RequestId`, `LocalTransferId`, `TransferCapability`, `SessionId`,
//!   `RemoteMessage`, `SessionInit`, `SessionInfo`, `SessionRefusal`, `TensorRemote`, `Task`,
//!   `TaskResponse`, `TaskResponseContent`.
//! * `burn-remote-0.22.1/src/transport/identity.rs`: `PeerId`, `PeerAddr` — only the
//!   `WebSocket(Address)` variant (the `Iroh` variant, first in the source under
//!   `#[cfg(feature = "iroh")]`, is left out; rmp-serde encodes a variant by its NAME, so the
//!   missing variant does not change the bytes of `WebSocket`).
//! * `burn-communication-0.22.1/src/external_comm.rs`: `ExternalCommMessage` (the `/data` route
//!   message; `TensorTransferId` is public there and used directly).
//!
//! Inner types are the real ones from burn_ir / burn_std / burn_backend / burn_communication.
//!
//! Built with `cfg(burn_023)` (tests/interop-0.23, Burn 0.23.0-pre.1), the `cfg(burn_023)` items
//! mirror `burn-remote-0.23.0-pre.1/src/shared/task.rs` instead: `PROTOCOL_VERSION` 6, the new
//! `LocalCollectiveId` and `LocalAllReducePart`, `Task::AllReduceLocal`, and `ReadTensor` replaced
//! by `ReadTensors` in `Task` and `TaskResponseContent`. Everything else (identity.rs,
//! external_comm.rs and the other task.rs types) is unchanged in 0.23.0-pre.1.

#![allow(dead_code)]

use burn_backend::{DTypeUsageSet, ExecutionError, ProfileOptions, ProfileToken, TensorData};
use burn_communication::Address;
use burn_communication::external_comm::TensorTransferId;
use burn_ir::{GraphBindings, GraphId, OperationIr, TensorId, TensorIr};
use burn_std::{DType, DeviceSettings, id::StreamId};
use core::time::Duration;
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// burn-remote-0.22.1/src/shared/task.rs
// ---------------------------------------------------------------------------------------------

/// Current Burn Remote application-protocol version.
#[cfg(not(burn_023))]
pub const PROTOCOL_VERSION: u16 = 2;
/// Current Burn Remote application-protocol version (burn-remote-0.23.0-pre.1).
#[cfg(burn_023)]
pub const PROTOCOL_VERSION: u16 = 6;

pub type RequestId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LocalTransferId(pub u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TransferCapability(pub [u8; 32]);

impl TransferCapability {
    /// Same as burn-remote's `websocket_id`: the little-endian u64 of the first eight bytes.
    pub fn websocket_id(self) -> u64 {
        u64::from_le_bytes(self.0[..8].try_into().unwrap())
    }
}

#[derive(Debug, PartialEq, Eq, Clone, Copy, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct SessionId {
    pub id: u64,
}

// burn-remote-0.23.0-pre.1/src/shared/task.rs:53-77 (the field `LocalCollectiveId.0` is private
// there; its `ReduceOperation` is burn-std's, re-exported by burn-backend).
#[cfg(burn_023)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LocalCollectiveId(pub u64);

#[cfg(burn_023)]
#[derive(Serialize, Deserialize, Debug)]
pub struct LocalAllReducePart {
    pub tensor: TensorIr,
    pub out: TensorId,
    pub collective: LocalCollectiveId,
    pub member: u32,
    pub sessions: Vec<SessionId>,
    pub op: burn_backend::distributed::ReduceOperation,
}

#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize, Debug)]
pub enum RemoteMessage {
    Task(Task),
    Init(SessionInit),
    Close(SessionId),
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SessionInit {
    pub version: u16,
    pub session_id: SessionId,
    pub device_index: u32,
    #[serde(with = "serde_bytes")]
    pub authorization: Vec<u8>,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct SessionInfo {
    pub version: u16,
    pub settings: DeviceSettings,
    pub device_count: u32,
    pub peer_id: Option<PeerId>,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionRefusal {
    Unauthorized,
    NoSuchDevice { device_count: u32 },
    IncompatibleProtocol { server_version: u16 },
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct TensorRemote {
    pub capability: TransferCapability,
    pub peer: PeerAddr,
}

#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize, Debug)]
pub enum Task {
    Seed(u64),
    RegisterOperation(StreamId, OperationIr),
    RegisterAndExecuteGraph {
        stream_id: StreamId,
        graph_id: GraphId,
        relative_graph: Vec<OperationIr>,
        bindings: GraphBindings,
    },
    ExecuteGraph {
        stream_id: StreamId,
        graph_id: GraphId,
        bindings: GraphBindings,
    },
    RegisterTensor(StreamId, TensorId, TensorData),
    RegisterAlias {
        stream_id: StreamId,
        new_id: TensorId,
        src_id: TensorId,
    },
    RegisterTensorRemote(StreamId, TensorRemote, TensorId),
    ExposeTensorRemote {
        stream_id: StreamId,
        tensor: TensorIr,
        count: u32,
        capability: TransferCapability,
        target: PeerId,
    },
    ExposeTensorLocal {
        stream_id: StreamId,
        tensor: TensorIr,
        transfer_id: LocalTransferId,
    },
    RegisterTensorLocal {
        stream_id: StreamId,
        transfer_id: LocalTransferId,
        new_id: TensorId,
    },
    #[cfg(not(burn_023))]
    ReadTensor(RequestId, StreamId, TensorIr),
    #[cfg(burn_023)]
    AllReduceLocal {
        stream_id: StreamId,
        part: LocalAllReducePart,
    },
    #[cfg(burn_023)]
    ReadTensors(RequestId, StreamId, Vec<TensorIr>),
    SyncBackend(RequestId, StreamId),
    DTypeUsage(RequestId, DType),
    ProfileStart(RequestId, StreamId),
    ProfileEnd(RequestId, StreamId, ProfileToken, ProfileOptions),
    ProfileAbandon(StreamId, ProfileToken),
}

#[derive(Serialize, Deserialize, Debug)]
pub struct TaskResponse {
    pub content: TaskResponseContent,
    pub id: RequestId,
}

#[derive(Serialize, Deserialize, Debug)]
pub enum TaskResponseContent {
    Init(SessionInfo),
    #[cfg(not(burn_023))]
    ReadTensor(Result<TensorData, ExecutionError>),
    #[cfg(burn_023)]
    ReadTensors(Result<Vec<TensorData>, ExecutionError>),
    SyncBackend(Result<(), ExecutionError>),
    DTypeUsage(DTypeUsageSet),
    ProfileStart(Result<Option<ProfileToken>, ExecutionError>),
    ProfileEnd(Result<Option<Duration>, ExecutionError>),
    InitRefused(SessionRefusal),
}

// ---------------------------------------------------------------------------------------------
// burn-remote-0.22.1/src/transport/identity.rs (WebSocket variant only)
// ---------------------------------------------------------------------------------------------

#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Debug)]
pub enum PeerId {
    WebSocket(Address),
}

#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Debug)]
pub enum PeerAddr {
    WebSocket(Address),
}

// ---------------------------------------------------------------------------------------------
// burn-communication-0.22.1/src/external_comm.rs (`/data` route)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Serialize, Deserialize)]
pub enum ExternalCommMessage {
    TensorRequest(TensorTransferId),
    Tensor(TensorData),
}
