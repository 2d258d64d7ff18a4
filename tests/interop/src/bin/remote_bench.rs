//! Remote benchmarks: the same Burn program against a torchbridge host and against Burn's own
//! remote server (the `reference_server` bin of this crate, hosting Burn's Flex CPU backend), in
//! the same run, interleaved, plus raw loopback TCP as the ceiling for transfers.
//!
//! `remote_bench [--reps N] [--quick] [--device D] [--threads N] [--out FILE]`, built with
//! `cargo build --release --features bench --bin remote_bench` (scripts/bench does it; the feature
//! keeps it out of the test build).
//!
//! Workloads: compute-bound (MLP 512-1024-512 forward at batch 64, a small CNN forward, an MLP
//! training step with autodiff and SGD), op-bound (a chain of 1000 ops on [16, 16] tensors),
//! transfers (upload then download of 1, 64 and 256 MiB) and the round trip of reading a small
//! tensor. Every workload's result on our host is compared with the Burn host's before timing: a
//! mismatch aborts the run. Writes a JSON object (medians, ratios, samples) to --out or stdout.
//!
//! `--device` is passed to `torchbridge serve` (e.g. `cuda`); the Burn host stays on its CPU
//! backend, so a GPU run compares our GPU host with Burn's CPU host.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Instant;

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::optim::{GradientsParams, SgdConfig};
use burn::prelude::*;
use burn::tensor::TensorData;
use burn::tensor::activation::relu;
use burn::tensor::remote::RemoteHost;
use serde_json::{Value, json};
use torchbridge_interop::harness::{TorchbridgeHost, assert_same};

const MIB: usize = 1 << 20;

// ---- Hosts -------------------------------------------------------------------------------------

/// Burn's own remote server, stopped when dropped (it exits when its stdin closes).
struct ReferenceHost {
    child: Child,
    _stdin: ChildStdin,
    address: String,
}

impl ReferenceHost {
    fn spawn() -> Self {
        let bin = std::env::current_exe()
            .expect("current_exe")
            .with_file_name("reference_server");
        let mut child = Command::new(&bin)
            .args(["--port", "0", "--exit-on-stdin-eof"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("reference_server exited").unwrap();
        let address = first
            .split_whitespace()
            .find(|w| w.starts_with("ws://"))
            .unwrap_or_else(|| panic!("no address in: {first}"))
            .to_string();
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            _stdin: stdin,
            address,
        }
    }
}

impl Drop for ReferenceHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn open(address: &str) -> Device {
    Device::remote_options(&RemoteHost::websocket(address))
        .init()
        .unwrap_or_else(|e| panic!("cannot open a device on {address}: {e:?}"))
}

// ---- Models ------------------------------------------------------------------------------------

#[derive(Module, Debug)]
struct Mlp {
    hidden: Linear,
    out: Linear,
}

impl Mlp {
    fn new(device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(512, 1024).init(device),
            out: LinearConfig::new(1024, 512).init(device),
        }
    }
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.out.forward(relu(self.hidden.forward(x)))
    }
}

#[derive(Module, Debug)]
struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    head: Linear,
}

impl Cnn {
    fn new(device: &Device) -> Self {
        let conv = |i, o| {
            Conv2dConfig::new([i, o], [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device)
        };
        Self {
            conv1: conv(3, 16),
            conv2: conv(16, 32),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
            head: LinearConfig::new(32 * 8 * 8, 10).init(device),
        }
    }
    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let h = self.pool.forward(relu(self.conv1.forward(x)));
        let h = self.pool.forward(relu(self.conv2.forward(h)));
        self.head.forward(h.flatten(1, 3))
    }
}

// ---- Workloads ---------------------------------------------------------------------------------

/// One workload bound to one device: `run` does one timed unit and returns (seconds, result).
trait Workload {
    fn run(&mut self) -> (f64, Option<TensorData>);
}

fn time<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let start = Instant::now();
    let r = f();
    (start.elapsed().as_secs_f64(), r)
}

fn input(shape: &[usize], seed: u64) -> TensorData {
    // Deterministic values in [-1, 1): the same bits on both hosts.
    let n: usize = shape.iter().product();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let values: Vec<f32> = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect();
    TensorData::new(values, shape.to_vec())
}

struct MlpForward {
    model: Mlp,
    x: Tensor<2>,
}
impl MlpForward {
    fn new(device: &Device, model: &Mlp) -> Self {
        Self {
            model: model.clone().to_device(device),
            x: Tensor::from_data(input(&[64, 512], 1), device),
        }
    }
}
impl Workload for MlpForward {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, y) = time(|| self.model.forward(self.x.clone()).into_data());
        (s, Some(y))
    }
}

struct CnnForward {
    model: Cnn,
    x: Tensor<4>,
}
impl CnnForward {
    fn new(device: &Device, model: &Cnn) -> Self {
        Self {
            model: model.clone().to_device(device),
            x: Tensor::from_data(input(&[16, 3, 32, 32], 2), device),
        }
    }
}
impl Workload for CnnForward {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, y) = time(|| self.model.forward(self.x.clone()).into_data());
        (s, Some(y))
    }
}

/// One SGD step of the MLP on an MSE loss; the result compared is the first step's loss.
struct TrainStep {
    model: Option<Mlp>,
    x: Tensor<2>,
    y: Tensor<2>,
}
impl TrainStep {
    /// The model is made afresh for each host on Burn's autodiff CPU backend from one seed and its
    /// parameters initialised there (they are lazy: left alone they would be drawn by each host's
    /// own RNG). Copies of one autodiff model would share its tape, and the first backward would
    /// consume what the other host's copy still needs.
    fn new(device: &Device, seed: u64) -> Self {
        let cpu = Device::flex().autodiff();
        cpu.seed(seed);
        let model = Mlp::new(&cpu);
        for p in [&model.hidden.weight, &model.out.weight] {
            let _ = p.val();
        }
        for p in [&model.hidden.bias, &model.out.bias].into_iter().flatten() {
            let _ = p.val();
        }
        let device = device.clone().autodiff();
        Self {
            // `fork`, not `to_device`: the parameters become leaves of the remote device's own
            // graph. Moved with `to_device` they stay nodes of the CPU graph, whose tape the first
            // backward consumes; SGD then finds no gradient for them, leaves them as they are,
            // and the second step's backward fails on the consumed tape.
            model: Some(model.fork(&device)),
            x: Tensor::from_data(input(&[64, 512], 3), &device),
            y: Tensor::from_data(input(&[64, 512], 4), &device),
        }
    }
}
impl Workload for TrainStep {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let model = self.model.take().unwrap();
        let (s, (model, loss)) = time(|| {
            let loss = (model.forward(self.x.clone()) - self.y.clone())
                .powf_scalar(2.0)
                .mean();
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            let mut optim = SgdConfig::new().init();
            let model = optim.step(0.01, model, grads);
            (model, loss.into_data())
        });
        self.model = Some(model);
        (s, Some(loss))
    }
}

/// 1000 element-wise ops on [16, 16] tensors, then one read: per-op dispatch cost.
const CHAIN_OPS: usize = 1000;
struct OpChain {
    x: Tensor<2>,
    c1: Tensor<2>,
    c2: Tensor<2>,
}
impl OpChain {
    fn new(device: &Device) -> Self {
        let c2 = input(&[16, 16], 7)
            .iter::<f32>()
            .map(|v| 1.0 + 0.5 * v)
            .collect::<Vec<_>>();
        Self {
            x: Tensor::from_data(input(&[16, 16], 5), device),
            c1: Tensor::from_data(input(&[16, 16], 6), device),
            c2: Tensor::from_data(TensorData::new(c2, [16, 16]), device),
        }
    }
}
impl Workload for OpChain {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, y) = time(|| {
            let mut x = self.x.clone();
            for i in 0..CHAIN_OPS {
                x = match i % 5 {
                    0 => x + self.c1.clone(),
                    1 => x * self.c2.clone(),
                    2 => x - self.c1.clone(),
                    3 => x / self.c2.clone(),
                    _ => relu(x),
                };
            }
            x.into_data()
        });
        (s, Some(y))
    }
}

/// Upload then download of `bytes` of f32.
struct Transfer {
    device: Device,
    data: TensorData,
}
impl Transfer {
    fn new(device: &Device, bytes: usize) -> Self {
        let n = bytes / 4;
        let values: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();
        Self {
            device: device.clone(),
            data: TensorData::new(values, [n]),
        }
    }
}
impl Workload for Transfer {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let data = self.data.clone();
        let (s, back) = time(|| Tensor::<1>::from_data(data, &self.device).into_data());
        assert_eq!(
            back.as_bytes(),
            self.data.as_bytes(),
            "a transfer came back changed"
        );
        (s, None)
    }
}

/// Reads of a small tensor already on the device: the median is the request/response latency.
struct ReadRoundTrip {
    t: Tensor<1>,
    reads: usize,
}
impl ReadRoundTrip {
    fn new(device: &Device, reads: usize) -> Self {
        let t = Tensor::<1>::from_data(TensorData::from([1.0f32, 2.0, 3.0, 4.0]), device);
        let _ = t.clone().into_data(); // resident before timing
        Self { t, reads }
    }
    /// Each read's seconds.
    fn samples(&mut self) -> Vec<f64> {
        (0..self.reads)
            .map(|_| time(|| self.t.clone().into_data()).0)
            .collect()
    }
}

// ---- Raw loopback TCP ----------------------------------------------------------------------------

/// Seconds to send `bytes` to a loopback peer and receive them back (the peer reads everything,
/// then answers): the same two copies over the same socket path as an upload plus a download.
fn raw_tcp_round_trip(bytes: usize) -> f64 {
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = vec![0u8; bytes];
        s.read_exact(&mut buf).unwrap();
        s.write_all(&buf).unwrap();
    });
    let payload = vec![0x5au8; bytes];
    let mut back = vec![0u8; bytes];
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    let (secs, ()) = time(|| {
        s.write_all(&payload).unwrap();
        s.read_exact(&mut back).unwrap();
    });
    peer.join().unwrap();
    assert!(back == payload, "raw TCP changed the bytes");
    secs
}

// ---- Statistics --------------------------------------------------------------------------------

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

// ---- Main --------------------------------------------------------------------------------------

struct Args {
    reps: usize,
    quick: bool,
    device: String,
    threads: Option<String>,
    out: Option<String>,
    /// `--only opbound` (for profiling one host under one workload): time only that workload.
    only: Option<String>,
}

fn parse_args() -> Args {
    let mut a = Args {
        reps: 5,
        quick: false,
        device: "cpu".into(),
        threads: None,
        out: None,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--reps" => a.reps = it.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            "--quick" => a.quick = true,
            "--device" => a.device = it.next().expect("--device D"),
            "--threads" => a.threads = Some(it.next().expect("--threads N")),
            "--out" => a.out = Some(it.next().expect("--out FILE")),
            "--only" => a.only = Some(it.next().expect("--only opbound")),
            "-h" | "--help" => {
                println!(
                    "remote_bench [--reps N] [--quick] [--device D] [--threads N] [--out FILE] [--only opbound]"
                );
                std::process::exit(0);
            }
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

const HOSTS: [&str; 2] = ["torchbridge", "burn"];

/// The workloads of one host, in a fixed order.
struct Suite {
    compute: Vec<(&'static str, Box<dyn Workload>)>,
    opbound: OpChain,
    transfers: Vec<(usize, Transfer)>,
    reads: ReadRoundTrip,
}

fn suite(
    device: &Device,
    mlp: &Mlp,
    cnn: &Cnn,
    sizes: &[usize],
    reads: usize,
) -> Suite {
    Suite {
        compute: vec![
            (
                "mlp_forward",
                Box::new(MlpForward::new(device, mlp)) as Box<dyn Workload>,
            ),
            ("cnn_forward", Box::new(CnnForward::new(device, cnn))),
            ("train_step", Box::new(TrainStep::new(device, 43))),
        ],
        opbound: OpChain::new(device),
        transfers: sizes
            .iter()
            .map(|&b| (b, Transfer::new(device, b)))
            .collect(),
        reads: ReadRoundTrip::new(device, reads),
    }
}

fn main() {
    let args = parse_args();
    let sizes: Vec<usize> = if args.quick {
        vec![MIB, 16 * MIB]
    } else {
        vec![MIB, 64 * MIB, 256 * MIB]
    };
    let reads = if args.quick { 50 } else { 200 };

    let mut serve_args = vec!["--device", args.device.as_str()];
    if let Some(t) = &args.threads {
        serve_args.extend(["--threads", t.as_str()]);
    }
    let ours_host = TorchbridgeHost::spawn(&serve_args);
    let burn_host = ReferenceHost::spawn();
    eprintln!(
        "remote_bench: torchbridge on {}, Burn's server on {}",
        ours_host.address, burn_host.address
    );

    // The same initial weights on both hosts: initialised once on Burn's CPU backend.
    let cpu = Device::flex();
    cpu.seed(42);
    let mlp = Mlp::new(&cpu);
    let cnn = Cnn::new(&cpu);
    let devices = [open(&ours_host.address), open(&burn_host.address)];
    let mut suites: Vec<Suite> = devices
        .iter()
        .map(|d| suite(d, &mlp, &cnn, &sizes, reads))
        .collect();

    // Same answers first (one warm-up run each), then timing.
    {
        let (a, b) = suites.split_at_mut(1);
        let (ours, theirs) = (&mut a[0], &mut b[0]);
        for ((name, w_ours), (_, w_theirs)) in ours.compute.iter_mut().zip(theirs.compute.iter_mut())
        {
            let r1 = w_ours.run().1.unwrap();
            let r2 = w_theirs.run().1.unwrap();
            eprintln!("remote_bench: checking {name}");
            assert_same(&r1, &r2, 1e-3);
            if *name == "train_step" {
                // A second step must see the first one's update: the parameters do train.
                let loss = |d: &TensorData| d.iter::<f32>().next().unwrap();
                let again = [w_ours.run().1.unwrap(), w_theirs.run().1.unwrap()];
                for (before, after) in [(&r1, &again[0]), (&r2, &again[1])] {
                    assert!(
                        loss(after) < loss(before),
                        "the training step does not train: loss {} then {}",
                        loss(before),
                        loss(after)
                    );
                }
            }
        }
        let (_, r1) = ours.opbound.run();
        let (_, r2) = theirs.opbound.run();
        assert_same(&r1.unwrap(), &r2.unwrap(), 1e-4);
        for ((_, t1), (_, t2)) in ours.transfers.iter_mut().zip(theirs.transfers.iter_mut()) {
            t1.run();
            t2.run();
        }
    }

    // samples[host][workload] = seconds per run.
    let mut compute: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); 3]; 2];
    let mut opbound: Vec<Vec<f64>> = vec![Vec::new(); 2];
    let mut transfer: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); sizes.len()]; 2];
    let mut read: Vec<Vec<f64>> = vec![Vec::new(); 2];
    let mut raw: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];

    if let Some(only) = &args.only {
        assert_eq!(only, "opbound", "--only supports opbound");
        for rep in 0..args.reps {
            for s in suites.iter_mut() {
                s.opbound.run();
            }
            if rep % 100 == 99 {
                eprintln!("remote_bench: {} opbound repetitions done", rep + 1);
            }
        }
        return;
    }

    for rep in 0..args.reps {
        // Alternate which host goes first, so slow drifts in machine load hit both alike.
        let order: [usize; 2] = if rep % 2 == 0 { [0, 1] } else { [1, 0] };
        for &h in &order {
            let s = &mut suites[h];
            for (i, (_, w)) in s.compute.iter_mut().enumerate() {
                compute[h][i].push(w.run().0);
            }
            opbound[h].push(s.opbound.run().0 / CHAIN_OPS as f64);
            for (i, (_, t)) in s.transfers.iter_mut().enumerate() {
                transfer[h][i].push(t.run().0);
            }
            read[h].extend(s.reads.samples());
        }
        for (i, &b) in sizes.iter().enumerate() {
            raw[i].push(raw_tcp_round_trip(b));
        }
        eprintln!("remote_bench: repetition {}/{} done", rep + 1, args.reps);
    }

    // Medians and ratios (ours / Burn's for times; ours / raw for throughput).
    let names = ["mlp_forward", "cnn_forward", "train_step"];
    let mut details = serde_json::Map::new();
    let mut compute_ratios = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let ours = median(&compute[0][i]);
        let theirs = median(&compute[1][i]);
        compute_ratios.push(ours / theirs);
        details.insert(
            format!("{name}_ms"),
            json!({"torchbridge": ours * 1e3, "burn": theirs * 1e3, "ratio": ours / theirs}),
        );
    }
    let op_ours = median(&opbound[0]);
    let op_theirs = median(&opbound[1]);
    details.insert(
        "opbound_us_per_op".into(),
        json!({"torchbridge": op_ours * 1e6, "burn": op_theirs * 1e6, "ratio": op_ours / op_theirs}),
    );
    let mut transfer_ratios = Vec::new();
    for (i, &b) in sizes.iter().enumerate() {
        let gbps = |secs: f64| 2.0 * b as f64 / secs / 1e9;
        let ours = gbps(median(&transfer[0][i]));
        let theirs = gbps(median(&transfer[1][i]));
        let ceiling = gbps(median(&raw[i]));
        transfer_ratios.push(ours / ceiling);
        details.insert(
            format!("transfer_{}MiB_GBps", b / MIB),
            json!({"torchbridge": ours, "burn": theirs, "raw_tcp": ceiling,
                   "torchbridge_vs_raw": ours / ceiling, "burn_vs_raw": theirs / ceiling}),
        );
    }
    let read_ours = median(&read[0]) * 1e6;
    let read_theirs = median(&read[1]) * 1e6;
    details.insert(
        "read_roundtrip_us".into(),
        json!({"torchbridge": read_ours, "burn": read_theirs}),
    );

    let result = json!({
        "remote_compute_vs_burn": geomean(&compute_ratios),
        "remote_opbound_vs_burn": op_ours / op_theirs,
        "transfer_vs_raw_tcp": geomean(&transfer_ratios),
        "read_roundtrip_us": read_ours,
        "details": Value::Object(details),
        "config": {"reps": args.reps, "device": args.device, "hosts": HOSTS,
                   "chain_ops": CHAIN_OPS, "reads_per_rep": reads,
                   "transfer_sizes_MiB": sizes.iter().map(|b| b / MIB).collect::<Vec<_>>()},
    });
    let text = serde_json::to_string_pretty(&result).unwrap();
    match &args.out {
        Some(path) => std::fs::write(path, text + "\n").expect("cannot write --out"),
        None => println!("{text}"),
    }
}
