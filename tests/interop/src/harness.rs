//! Starting hosts and comparing results.
//!
//! The device under test is chosen by env `TB_TARGET`: `torchbridge` (default; our host) or `burn`
//! (Burn's own remote server hosting Flex, `src/bin/reference_server.rs`). Expected values always
//! come from Flex in-process. With env `TB_OP_COUNTS_DIR` set, every torchbridge host started here
//! writes the IR leaves it executed to a file of its own in that directory when it stops.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use burn::prelude::*;
use burn::tensor::TensorData;
use burn::tensor::remote::RemoteHost;

/// A host process (ours or Burn's reference server), stopped when this value (or the test process)
/// goes away: it runs with `--exit-on-stdin-eof` and we hold its stdin.
pub struct HostProcess {
    /// None for a host this process did not start (`TB_HOST_ADDRESS`).
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    pub address: String,
    /// The host's start-up line (empty for an external host): its version, devices and threads.
    pub banner: String,
}

/// The historical name: most tests start our host.
pub type TorchbridgeHost = HostProcess;

/// What `check` runs the program under test on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Torchbridge,
    Burn,
}

/// `TB_TARGET`: `torchbridge` (default) or `burn`; anything else is a usage error.
pub fn target() -> Target {
    match std::env::var("TB_TARGET").as_deref() {
        Err(_) | Ok("") | Ok("torchbridge") => Target::Torchbridge,
        Ok("burn") => Target::Burn,
        Ok(other) => panic!("TB_TARGET must be `torchbridge` or `burn`, not `{other}`"),
    }
}

/// The torchbridge binary: `$TORCHBRIDGE_BIN` (CTest sets it), else the default build tree.
pub fn torchbridge_bin() -> String {
    std::env::var("TORCHBRIDGE_BIN").unwrap_or_else(|_| {
        let root = env!("CARGO_MANIFEST_DIR");
        format!("{root}/../../build/bridge/cli/torchbridge")
    })
}

/// The reference server bin's name: tests/interop-0.23 (`cfg(burn_023)`) names its own
/// `reference_server_023`, since both crates build into the one shared target directory.
#[cfg(not(burn_023))]
const REFERENCE_SERVER: &str = "reference_server";
#[cfg(burn_023)]
const REFERENCE_SERVER: &str = "reference_server_023";

/// Burn's reference server binary (this crate's `reference_server` bin, which cargo builds along
/// with the integration tests): `$TB_REFERENCE_SERVER_BIN`, else `$CARGO_TARGET_DIR/release/`,
/// else next to the running test binary's `deps/` folder.
pub fn reference_server_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("TB_REFERENCE_SERVER_BIN") {
        return PathBuf::from(bin);
    }
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        let bin = PathBuf::from(dir).join("release").join(REFERENCE_SERVER);
        if bin.exists() {
            return bin;
        }
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join(REFERENCE_SERVER))
        .expect("a test binary lives in <target>/<profile>/deps")
}

/// Where this host should write its op counts (`TB_OP_COUNTS_DIR`), one file per host started by
/// this test process.
fn op_counts_file() -> Option<String> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::var("TB_OP_COUNTS_DIR").ok().filter(|d| !d.is_empty())?;
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {dir}: {e}"));
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "test".into());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Some(format!("{dir}/{stem}-{}-{n}.json", std::process::id()))
}

/// `args` with the device `TB_DEVICE` names (scripts/device-check sets `cuda:0`) in place of every
/// `cpu` device, or added when `args` names none: the suites then run on that device unchanged.
fn on_test_device(args: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let device = match std::env::var("TB_DEVICE") {
        Ok(d) if !d.is_empty() && d != "cpu" => d,
        _ => return out,
    };
    let mut named = false;
    for i in 1..out.len() {
        if out[i - 1] == "--device" {
            named = true;
            if out[i] == "cpu" {
                out[i] = device.clone();
            }
        }
    }
    if !named {
        out.extend(["--device".to_string(), device]);
    }
    out
}

impl HostProcess {
    /// Starts `torchbridge serve --port 0 <args>` and waits for its start-up line.
    pub fn spawn(args: &[&str]) -> Self {
        let mut all: Vec<String> = ["serve", "--port", "0", "--exit-on-stdin-eof"]
            .iter()
            .chain(["--log-level", "warn"].iter())
            .map(|s| s.to_string())
            .collect();
        if let Some(file) = op_counts_file() {
            all.extend(["--op-counts-file".to_string(), file]);
        }
        all.extend(on_test_device(args));
        Self::start(&torchbridge_bin(), &all)
    }

    /// Starts Burn's own remote server on Flex (`reference_server --port 0`).
    pub fn spawn_reference(args: &[&str]) -> Self {
        let bin = reference_server_bin();
        let mut all = vec!["--port".to_string(), "0".into(), "--exit-on-stdin-eof".into()];
        all.extend(args.iter().map(|s| s.to_string()));
        Self::start(&bin.to_string_lossy(), &all)
    }

    /// Runs `bin args` and reads the `ws://` (or `wss://`) address from its first line of output.
    pub fn start(bin: &str, args: &[String]) -> Self {
        Self::try_start(bin, args).unwrap_or_else(|line| panic!("no address in start-up line: {line}"))
    }

    /// `start`, but a host that prints no address gives back the line it printed instead (its
    /// reason, such as a port taken between choosing it and binding it).
    pub fn try_start(bin: &str, args: &[String]) -> Result<Self, String> {
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("{bin} exited before printing its address"))
            .unwrap();
        let Some(address) = first
            .split_whitespace()
            .find(|w| w.starts_with("ws://") || w.starts_with("wss://"))
            .map(str::to_string)
        else {
            drop(stdin);
            let _ = child.kill();
            let _ = child.wait();
            return Err(first);
        };
        // Keep draining stdout so the host never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Ok(Self {
            child: Some(child),
            stdin: Some(stdin),
            address,
            banner: first,
        })
    }

    /// A host already running at `address`, started by someone else (never stopped here).
    pub fn external(address: String) -> Self {
        Self {
            child: None,
            stdin: None,
            address,
            banner: String::new(),
        }
    }

    /// One torchbridge host shared by every test of a test binary: the one at `TB_HOST_ADDRESS`
    /// where that is set (tests/interop/two_versions.sh runs both Burn versions' suites against one
    /// host), else one started here.
    pub fn shared() -> &'static HostProcess {
        static HOST: OnceLock<HostProcess> = OnceLock::new();
        HOST.get_or_init(|| match std::env::var("TB_HOST_ADDRESS") {
            Ok(address) if !address.is_empty() => HostProcess::external(address),
            _ => HostProcess::spawn(&[]),
        })
    }

    /// One host of the kind `TB_TARGET` names, shared by every test of a test binary.
    pub fn shared_target() -> &'static HostProcess {
        static REFERENCE: OnceLock<HostProcess> = OnceLock::new();
        match target() {
            Target::Torchbridge => Self::shared(),
            Target::Burn => REFERENCE.get_or_init(|| HostProcess::spawn_reference(&[])),
        }
    }

    /// A new host of the kind `TB_TARGET` names, for a test that needs one no other test shares:
    /// a device's seed is that host's state, so a test that seeds and draws twice would see other
    /// tests' draws in between on the shared host.
    pub fn own_target() -> HostProcess {
        match target() {
            Target::Torchbridge => HostProcess::spawn(&[]),
            Target::Burn => HostProcess::spawn_reference(&[]),
        }
    }

    /// Device `index` of this host, as an unmodified Burn program would open it.
    pub fn device(&self, index: usize) -> Device {
        Device::remote_options(&RemoteHost::websocket(&self.address))
            .device_index(index)
            .init()
            .unwrap_or_else(|e| panic!("cannot open device {index} on {}: {e:?}", self.address))
    }

    /// The host's process id (None for an external host).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `GET /metrics` from this host (our host serves it on the session port): the Prometheus text.
    pub fn metrics(&self) -> String {
        use std::io::{Read, Write};
        let authority = self
            .address
            .trim_start_matches("ws://")
            .trim_end_matches('/')
            .to_string();
        let mut stream = std::net::TcpStream::connect(&authority)
            .unwrap_or_else(|e| panic!("cannot connect to {authority}: {e}"));
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(stream, "GET /metrics HTTP/1.0\r\nHost: {authority}\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    }

    /// How many sessions of wire protocol `protocol` this host has open now (from `/metrics`).
    pub fn open_sessions(&self, protocol: u16) -> u64 {
        let key = format!("torchbridge_sessions_open_by_protocol{{protocol=\"{protocol}\"");
        self.metrics()
            .lines()
            .filter(|l| l.starts_with(&key))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        // Closing stdin is the clean stop (a torchbridge host then writes its op counts); a host
        // that does not go within a few seconds is killed.
        drop(self.stdin.take());
        let Some(child) = self.child.as_mut() else {
            return;
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Device 0 of the shared host `TB_TARGET` names: what `check` runs programs under test on.
pub fn device_under_test() -> Device {
    HostProcess::shared_target().device(0)
}

/// Burn's reference CPU backend, the judge of every result.
pub fn reference() -> Device {
    Device::flex()
}

/// Why two results disagree (dtype, shape, or the first value that differs beyond `tolerance`,
/// relative for floats; exact for ints and bools), or `Ok` when they agree.
pub fn compare(actual: &TensorData, expected: &TensorData, tolerance: f64) -> Result<(), String> {
    if actual.dtype() != expected.dtype() {
        return Err(format!("dtype differs: {:?} vs {:?}", actual.dtype(), expected.dtype()));
    }
    if actual.shape() != expected.shape() {
        return Err(format!("shape differs: {:?} vs {:?}", actual.shape(), expected.shape()));
    }
    if actual.dtype().is_float() {
        let a: Vec<f64> = actual.try_to_vec_as::<f64>().unwrap();
        let e: Vec<f64> = expected.try_to_vec_as::<f64>().unwrap();
        for (i, (x, y)) in a.iter().zip(e.iter()).enumerate() {
            let same = (x.is_nan() && y.is_nan())
                || x == y
                || (x - y).abs() <= tolerance * y.abs().max(1.0);
            if !same {
                return Err(format!("value {i} differs: {x} vs {y} (tolerance {tolerance})"));
            }
        }
    } else if actual.as_bytes() != expected.as_bytes() {
        return Err(format!("values differ: {actual} vs {expected}"));
    }
    Ok(())
}

/// Asserts that two results agree: same dtype and shape, values equal within `tolerance`
/// (relative for floats; exact for ints and bools).
#[track_caller]
pub fn assert_same(actual: &TensorData, expected: &TensorData, tolerance: f64) {
    if let Err(why) = compare(actual, expected, tolerance) {
        panic!("{why}");
    }
}

/// Runs `program` on the device under test (see `TB_TARGET`) and on Burn's reference backend
/// in-process; compares every output.
#[track_caller]
pub fn check<F>(program: F, tolerance: f64)
where
    F: Fn(&Device) -> Vec<TensorData>,
{
    // Burn's own server panics on an op it cannot run and its session is gone for every later
    // test, so on that target each check gets a server of its own (kept until the check ends).
    let fresh = matches!(target(), Target::Burn).then(|| HostProcess::spawn_reference(&[]));
    let remote = match &fresh {
        Some(host) => host.device(0),
        None => device_under_test(),
    };
    let ours = program(&remote);
    let theirs = program(&reference());
    compare_outputs(&ours, &theirs, tolerance);
}

#[track_caller]
fn compare_outputs(ours: &[TensorData], theirs: &[TensorData], tolerance: f64) {
    assert_eq!(ours.len(), theirs.len(), "number of outputs differs");
    for (i, (a, e)) in ours.iter().zip(theirs.iter()).enumerate() {
        if let Err(why) = compare(a, e, tolerance) {
            panic!("output {i} ({:?} target): {why}", target());
        }
    }
}

/// Burn's router client over the network, driven through the backend traits: what
/// `burn_remote::RemoteBackend` is without the `fusion` feature. Unlike the dispatch `Device` API,
/// nothing decomposes an op before it is sent, so every trait method reaches the host as the IR
/// leaf the router emits for it.
pub type Router = burn_router::BackendRouter<burn_remote::RemoteChannel>;

impl HostProcess {
    /// Device `index` of this host for the router client (`Router`).
    pub fn router_device(&self, index: usize) -> burn_remote::RemoteDevice {
        burn_remote::HostSpec::websocket(&self.address)
            .connect(index)
            .unwrap_or_else(|e| {
                panic!("cannot open router device {index} on {}: {e:?}", self.address)
            })
    }
}

/// `check` for programs written against Burn's backend traits: runs `under_test` (a case
/// instantiated for `Router`) on device 0 of the host `TB_TARGET` names, `reference` (the same case
/// instantiated for Flex) in-process, and compares every output.
#[track_caller]
pub fn check_backend(
    under_test: fn(&burn_remote::RemoteDevice) -> Vec<TensorData>,
    reference: fn(&burn_flex::FlexDevice) -> Vec<TensorData>,
    tolerance: f64,
) {
    // As in `check`: a panicking reference server must not take later cases down with it.
    let fresh = matches!(target(), Target::Burn).then(|| HostProcess::spawn_reference(&[]));
    let host = fresh.as_ref().unwrap_or_else(|| HostProcess::shared_target());
    let ours = under_test(&host.router_device(0));
    let theirs = reference(&burn_flex::FlexDevice::default());
    compare_outputs(&ours, &theirs, tolerance);
}

/// Deterministic inputs in [-1, 1) from a splitmix64 stream keyed by `seed`: the same on every
/// device (Burn's RNG streams differ between backends), shared by the conformance suites.
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x2545_F491_4F6C_DD1D);
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32) / ((1u64 << 23) as f32) - 1.0
        })
        .collect()
}
