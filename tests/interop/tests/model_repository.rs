//! A model repository with versions (`torchbridge serve --model-repository DIR`), judged through
//! Burn's own custom-op client: `DIR/NAME/VERSION/model.pt` is served as the custom op `NAME` (its
//! newest served version) and `NAME@VERSION`; `--model-control explicit|poll|none` says when the
//! host looks at the folder again, and the admin routes `/v1/models...` (token of
//! `--admin-token-file`) list, load and unload models while Burn programs call them.
//!
//! Every test starts a host of its own on a repository of its own under the temp dir. New files
//! are written outside the repository and renamed into place, as a deployment would.
//!
//! The modules come from `tb_make_test_modules` (as in custom_ops.rs): `plus_one` is x + 1,
//! `plus_two` is x + 2, `sum_and_argmax` has another signature.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use burn::prelude::*;
use burn::tensor::DType;
use burn::tensor::remote::RemoteHost;
use serde_json::Value;
use torchbridge_interop::harness::TorchbridgeHost;

use crate::custom_ops::{custom_op_primitives, expect_error, float, module, primitive};

const TOKEN: &str = "tb-admin-9f3c2e71";

/// A repository folder and its surroundings: `ROOT/repo` (served), `ROOT/staging` (where files
/// are written before they are renamed into the repository, on the same file system) and
/// `ROOT/admin-token`. Removed when the value goes away.
struct Repo {
    root: PathBuf,
    staged: AtomicUsize,
}

impl Repo {
    fn new(test: &str) -> Self {
        let root =
            std::env::temp_dir().join(format!("tb_model_repository_{}_{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("repo")).unwrap();
        std::fs::create_dir_all(root.join("staging")).unwrap();
        std::fs::write(root.join("admin-token"), format!("{TOKEN}\n")).unwrap();
        Self {
            root,
            staged: AtomicUsize::new(0),
        }
    }

    fn dir(&self) -> PathBuf {
        self.root.join("repo")
    }

    fn token_file(&self) -> PathBuf {
        self.root.join("admin-token")
    }

    /// A fresh path under `ROOT/staging`.
    fn staging(&self, what: &str) -> PathBuf {
        let n = self.staged.fetch_add(1, Ordering::Relaxed);
        self.root.join("staging").join(format!("{n}_{what}"))
    }

    /// `DIR/NAME/VERSION/model.pt` = `bytes`: the version folder is filled outside the
    /// repository and renamed into place whole.
    fn add_version(&self, name: &str, version: u32, bytes: &[u8]) {
        let folder = self.staging("version");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("model.pt"), bytes).unwrap();
        std::fs::create_dir_all(self.dir().join(name)).unwrap();
        let target = self.dir().join(name).join(version.to_string());
        std::fs::rename(&folder, &target)
            .unwrap_or_else(|e| panic!("cannot rename {folder:?} to {target:?}: {e}"));
    }

    /// Replaces `DIR/NAME/VERSION/model.pt` with `bytes` by one rename.
    fn replace_model(&self, name: &str, version: u32, bytes: &[u8]) {
        let file = self.staging("model.pt");
        std::fs::write(&file, bytes).unwrap();
        let target = self
            .dir()
            .join(name)
            .join(version.to_string())
            .join("model.pt");
        std::fs::rename(&file, &target)
            .unwrap_or_else(|e| panic!("cannot rename {file:?} to {target:?}: {e}"));
    }

    /// Takes `DIR/NAME/VERSION` out of the repository by one rename, then deletes it.
    fn remove_version(&self, name: &str, version: u32) {
        let folder = self.dir().join(name).join(version.to_string());
        let gone = self.staging("removed");
        std::fs::rename(&folder, &gone)
            .unwrap_or_else(|e| panic!("cannot rename {folder:?} to {gone:?}: {e}"));
        std::fs::remove_dir_all(&gone).unwrap();
    }

    /// `DIR/NAME/config.txt` = `text`.
    fn config(&self, name: &str, text: &str) {
        let file = self.staging("config.txt");
        std::fs::write(&file, text).unwrap();
        std::fs::create_dir_all(self.dir().join(name)).unwrap();
        std::fs::rename(&file, self.dir().join(name).join("config.txt")).unwrap();
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The bytes of test module `name` (tb_make_test_modules).
fn module_bytes(name: &str) -> Vec<u8> {
    let path = module(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// `torchbridge serve --model-repository DIR --model-control CONTROL --admin-token-file FILE
/// EXTRA...`.
fn serve(repo: &Repo, control: &str, extra: &[&str]) -> TorchbridgeHost {
    let dir = repo.dir().display().to_string();
    let token = repo.token_file().display().to_string();
    let mut args = vec![
        "--model-repository",
        dir.as_str(),
        "--model-control",
        control,
        "--admin-token-file",
        token.as_str(),
    ];
    args.extend_from_slice(extra);
    TorchbridgeHost::spawn(&args)
}

/// One HTTP answer.
struct Reply {
    status: u16,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {} {}", self.status, self.body)
    }
}

/// `host:port` of a host's `ws://host:port[/...]` address.
fn authority(address: &str) -> &str {
    let rest = address
        .strip_prefix("ws://")
        .or_else(|| address.strip_prefix("wss://"))
        .unwrap_or(address);
    rest.split('/').next().unwrap()
}

/// `METHOD PATH` on `host`'s port over plain HTTP/1.1, with `Authorization: Bearer TOKEN` when
/// `token` is given.
fn http(host: &TorchbridgeHost, method: &str, path: &str, token: Option<&str>) -> Reply {
    let authority = authority(&host.address);
    let mut stream = TcpStream::connect(authority)
        .unwrap_or_else(|e| panic!("cannot connect to {authority}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(token) = token {
        request += &format!("Authorization: Bearer {token}\r\n");
    }
    request += "Content-Length: 0\r\nConnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("{method} {path}: no complete answer: {e}"));
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{method} {path}: no end of headers in {text:?}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("{method} {path}: no status in {head:?}"));
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Reply { status, body }
}

/// The payload of a `Transfer-Encoding: chunked` body.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out += &rest[..size];
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// The model object named `name` of a `/v1/models` answer, or the answer itself when it is that
/// model's object (the load and unload routes).
fn model_json<'a>(json: &'a Value, name: &str) -> &'a Value {
    if let Some(models) = json.get("models").and_then(Value::as_array) {
        return models
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no model {name:?} in {json}"));
    }
    assert_eq!(json["name"], name, "not model {name:?}: {json}");
    json
}

/// The object of `version` in a model object.
fn version_json(model: &Value, version: u64) -> &Value {
    model["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("no versions in {model}"))
        .iter()
        .find(|v| v["version"] == version)
        .unwrap_or_else(|| panic!("no version {version} in {model}"))
}

/// `POST /v1/models/NAME/ACTION` with the right token; prints how long it took.
fn admin(host: &TorchbridgeHost, name: &str, action: &str) -> (Reply, Duration) {
    let started = Instant::now();
    let reply = http(
        host,
        "POST",
        &format!("/v1/models/{name}/{action}"),
        Some(TOKEN),
    );
    let took = started.elapsed();
    eprintln!(
        "POST /v1/models/{name}/{action}: HTTP {} in {:.1} ms",
        reply.status,
        took.as_secs_f64() * 1e3
    );
    (reply, took)
}

/// Device 0 of the host at `address`, opened as an unmodified Burn program would.
fn open(address: &str) -> Device {
    Device::remote_options(&RemoteHost::websocket(address))
        .device_index(0)
        .init()
        .unwrap_or_else(|e| panic!("cannot open device 0 on {address}: {e:?}"))
}

/// The input of call `i`, before Burn doubles it on the remote device.
fn base(i: usize) -> [f32; 4] {
    [(i % 512) as f32, 0.5, -2.0, 1.25]
}

/// What call `i` sends: base(i) * 2, computed by a Burn op on the remote device.
fn sent(i: usize) -> Vec<f32> {
    base(i).iter().map(|v| v * 2.0).collect()
}

/// `x + k` for the input of call `i`.
fn plus(i: usize, k: f32) -> Vec<f32> {
    sent(i).iter().map(|v| v + k).collect()
}

/// Custom op `id` on a [4] tensor made by Burn ops on `device`: its result, or the error its read
/// reports.
fn try_call(device: &Device, id: &str, i: usize) -> Result<Vec<f32>, String> {
    let x = Tensor::<1>::from_data(base(i), device) * 2.0;
    let out = custom_op_primitives(
        device,
        id,
        vec![primitive(x)],
        &[(vec![4], DType::F32)],
        vec![],
    )
    .remove(0);
    match float::<1>(out).try_into_data() {
        Ok(data) => Ok(data.try_into_vec::<f32>().unwrap()),
        Err(e) => Err(format!("{e}")),
    }
}

/// `try_call` that must succeed.
#[track_caller]
fn call(device: &Device, id: &str, i: usize) -> Vec<f32> {
    match try_call(device, id, i) {
        Ok(values) => values,
        Err(e) => panic!("call {i} of {id:?} failed: {e}"),
    }
}

/// The op `id` on `device` must fail with an error naming every word of `words`.
#[track_caller]
fn call_fails(device: &Device, id: &str, words: &[&str]) {
    match try_call(device, id, 7) {
        Ok(values) => panic!("{id:?} answered {values:?}, expected an error"),
        Err(message) => {
            for word in words {
                assert!(
                    message.contains(word),
                    "the error of {id:?} lacks {word:?}: {message}"
                );
            }
        }
    }
}

/// Which of `x + 1` and `x + 2` a result of call `i` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    PlusOne,
    PlusTwo,
}

fn classify(i: usize, result: &Result<Vec<f32>, String>) -> Result<Seen, String> {
    match result {
        Ok(v) if *v == plus(i, 1.0) => Ok(Seen::PlusOne),
        Ok(v) if *v == plus(i, 2.0) => Ok(Seen::PlusTwo),
        Ok(v) => Err(format!(
            "call {i} read {v:?}: neither {:?} nor {:?}",
            plus(i, 1.0),
            plus(i, 2.0)
        )),
        Err(e) => Err(format!("call {i} failed: {e}")),
    }
}

/// One call made by `Caller`.
struct Call {
    started: Instant,
    result: Result<Vec<f32>, String>,
}

/// A thread of a Burn program calling one custom op in a loop on a session of its own.
struct Caller {
    calls: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Call>>,
}

impl Caller {
    fn start(host: &TorchbridgeHost, id: &'static str) -> Self {
        let calls = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let address = host.address.clone();
        let (c, s) = (calls.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let device = open(&address);
            let mut made = Vec::new();
            while !s.load(Ordering::Acquire) {
                let i = made.len();
                let started = Instant::now();
                let result = try_call(&device, id, i);
                made.push(Call { started, result });
                c.store(made.len(), Ordering::Release);
            }
            made
        });
        Self {
            calls,
            stop,
            thread,
        }
    }

    /// Waits until the loop has made `n` calls (panics after 120 s or when the thread ended).
    fn wait_for(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.calls.load(Ordering::Acquire) < n {
            assert!(!self.thread.is_finished(), "the calling thread ended early");
            assert!(
                Instant::now() < deadline,
                "only {} of {n} calls in 120 s",
                self.calls.load(Ordering::Acquire)
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn made(&self) -> usize {
        self.calls.load(Ordering::Acquire)
    }

    fn finish(self) -> Vec<Call> {
        self.stop.store(true, Ordering::Release);
        self.thread.join().expect("the calling thread panicked")
    }
}

/// Calls `id` every 50 ms until it gives `want` (panics after `limit`); every answer on the way
/// must be x + 1 or x + 2. Returns how long it took.
fn wait_until_serving(device: &Device, id: &str, want: Seen, limit: Duration) -> Duration {
    let started = Instant::now();
    let mut i = 0;
    loop {
        let result = try_call(device, id, i);
        let seen =
            classify(i, &result).unwrap_or_else(|e| panic!("while waiting for {want:?}: {e}"));
        if seen == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{id:?} still gives {seen:?} after {limit:?}"
        );
        i += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_version_swap_never_fails_a_call() {
    let repo = Repo::new("swap");
    repo.add_version("plus", 1, &module_bytes("plus_one"));
    let host = serve(&repo, "explicit", &[]);
    let device = host.device(0);
    assert_eq!(call(&device, "plus", 0), plus(0, 1.0));

    let caller = Caller::start(&host, "plus");
    caller.wait_for(100);
    // plus_two arrives as version 2 (renamed into place) and is loaded while the loop calls.
    repo.add_version("plus", 2, &module_bytes("plus_two"));
    let (reply, took) = admin(&host, "plus", "load");
    let loaded = Instant::now();
    assert_eq!(reply.status, 200, "{reply:?}");
    let json = reply.json();
    let model = model_json(&json, "plus");
    assert_eq!(model["serving"], 2, "{model}");
    assert_eq!(version_json(model, 2)["state"], "ready", "{model}");
    let before = caller.made();
    caller.wait_for((before + 100).max(220));
    let calls = caller.finish();

    let mut first_two: Option<usize> = None;
    let mut counts = [0usize; 2];
    for (i, c) in calls.iter().enumerate() {
        let seen = classify(i, &c.result).unwrap_or_else(|e| panic!("{e}"));
        match seen {
            Seen::PlusOne => {
                counts[0] += 1;
                if let Some(j) = first_two {
                    panic!("call {i} gave x + 1 after call {j} gave x + 2");
                }
                assert!(
                    c.started < loaded,
                    "call {i}, started after the load answered 200, gave x + 1"
                );
            }
            Seen::PlusTwo => {
                counts[1] += 1;
                first_two.get_or_insert(i);
            }
        }
    }
    eprintln!(
        "{} calls during the swap: {} gave x + 1, {} gave x + 2; the load took {:.1} ms",
        calls.len(),
        counts[0],
        counts[1],
        took.as_secs_f64() * 1e3
    );
    assert!(counts[0] > 0 && counts[1] > 0, "{counts:?}");
    // A fresh call after the load, on another session, gives x + 2.
    assert_eq!(call(&device, "plus", 3), plus(3, 2.0));
    assert_eq!(call(&device, "plus@2", 4), plus(4, 2.0));
    // Policy latest 1: version 1 is not served any more.
    call_fails(&device, "plus@1", &["plus"]);
    assert_eq!(call(&device, "plus", 5), plus(5, 2.0));
}

#[test]
fn versions_are_called_by_name() {
    let repo = Repo::new("by_name");
    repo.config("plus", "version_policy: all\n");
    repo.add_version("plus", 1, &module_bytes("plus_one"));
    repo.add_version("plus", 2, &module_bytes("plus_two"));
    let host = serve(&repo, "none", &[]);
    let device = host.device(0);
    assert_eq!(call(&device, "plus@1", 1), plus(1, 1.0));
    assert_eq!(call(&device, "plus@2", 2), plus(2, 2.0));
    assert_eq!(call(&device, "plus", 3), plus(3, 2.0));
    // Both again, interleaved, on one session.
    assert_eq!(call(&device, "plus@1", 4), plus(4, 1.0));
    assert_eq!(call(&device, "plus", 5), plus(5, 2.0));
    call_fails(&device, "plus@3", &["plus"]);
    assert_eq!(call(&device, "plus@1", 6), plus(6, 1.0));

    let reply = http(&host, "GET", "/v1/models", Some(TOKEN));
    assert_eq!(reply.status, 200, "{reply:?}");
    let json = reply.json();
    let model = model_json(&json, "plus");
    assert_eq!(model["serving"], 2, "{model}");
    for version in [1, 2] {
        let v = version_json(model, version);
        assert_eq!(v["state"], "ready", "{model}");
        assert!(
            v["signature"]
                .as_str()
                .is_some_and(|s| s.contains("forward")),
            "{model}"
        );
    }
}

#[test]
fn unload_ends_calls_with_a_clear_error() {
    let repo = Repo::new("unload");
    repo.add_version("plus", 1, &module_bytes("plus_one"));
    let host = serve(&repo, "explicit", &[]);
    let device = host.device(0);
    assert_eq!(call(&device, "plus", 0), plus(0, 1.0));

    let caller = Caller::start(&host, "plus");
    caller.wait_for(100);
    let (reply, _) = admin(&host, "plus", "unload");
    let unloaded = Instant::now();
    assert_eq!(reply.status, 200, "{reply:?}");
    let json = reply.json();
    assert!(model_json(&json, "plus")["serving"].is_null(), "{json}");
    let before = caller.made();
    caller.wait_for(before + 20);
    let calls = caller.finish();

    let mut first_error: Option<usize> = None;
    for (i, c) in calls.iter().enumerate() {
        match &c.result {
            Ok(_) => {
                assert_eq!(
                    classify(i, &c.result),
                    Ok(Seen::PlusOne),
                    "call {i} of a model that serves x + 1"
                );
                if let Some(j) = first_error {
                    panic!("call {i} succeeded after call {j} failed");
                }
                assert!(
                    c.started < unloaded,
                    "call {i}, started after the unload answered 200, succeeded"
                );
            }
            Err(message) => {
                first_error.get_or_insert(i);
                assert!(
                    message.contains("plus") && message.contains("unloaded"),
                    "call {i}: {message}"
                );
            }
        }
    }
    eprintln!(
        "{} calls around the unload, the first failure at {first_error:?}",
        calls.len()
    );
    assert!(first_error.is_some_and(|i| i > 0), "{first_error:?}");

    // After the unload a call fails, clearly, and the session goes on computing.
    let x = Tensor::<1>::from_data(base(9), &device) * 2.0;
    let y = float::<1>(
        custom_op_primitives(
            &device,
            "plus",
            vec![primitive(x)],
            &[(vec![4], DType::F32)],
            vec![],
        )
        .remove(0),
    );
    expect_error(y, "unloaded");
    call_fails(&device, "plus", &["plus", "unloaded"]);
    let a = Tensor::<1>::from_data([1.0f32, 2.0, 3.0, 4.0], &device);
    let b = Tensor::<1>::from_data([0.5f32, -1.0, 2.0, 8.0], &device);
    let sum = (a + b).into_data().try_into_vec::<f32>().unwrap();
    assert_eq!(sum, vec![1.5, 1.0, 5.0, 12.0]);

    let reply = http(&host, "GET", "/v1/models", Some(TOKEN));
    assert_eq!(reply.status, 200, "{reply:?}");
    let json = reply.json();
    assert!(model_json(&json, "plus")["serving"].is_null(), "{json}");
}

#[test]
fn bad_versions_are_refused_and_the_old_one_keeps_serving() {
    let repo = Repo::new("bad_versions");
    repo.add_version("plus", 1, &module_bytes("plus_one"));
    let host = serve(&repo, "explicit", &[]);
    let device = host.device(0);
    assert_eq!(call(&device, "plus", 0), plus(0, 1.0));

    // Version 2 is not a model at all.
    repo.add_version("plus", 2, b"not a model");
    let (reply, _) = admin(&host, "plus", "load");
    assert_eq!(reply.status, 422, "{reply:?}");
    assert!(reply.body.contains("failed"), "{reply:?}");
    // Version 1 goes on serving (checked before the answer's JSON, the weightier of the two).
    assert_eq!(call(&device, "plus", 1), plus(1, 1.0));
    assert_eq!(call(&device, "plus@1", 1), plus(1, 1.0));
    let json = reply.json();
    let model = model_json(&json, "plus");
    let v2 = version_json(model, 2);
    assert_eq!(v2["state"], "failed", "{model}");
    assert!(
        v2["error"].as_str().is_some_and(|e| !e.is_empty()),
        "no reason: {model}"
    );
    assert_eq!(version_json(model, 1)["state"], "ready", "{model}");
    assert_eq!(model["serving"], 1, "{model}");

    // Version 2 becomes a module of another signature (two inputs, two outputs).
    repo.replace_model("plus", 2, &module_bytes("sum_and_argmax"));
    let (reply, _) = admin(&host, "plus", "load");
    assert_eq!(reply.status, 422, "{reply:?}");
    assert_eq!(call(&device, "plus", 2), plus(2, 1.0));
    assert_eq!(call(&device, "plus@1", 3), plus(3, 1.0));
    let json = reply.json();
    let model = model_json(&json, "plus");
    let v2 = version_json(model, 2);
    assert_eq!(v2["state"], "failed", "{model}");
    assert!(
        v2["error"]
            .as_str()
            .is_some_and(|e| e.contains("signature")),
        "{model}"
    );
    assert_eq!(model["serving"], 1, "{model}");

    // The listing agrees.
    let reply = http(&host, "GET", "/v1/models", Some(TOKEN));
    assert_eq!(reply.status, 200, "{reply:?}");
    let json = reply.json();
    let model = model_json(&json, "plus");
    assert_eq!(model["serving"], 1, "{model}");
    assert_eq!(version_json(model, 1)["state"], "ready", "{model}");
    assert_eq!(version_json(model, 2)["state"], "failed", "{model}");

    // A good version 2 then goes in.
    repo.replace_model("plus", 2, &module_bytes("plus_two"));
    let (reply, _) = admin(&host, "plus", "load");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(call(&device, "plus", 4), plus(4, 2.0));
}

#[test]
fn admin_routes_need_their_token() {
    let repo = Repo::new("admin");
    repo.add_version("plus", 1, &module_bytes("plus_one"));
    let host = serve(&repo, "explicit", &[]);

    let reply = http(&host, "GET", "/v1/models", None);
    assert_eq!(reply.status, 401, "no token: {reply:?}");
    let reply = http(&host, "GET", "/v1/models", Some("tb-admin-wrong"));
    assert_eq!(reply.status, 401, "wrong token: {reply:?}");
    let reply = http(&host, "GET", "/v1/models", Some(""));
    assert_eq!(reply.status, 401, "empty token: {reply:?}");
    for action in ["load", "unload"] {
        let path = format!("/v1/models/plus/{action}");
        let reply = http(&host, "POST", &path, None);
        assert_eq!(reply.status, 401, "{path} without a token: {reply:?}");
        let reply = http(&host, "POST", &path, Some("tb-admin-wrong"));
        assert_eq!(reply.status, 401, "{path} with a wrong token: {reply:?}");
    }
    // Nothing of the refused unload happened.
    let device = host.device(0);
    assert_eq!(call(&device, "plus", 0), plus(0, 1.0));

    let reply = http(&host, "GET", "/v1/models", Some(TOKEN));
    assert_eq!(reply.status, 200, "right token: {reply:?}");
    let json = reply.json();
    assert_eq!(model_json(&json, "plus")["serving"], 1, "{json}");

    // Names that would leave the repository never load anything.
    for path in [
        "/v1/models/../load",
        "/v1/models/%2E%2E/load",
        "/v1/models/%2e%2e/load",
        "/v1/models/..%2F..%2Fetc/load",
        "/v1/models/.hidden/load",
    ] {
        let reply = http(&host, "POST", path, Some(TOKEN));
        assert!(
            reply.status == 400 || reply.status == 404,
            "POST {path}: {reply:?}"
        );
    }
    let reply = http(&host, "POST", "/v1/models/no_such_model/load", Some(TOKEN));
    assert_eq!(reply.status, 404, "{reply:?}");
    assert_eq!(call(&device, "plus", 1), plus(1, 1.0));

    // Without --admin-token-file there are no admin routes.
    let dir = repo.dir().display().to_string();
    let plain = TorchbridgeHost::spawn(&["--model-repository", dir.as_str()]);
    let reply = http(&plain, "GET", "/v1/models", Some(TOKEN));
    assert_eq!(reply.status, 404, "{reply:?}");
    let reply = http(&plain, "POST", "/v1/models/plus/unload", Some(TOKEN));
    assert_eq!(reply.status, 404, "{reply:?}");
    assert_eq!(call(&plain.device(0), "plus", 2), plus(2, 1.0));
}

#[test]
fn poll_mode_picks_up_new_versions() {
    let repo = Repo::new("poll");
    repo.add_version("plus", 1, &module_bytes("plus_one"));
    let host = serve(&repo, "poll", &["--model-poll-ms", "200"]);
    let device = host.device(0);
    assert_eq!(call(&device, "plus", 0), plus(0, 1.0));

    repo.add_version("plus", 2, &module_bytes("plus_two"));
    let took = wait_until_serving(&device, "plus", Seen::PlusTwo, Duration::from_secs(10));
    eprintln!(
        "poll: version 2 served after {:.0} ms",
        took.as_secs_f64() * 1e3
    );
    assert_eq!(call(&device, "plus@2", 1), plus(1, 2.0));

    repo.remove_version("plus", 2);
    let took = wait_until_serving(&device, "plus", Seen::PlusOne, Duration::from_secs(10));
    eprintln!(
        "poll: back to version 1 after {:.0} ms",
        took.as_secs_f64() * 1e3
    );
    // It stays there.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(call(&device, "plus", 2), plus(2, 1.0));
    let reply = http(&host, "GET", "/v1/models", Some(TOKEN));
    assert_eq!(reply.status, 200, "{reply:?}");
    let json = reply.json();
    assert_eq!(model_json(&json, "plus")["serving"], 1, "{json}");
}
