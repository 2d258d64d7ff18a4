//! Starting hosts and comparing results.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

use burn::prelude::*;
use burn::tensor::TensorData;
use burn::tensor::remote::RemoteHost;

/// A torchbridge host process, stopped when this value (or the test process) goes away: the host
/// runs with `--exit-on-stdin-eof` and we hold its stdin.
pub struct TorchbridgeHost {
    child: Child,
    _stdin: ChildStdin,
    pub address: String,
}

/// The torchbridge binary: `$TORCHBRIDGE_BIN` (CTest sets it), else the default build tree.
pub fn torchbridge_bin() -> String {
    std::env::var("TORCHBRIDGE_BIN").unwrap_or_else(|_| {
        let root = env!("CARGO_MANIFEST_DIR");
        format!("{root}/../../build/bridge/cli/torchbridge")
    })
}

impl TorchbridgeHost {
    /// Starts `torchbridge serve --port 0 <args>` and waits for its start-up line.
    pub fn spawn(args: &[&str]) -> Self {
        let bin = torchbridge_bin();
        let mut child = Command::new(&bin)
            .args(["serve", "--port", "0", "--exit-on-stdin-eof", "--log-level", "warn"])
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
            .expect("torchbridge exited before printing its address")
            .unwrap();
        let address = first
            .split_whitespace()
            .find(|w| w.starts_with("ws://"))
            .unwrap_or_else(|| panic!("no address in start-up line: {first}"))
            .to_string();
        // Keep draining stdout so the host never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            _stdin: stdin,
            address,
        }
    }

    /// One host shared by every test of a test binary.
    pub fn shared() -> &'static TorchbridgeHost {
        static HOST: OnceLock<TorchbridgeHost> = OnceLock::new();
        HOST.get_or_init(|| TorchbridgeHost::spawn(&[]))
    }

    /// Device `index` of this host, as an unmodified Burn program would open it.
    pub fn device(&self, index: usize) -> Device {
        Device::remote_options(&RemoteHost::websocket(&self.address))
            .device_index(index)
            .init()
            .unwrap_or_else(|e| panic!("cannot open device {index} on {}: {e:?}", self.address))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for TorchbridgeHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Burn's reference CPU backend, the judge of every result.
pub fn reference() -> Device {
    Device::flex()
}

/// Asserts that two results agree: same dtype and shape, values equal within `tolerance`
/// (relative for floats; exact for ints and bools).
#[track_caller]
pub fn assert_same(actual: &TensorData, expected: &TensorData, tolerance: f64) {
    assert_eq!(actual.dtype(), expected.dtype(), "dtype differs");
    assert_eq!(actual.shape(), expected.shape(), "shape differs");
    if actual.dtype().is_float() {
        let a: Vec<f64> = actual.try_to_vec_as::<f64>().unwrap();
        let e: Vec<f64> = expected.try_to_vec_as::<f64>().unwrap();
        for (i, (x, y)) in a.iter().zip(e.iter()).enumerate() {
            let same = (x.is_nan() && y.is_nan())
                || x == y
                || (x - y).abs() <= tolerance * y.abs().max(1.0);
            assert!(same, "value {i} differs: {x} vs {y} (tolerance {tolerance})");
        }
    } else {
        assert_eq!(actual.as_bytes(), expected.as_bytes(), "values differ");
    }
}

/// Runs `program` on the torchbridge host and on Burn's reference backend; compares every output.
#[track_caller]
pub fn check<F>(program: F, tolerance: f64)
where
    F: Fn(&Device) -> Vec<TensorData>,
{
    let remote = TorchbridgeHost::shared().device(0);
    let ours = program(&remote);
    let theirs = program(&reference());
    assert_eq!(ours.len(), theirs.len());
    for (a, e) in ours.iter().zip(theirs.iter()) {
        assert_same(a, e, tolerance);
    }
}
