//! Replays the golden client frames against a real Burn 0.22.1 remote server (the Flex backend,
//! served in-process over websocket) and checks the server's answers.
//!
//! This validates the mirrored `pub(crate)` types against Burn's own server: the server decodes
//! our frames with its real `RemoteMessage`/`Task` (an encoding mistake makes it drop the session),
//! and its `TaskResponse` frames must decode with our mirror. The graph frames are executed and
//! their outputs compared with values computed here, which checks the relative graph and its
//! bindings, and the `/data` route is exercised with the fixture's `TensorRequest`.
//!
//! Usage: golden_live [path/to/vectors.tsv]  (default: tests/ir/golden/vectors.tsv)
//!
//! tests/interop-0.23 builds this file against Burn 0.23.0-pre.1 (`cfg(burn_023)`, bin
//! `golden_live_023`, default tests/ir/golden/vectors-0.23.0-pre.1.tsv): `/session` messages after
//! the handshake are then tagged (whole or segmented, burn-remote's transport/message.rs), reads are
//! `ReadTensors`, and a second, two-device server runs the fixture's `Task.AllReduceLocal`.

#[path = "../golden/mirror.rs"]
mod mirror;
#[path = "../golden/ops.rs"]
#[allow(dead_code)]
mod ops;
#[path = "../golden/values.rs"]
#[allow(dead_code)]
mod values;

use burn_backend::{DType, TensorData};
use burn_communication::websocket::{WsClient, WsClientChannel};
use burn_communication::{Address, CommunicationChannel, Message, ProtocolClient};
use burn_flex::{Flex, FlexDevice};
use burn_ir::{TensorId, TensorIr, TensorStatus};
use burn_remote::server::{BackendServer, WebSocketTransport};
use burn_backend::{ProfileOptions, Shape};
use burn_std::bf16;
use burn_std::id::StreamId;
use mirror::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use values::*;

struct Fixture(HashMap<(String, String), Vec<u8>>);

impl Fixture {
    fn load(path: &PathBuf) -> Self {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut map = HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let mut parts = line.split('\t');
            let (kind, name, hex) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
            map.insert((kind.to_string(), name.to_string()), hex::decode(hex).unwrap());
        }
        Self(map)
    }

    fn get(&self, kind: &str, name: &str) -> &[u8] {
        self.0
            .get(&(kind.to_string(), name.to_string()))
            .unwrap_or_else(|| panic!("fixture has no {kind} {name}"))
    }
}

#[derive(Default)]
struct Report {
    passed: usize,
    failed: Vec<String>,
}

impl Report {
    fn check(&mut self, ok: bool, what: impl Into<String>) {
        let what = what.into();
        if ok {
            self.passed += 1;
            println!("ok    {what}");
        } else {
            println!("FAIL  {what}");
            self.failed.push(what);
        }
    }
}

struct Session {
    ch: WsClientChannel,
    /// 0.23: a `/session` route, whose messages are tagged once the handshake is answered.
    #[cfg(burn_023)]
    session_route: bool,
    #[cfg(burn_023)]
    tagged: bool,
}

/// 0.23's message layer (burn-remote-0.23.0-pre.1/src/transport/{message,link}.rs): `0x00` ‖ bytes
/// up to 64 KiB in one websocket message; above, a `0x01` ‖ u64-LE length head, then the bytes in
/// segments of at most 1 MiB.
#[cfg(burn_023)]
fn v6_messages(bytes: &[u8]) -> Vec<Vec<u8>> {
    const MAX_WHOLE_MESSAGE_SIZE: usize = 64 * 1024;
    const MAX_FRAME_SIZE: usize = 1024 * 1024;
    if bytes.len() <= MAX_WHOLE_MESSAGE_SIZE {
        return vec![[&[0u8][..], bytes].concat()];
    }
    let mut out = vec![[&[1u8][..], &(bytes.len() as u64).to_le_bytes()].concat()];
    out.extend(bytes.chunks(MAX_FRAME_SIZE).map(<[u8]>::to_vec));
    out
}

const TIMEOUT: Duration = Duration::from_secs(30);

impl Session {
    async fn open(addr: &str, route: &str) -> Self {
        let ch = WsClient::connect(Address::from(addr), route).await.expect("connect");
        Self {
            ch,
            #[cfg(burn_023)]
            session_route: route == "session",
            #[cfg(burn_023)]
            tagged: false,
        }
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        #[cfg(burn_023)]
        if self.tagged {
            for message in v6_messages(bytes) {
                self.ch.send(Message::new(message.into())).await.expect("send");
            }
            return;
        }
        self.ch.send(Message::new(bytes.to_vec().into())).await.expect("send");
    }

    async fn send(&mut self, msgs: Vec<RemoteMessage>) {
        self.send_raw(&rmp_serde::to_vec(&msgs).unwrap()).await;
    }

    async fn recv_raw(&mut self) -> Option<Vec<u8>> {
        match tokio::time::timeout(TIMEOUT, self.ch.recv()).await {
            Ok(Ok(Some(m))) => Some(m.data.to_vec()),
            Ok(Ok(None)) => None,
            Ok(Err(e)) => {
                println!("      (recv error: {e:?})");
                None
            }
            Err(_) => panic!("no answer from the server within {TIMEOUT:?}"),
        }
    }

    /// 0.23: one message of the session, untagged: the bare handshake answer, then (tagged)
    /// whole or reassembled segmented messages.
    #[cfg(burn_023)]
    async fn recv_v6(&mut self) -> Option<Vec<u8>> {
        if !self.tagged {
            let bytes = self.recv_raw().await;
            self.tagged = self.session_route && bytes.is_some();
            return bytes;
        }
        let head = self.recv_raw().await?;
        match head.split_first() {
            Some((0, rest)) => Some(rest.to_vec()),
            Some((1, len)) if len.len() == 8 => {
                let len = u64::from_le_bytes(len.try_into().unwrap()) as usize;
                let mut out = Vec::with_capacity(len);
                while out.len() < len {
                    out.extend(self.recv_raw().await?);
                }
                assert_eq!(out.len(), len, "segments overran the announced length");
                Some(out)
            }
            _ => panic!("not a v6 message head: {}", hex::encode(&head)),
        }
    }

    async fn recv(&mut self) -> (Vec<u8>, TaskResponse) {
        #[cfg(not(burn_023))]
        let bytes = self.recv_raw().await.expect("the server closed the session");
        #[cfg(burn_023)]
        let bytes = self.recv_v6().await.expect("the server closed the session");
        let resp: TaskResponse = rmp_serde::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("server frame does not decode with the mirror: {e}; {}", hex::encode(&bytes)));
        (bytes, resp)
    }
}

fn sid(value: u64) -> StreamId {
    StreamId { value }
}

fn t(id: u64, dims: &[usize], dtype: DType) -> TensorIr {
    TensorIr { id: TensorId::new(id), shape: Shape::from(dims.to_vec()), status: TensorStatus::ReadOnly, dtype }
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4 * (1.0 + y.abs()))
}

/// The task reading one tensor.
#[cfg(not(burn_023))]
fn read_task(id: u64, stream: StreamId, tensor: TensorIr) -> Task {
    Task::ReadTensor(id, stream, tensor)
}
#[cfg(burn_023)]
fn read_task(id: u64, stream: StreamId, tensor: TensorIr) -> Task {
    Task::ReadTensors(id, stream, vec![tensor])
}

fn read_data(resp: &TaskResponse, id: u64) -> Option<&TensorData> {
    match (&resp.content, resp.id == id) {
        #[cfg(not(burn_023))]
        (TaskResponseContent::ReadTensor(Ok(data)), true) => Some(data),
        #[cfg(burn_023)]
        (TaskResponseContent::ReadTensors(Ok(data)), true) if data.len() == 1 => Some(&data[0]),
        _ => {
            println!("      unexpected response {resp:?}");
            None
        }
    }
}

/// The expected output of the fixture graph for one run.
fn graph_expected(x: &[f32], y: &[f32], a: f32, b: f32, rows: std::ops::Range<usize>, reverse: bool) -> Vec<f32> {
    let mut out = Vec::new();
    for r in rows {
        for c in 0..8 {
            let col = if reverse { 7 - c } else { c };
            out.push((a * x[r * 8 + col]).exp() + b);
        }
    }
    out.iter().enumerate().map(|(k, v)| v + y[k % 4]).collect()
}

/// The `TensorData` carried by the first `RegisterTensor` of a fixture frame.
fn registered_data(frame: &[u8]) -> (StreamId, TensorId, TensorData) {
    let msgs: Vec<RemoteMessage> = rmp_serde::from_slice(frame).unwrap();
    for m in msgs {
        if let RemoteMessage::Task(Task::RegisterTensor(s, id, data)) = m {
            return (s, id, data);
        }
    }
    panic!("no RegisterTensor in frame")
}

async fn run(addr: String, fx: &Fixture, rep: &mut Report) {
    // ---- refusals --------------------------------------------------------------------------
    {
        let mut s = Session::open(&addr, "session").await;
        s.send_raw(fx.get("frame", "Init/device3-auth")).await;
        let (bytes, resp) = s.recv().await;
        let expected = rmp_serde::to_vec(&TaskResponse {
            content: TaskResponseContent::InitRefused(SessionRefusal::NoSuchDevice { device_count: 1 }),
            id: 0,
        })
        .unwrap();
        rep.check(bytes == expected, format!("frame Init/device3-auth -> {resp:?}"));
    }
    {
        let mut s = Session::open(&addr, "session").await;
        s.send(vec![RemoteMessage::Init(SessionInit {
            version: PROTOCOL_VERSION - 1,
            session_id: SessionId { id: 99 },
            device_index: 0,
            authorization: vec![],
        })])
        .await;
        let (bytes, resp) = s.recv().await;
        rep.check(
            bytes == fx.get("response", "InitRefused/IncompatibleProtocol"),
            format!("Init with version {} -> {resp:?} (== fixture response InitRefused/IncompatibleProtocol)", PROTOCOL_VERSION - 1),
        );
    }

    // ---- main session ----------------------------------------------------------------------
    let mut s = Session::open(&addr, "session").await;
    s.send_raw(fx.get("frame", "Init")).await;
    let (bytes, resp) = s.recv().await;
    rep.check(bytes == fx.get("response", "Init"), format!("frame Init -> fixture response Init ({resp:?})"));

    s.send_raw(fx.get("frame", "Task.Seed")).await;

    // Graph: register inputs, register+execute, read; then replay with new bindings.
    let x1: Vec<f32> = (0..32).map(|i| i as f32 * 0.1 - 1.0).collect();
    let x2: Vec<f32> = (0..32).map(|i| i as f32 * -0.05 + 0.3).collect();
    let y: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0];
    s.send(vec![
        RemoteMessage::Task(Task::RegisterTensor(sid(2), TensorId::new(GRAPH_X1), TensorData::new(x1.clone(), [4, 8]))),
        RemoteMessage::Task(Task::RegisterTensor(sid(2), TensorId::new(GRAPH_Y), TensorData::new(y.clone(), [1, 4]))),
        RemoteMessage::Task(Task::RegisterTensor(sid(2), TensorId::new(GRAPH_X2), TensorData::new(x2.clone(), [4, 8]))),
    ])
    .await;
    s.send_raw(fx.get("frame", "Task.RegisterAndExecuteGraph")).await;
    s.send(vec![RemoteMessage::Task(read_task(100, sid(2), t(GRAPH_OUT1, &[4, 4], DType::F32)))]).await;
    let (_, resp) = s.recv().await;
    let expected = graph_expected(&x1, &y, 0.5, -3.25, 0..2, true);
    let got = read_data(&resp, 100).map(|d| d.try_to_vec::<f32>().unwrap());
    rep.check(
        got.as_deref().is_some_and(|g| close(g, &expected)),
        format!("frame Task.RegisterAndExecuteGraph: output {got:?}, expected {expected:?}"),
    );
    s.send_raw(fx.get("frame", "Task.ExecuteGraph")).await;
    s.send(vec![RemoteMessage::Task(read_task(101, sid(2), t(GRAPH_OUT2, &[4, 4], DType::F32)))]).await;
    let (_, resp) = s.recv().await;
    let expected = graph_expected(&x2, &y, 2.0, 0.0, 2..4, false);
    let got = read_data(&resp, 101).map(|d| d.try_to_vec::<f32>().unwrap());
    rep.check(
        got.as_deref().is_some_and(|g| close(g, &expected)),
        format!("frame Task.ExecuteGraph: output {got:?}, expected {expected:?}"),
    );

    // Batch of three ops and a read.
    s.send(vec![
        RemoteMessage::Task(Task::RegisterTensor(sid(1), TensorId::new(BATCH_A), TensorData::new(vec![1.0f32, -2.0, 3.0, -4.0], [4]))),
        RemoteMessage::Task(Task::RegisterTensor(sid(1), TensorId::new(BATCH_B), TensorData::new(vec![2.0f32, 2.0, -1.0, 0.5], [4]))),
    ])
    .await;
    s.send_raw(fx.get("frame", "Batch/3ops-read")).await;
    let (_, resp) = s.recv().await;
    let got = read_data(&resp, 12).map(|d| d.try_to_vec::<f32>().unwrap());
    rep.check(got.as_deref() == Some(&[2.0f32][..]), format!("frame Batch/3ops-read: sum(relu(a*b)) = {got:?}, expected [2.0]"));

    // Register tensors, read them back (the server answers with Burn's own TensorData).
    for (i, name) in ["Task.RegisterTensor", "Task.RegisterTensor/bool-u8", "Task.RegisterTensor/i64-rank0"].into_iter().enumerate() {
        let frame = fx.get("frame", name);
        let (stream, id, data) = registered_data(frame);
        s.send_raw(frame).await;
        let req = 102 + i as u64;
        let ir = TensorIr { id, shape: data.shape().clone(), status: TensorStatus::ReadOnly, dtype: data.dtype() };
        s.send(vec![RemoteMessage::Task(read_task(req, stream, ir))]).await;
        let (_, resp) = s.recv().await;
        let got = read_data(&resp, req);
        rep.check(got == Some(&data), format!("frame {name}: read back {got:?}"));
    }

    // Alias of the tensor registered by Task.RegisterTensor.
    s.send_raw(fx.get("frame", "Task.RegisterAlias")).await;
    let (_, _, data) = registered_data(fx.get("frame", "Task.RegisterTensor"));
    s.send(vec![RemoteMessage::Task(read_task(110, sid(1), t(0x8000_0000_0000_0009, &[2, 3], DType::F32)))]).await;
    let (_, resp) = s.recv().await;
    let got = read_data(&resp, 110);
    rep.check(got == Some(&data), format!("frame Task.RegisterAlias: alias reads {got:?}"));

    // Sync / dtype usage / profiling.
    s.send_raw(fx.get("frame", "Task.SyncBackend")).await;
    let (bytes, resp) = s.recv().await;
    let expected = rmp_serde::to_vec(&TaskResponse { content: TaskResponseContent::SyncBackend(Ok(())), id: 6 }).unwrap();
    rep.check(bytes == expected, format!("frame Task.SyncBackend -> {resp:?}"));
    for (name, req) in [("Task.DTypeUsage", 0), ("Task.DTypeUsage/bool-u32", 2), ("Task.DTypeUsage/qfloat", 3)] {
        s.send_raw(fx.get("frame", name)).await;
        let (_, resp) = s.recv().await;
        rep.check(
            matches!(resp.content, TaskResponseContent::DTypeUsage(_)) && resp.id == req,
            format!("frame {name} -> {resp:?}"),
        );
    }
    s.send_raw(fx.get("frame", "Task.ProfileStart")).await;
    let (_, resp) = s.recv().await;
    let token = match &resp.content {
        TaskResponseContent::ProfileStart(Ok(token)) if resp.id == 8 => {
            rep.check(true, format!("frame Task.ProfileStart -> {resp:?}"));
            *token
        }
        _ => {
            rep.check(false, format!("frame Task.ProfileStart -> {resp:?}"));
            None
        }
    };
    if let Some(token) = token {
        s.send(vec![RemoteMessage::Task(Task::ProfileEnd(9, sid(1), token, ProfileOptions::default().flush()))]).await;
        let (_, resp) = s.recv().await;
        rep.check(
            matches!(resp.content, TaskResponseContent::ProfileEnd(Ok(_))) && resp.id == 9,
            format!("ProfileEnd with the server's token -> {resp:?}"),
        );
    }

    // Transfers: remote exposure served on /data, then a same-host transfer.
    let exposed: Vec<f32> = (0..16).map(|i| i as f32 - 8.0).collect();
    s.send(vec![RemoteMessage::Task(Task::RegisterTensor(sid(1), TensorId::new(0x2_0000_0000), TensorData::new(exposed.clone(), [4, 4])))]).await;
    s.send_raw(fx.get("frame", "Task.ExposeTensorRemote")).await;
    let mut data_ch = Session::open(&addr, "data").await;
    for round in 0..2 {
        data_ch.send_raw(fx.get("data", "TensorRequest")).await;
        let bytes = data_ch.recv_raw().await.expect("data channel closed");
        let msg: Result<ExternalCommMessage, _> = rmp_serde::from_slice(&bytes);
        let ok = matches!(&msg, Ok(ExternalCommMessage::Tensor(d)) if d.try_to_vec::<f32>().ok() == Some(exposed.clone()));
        rep.check(ok, format!("data TensorRequest (download {round}) after frame Task.ExposeTensorRemote -> {:?}", msg.map(|m| format!("{m:?}"))));
    }
    // Close with a handshake: Burn's /data handler panics (in its task) on a bare reset.
    let _ = data_ch.ch.close().await;
    s.send(vec![RemoteMessage::Task(Task::RegisterTensor(
        sid(5),
        TensorId::new(11),
        TensorData::new(Vec::<bf16>::new(), [3, 0, 2]),
    ))])
    .await;
    s.send_raw(fx.get("frame", "Task.ExposeTensorLocal")).await;
    s.send_raw(fx.get("frame", "Task.RegisterTensorLocal")).await;
    s.send(vec![RemoteMessage::Task(read_task(111, sid(6), t(12, &[3, 0, 2], DType::BF16)))]).await;
    let (_, resp) = s.recv().await;
    let got = read_data(&resp, 111);
    rep.check(
        got.is_some_and(|d| d.dtype() == DType::BF16 && d.shape().as_slice() == [3, 0, 2]),
        format!("frames Task.ExposeTensorLocal + Task.RegisterTensorLocal: read {got:?}"),
    );

    // Init/Drop batch ending in a sync, an abandoned profile window, then Close.
    s.send_raw(fx.get("frame", "Batch/register-init-drop-sync")).await;
    let (_, resp) = s.recv().await;
    rep.check(
        matches!(resp.content, TaskResponseContent::SyncBackend(Ok(()))) && resp.id == 13,
        format!("frame Batch/register-init-drop-sync -> {resp:?}"),
    );
    s.send_raw(fx.get("frame", "Task.ProfileAbandon")).await;
    s.send(vec![RemoteMessage::Task(Task::SyncBackend(112, sid(1)))]).await;
    let (_, resp) = s.recv().await;
    rep.check(resp.id == 112, format!("session alive after frame Task.ProfileAbandon -> {resp:?}"));
    s.send_raw(fx.get("frame", "Close")).await;
    let after = s.recv_raw().await;
    rep.check(after.is_none(), format!("frame Close -> server closed the session ({after:?})"));
    #[cfg(burn_023)]
    read_tensors_023(&addr, fx, rep).await;

}

fn main() {
    #[cfg(not(burn_023))]
    let path = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/ir/golden/vectors.tsv")
    });
    #[cfg(burn_023)]
    let path = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/ir/golden/vectors-0.23.0-pre.1.tsv")
    });
    let fx = Fixture::load(&path);

    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("ws://{}", listener.local_addr().unwrap());
    let server = BackendServer::<Flex>::new(vec![FlexDevice::default()]);
    let serving = server.serve_async(WebSocketTransport::from_listener(listener));
    let _guard = rt.enter();
    rt.spawn(async move {
        if let Err(e) = serving.await {
            eprintln!("server stopped: {e:?}");
        }
    });

    let mut rep = Report::default();
    rt.block_on(run(addr, &fx, &mut rep));
    #[cfg(burn_023)]
    {
        // A two-device server for the fixture's two-member `Task.AllReduceLocal`.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("ws://{}", listener.local_addr().unwrap());
        let server = BackendServer::<Flex>::new(vec![FlexDevice::default(); 2]);
        let serving = server.serve_async(WebSocketTransport::from_listener(listener));
        rt.spawn(async move {
            if let Err(e) = serving.await {
                eprintln!("server stopped: {e:?}");
            }
        });
        rt.block_on(all_reduce_023(addr, &fx, &mut rep));
    }
    println!("golden_live: {} passed, {} failed", rep.passed, rep.failed.len());
    if !rep.failed.is_empty() {
        std::process::exit(1);
    }
}

/// 0.23: the fixture's `Task.ReadTensors` frames (one, none, and a batch with a quantized tensor)
/// on a session of their own.
#[cfg(burn_023)]
async fn read_tensors_023(addr: &str, fx: &Fixture, rep: &mut Report) {
    let mut s = Session::open(addr, "session").await;
    s.send(vec![RemoteMessage::Init(SessionInit { version: PROTOCOL_VERSION, session_id: SessionId { id: 0x5EED }, device_index: 0, authorization: vec![] })]).await;
    let (_, resp) = s.recv().await;
    rep.check(matches!(resp.content, TaskResponseContent::Init(_)), format!("second session Init -> {resp:?}"));
    let data = TensorData::new(vec![1.0f32, -2.0, 3.5, 4.0, 0.0, -6.25], [2, 3]);
    s.send(vec![RemoteMessage::Task(Task::RegisterTensor(sid(1), TensorId::new(3), data.clone()))]).await;
    s.send_raw(fx.get("frame", "Task.ReadTensors")).await;
    let (_, resp) = s.recv().await;
    let got = read_data(&resp, 5);
    rep.check(got == Some(&data), format!("frame Task.ReadTensors: read {got:?}"));

    s.send_raw(fx.get("frame", "Task.ReadTensors/empty")).await;
    let (bytes, resp) = s.recv().await;
    let expected = rmp_serde::to_vec(&TaskResponse { content: TaskResponseContent::ReadTensors(Ok(vec![])), id: 0 }).unwrap();
    rep.check(bytes == expected, format!("frame Task.ReadTensors/empty -> {resp:?}"));

    // The tensors `Task.ReadTensors/several-mixed` names, registered with matching data.
    let msgs: Vec<RemoteMessage> = rmp_serde::from_slice(fx.get("frame", "Task.ReadTensors/several-mixed")).unwrap();
    let Some(RemoteMessage::Task(Task::ReadTensors(req, stream, tensors))) = msgs.into_iter().next() else {
        panic!("Task.ReadTensors/several-mixed is not one ReadTensors")
    };
    let mut expected = Vec::new();
    for (i, t) in tensors.iter().enumerate() {
        let data = match t.dtype {
            DType::QFloat(scheme) => {
                let n = t.shape.num_elements();
                let blocks = scheme.block_size().map_or(1, |b| b.num_blocks(t.shape.as_slice()).iter().product());
                let scales: Vec<f32> = (0..blocks).map(|b| 0.01 * (b + 1) as f32).collect();
                let codes: Vec<i8> = (0..n).map(|k| ((k * 7 + i) % 15) as i8 - 7).collect();
                TensorData::quantized(codes, t.shape.clone(), scheme, &scales, None)
            }
            DType::I64 => TensorData::new(vec![-42i64; t.shape.num_elements()], t.shape.clone()),
            DType::Bool(_) => TensorData::from_bytes_vec(vec![1u8; t.shape.num_elements()], t.shape.clone(), t.dtype),
            DType::BF16 => TensorData::new((0..t.shape.num_elements()).map(|k| bf16::from_f32(k as f32 - 3.0)).collect::<Vec<_>>(), t.shape.clone()),
            other => panic!("no data for {other:?}"),
        };
        s.send(vec![RemoteMessage::Task(Task::RegisterTensor(stream, t.id, data.clone()))]).await;
        expected.push(data);
    }
    s.send_raw(fx.get("frame", "Task.ReadTensors/several-mixed")).await;
    let (_, resp) = s.recv().await;
    let ok = matches!(&resp.content, TaskResponseContent::ReadTensors(Ok(got)) if resp.id == req
        && got.len() == expected.len()
        && got.iter().zip(&expected).all(|(g, e)| g.shape() == e.shape() && g.dtype() == e.dtype()
            && (g == e || matches!(e.dtype(), DType::QFloat(_)))));
    rep.check(ok, format!("frame Task.ReadTensors/several-mixed -> {} tensors, in order", expected.len()));
}

/// 0.23: the fixture's `Task.AllReduceLocal` (member 0 of two, Sum) on device 0 of a two-device
/// server, with member 1 sent by a session on device 1 whose id the fixture names.
#[cfg(burn_023)]
async fn all_reduce_023(addr: String, fx: &Fixture, rep: &mut Report) {
    use burn_backend::distributed::ReduceOperation;
    let frame = fx.get("frame", "Task.AllReduceLocal");
    let msgs: Vec<RemoteMessage> = rmp_serde::from_slice(frame).unwrap();
    let Some(RemoteMessage::Task(Task::AllReduceLocal { stream_id, part })) = msgs.into_iter().next() else {
        panic!("Task.AllReduceLocal is not one AllReduceLocal")
    };
    assert_eq!(part.member, 0);
    assert_eq!(part.sessions.len(), 2);
    let mut s0 = Session::open(&addr, "session").await;
    s0.send(vec![RemoteMessage::Init(SessionInit { version: PROTOCOL_VERSION, session_id: part.sessions[0], device_index: 0, authorization: vec![] })]).await;
    let _ = s0.recv().await;
    let mut s1 = Session::open(&addr, "session").await;
    s1.send(vec![RemoteMessage::Init(SessionInit { version: PROTOCOL_VERSION, session_id: part.sessions[1], device_index: 1, authorization: vec![] })]).await;
    let _ = s1.recv().await;

    let n = part.tensor.shape.num_elements();
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 10.0 - i as f32).collect();
    let shape = part.tensor.shape.clone();
    s0.send(vec![RemoteMessage::Task(Task::RegisterTensor(stream_id, part.tensor.id, TensorData::new(a.clone(), shape.clone())))]).await;
    s1.send(vec![RemoteMessage::Task(Task::RegisterTensor(stream_id, TensorId::new(5), TensorData::new(b.clone(), shape.clone())))]).await;
    let other = LocalAllReducePart {
        tensor: TensorIr { id: TensorId::new(5), ..part.tensor.clone() },
        out: TensorId::new(6),
        collective: part.collective,
        member: 1,
        sessions: part.sessions.clone(),
        op: ReduceOperation::Sum,
    };
    s0.send_raw(frame).await;
    s1.send(vec![RemoteMessage::Task(Task::AllReduceLocal { stream_id, part: other })]).await;
    let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let out0 = TensorIr { id: part.out, status: TensorStatus::ReadOnly, ..part.tensor.clone() };
    s0.send(vec![RemoteMessage::Task(read_task(200, stream_id, out0))]).await;
    let (_, resp) = s0.recv().await;
    let got0 = read_data(&resp, 200).map(|d| d.try_to_vec::<f32>().unwrap());
    let out1 = TensorIr { id: TensorId::new(6), status: TensorStatus::ReadOnly, ..part.tensor.clone() };
    s1.send(vec![RemoteMessage::Task(read_task(201, stream_id, out1))]).await;
    let (_, resp) = s1.recv().await;
    let got1 = read_data(&resp, 201).map(|d| d.try_to_vec::<f32>().unwrap());
    rep.check(
        got0.as_deref().is_some_and(|g| close(g, &sum)) && got1.as_deref().is_some_and(|g| close(g, &sum)),
        format!("frame Task.AllReduceLocal (+ member 1 on device 1): {got0:?} / {got1:?}, expected {sum:?}"),
    );
}
