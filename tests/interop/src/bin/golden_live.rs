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
}

const TIMEOUT: Duration = Duration::from_secs(30);

impl Session {
    async fn open(addr: &str, route: &str) -> Self {
        let ch = WsClient::connect(Address::from(addr), route).await.expect("connect");
        Self { ch }
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
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

    async fn recv(&mut self) -> (Vec<u8>, TaskResponse) {
        let bytes = self.recv_raw().await.expect("the server closed the session");
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

fn read_data(resp: &TaskResponse, id: u64) -> Option<&TensorData> {
    match (&resp.content, resp.id == id) {
        (TaskResponseContent::ReadTensor(Ok(data)), true) => Some(data),
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
    s.send(vec![RemoteMessage::Task(Task::ReadTensor(100, sid(2), t(GRAPH_OUT1, &[4, 4], DType::F32)))]).await;
    let (_, resp) = s.recv().await;
    let expected = graph_expected(&x1, &y, 0.5, -3.25, 0..2, true);
    let got = read_data(&resp, 100).map(|d| d.try_to_vec::<f32>().unwrap());
    rep.check(
        got.as_deref().is_some_and(|g| close(g, &expected)),
        format!("frame Task.RegisterAndExecuteGraph: output {got:?}, expected {expected:?}"),
    );
    s.send_raw(fx.get("frame", "Task.ExecuteGraph")).await;
    s.send(vec![RemoteMessage::Task(Task::ReadTensor(101, sid(2), t(GRAPH_OUT2, &[4, 4], DType::F32)))]).await;
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
        s.send(vec![RemoteMessage::Task(Task::ReadTensor(req, stream, ir))]).await;
        let (_, resp) = s.recv().await;
        let got = read_data(&resp, req);
        rep.check(got == Some(&data), format!("frame {name}: read back {got:?}"));
    }

    // Alias of the tensor registered by Task.RegisterTensor.
    s.send_raw(fx.get("frame", "Task.RegisterAlias")).await;
    let (_, _, data) = registered_data(fx.get("frame", "Task.RegisterTensor"));
    s.send(vec![RemoteMessage::Task(Task::ReadTensor(110, sid(1), t(0x8000_0000_0000_0009, &[2, 3], DType::F32)))]).await;
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
    s.send(vec![RemoteMessage::Task(Task::ReadTensor(111, sid(6), t(12, &[3, 0, 2], DType::BF16)))]).await;
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

}

fn main() {
    let path = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/ir/golden/vectors.tsv")
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
    println!("golden_live: {} passed, {} failed", rep.passed, rep.failed.len());
    if !rep.failed.is_empty() {
        std::process::exit(1);
    }
}
