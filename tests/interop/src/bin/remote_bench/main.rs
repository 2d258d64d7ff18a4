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
//! tensor, and the op-heavy cases of Burn's backend test suite (`burn::linalg::lu` of 500×500 and
//! 300×500, `det` of 300×300, `qr` of 96×160, CTC loss with its gradient at the scale of Burn's
//! scaled CTC test), and two where kernels set the time (a ResNet basic block at batch 32, a
//! transformer encoder layer at sequence length 256: `remote_kernels_vs_burn`, kernels.rs). Every
//! workload's result on our host is compared with the Burn hosts' before timing: a mismatch aborts
//! the run. Writes a JSON object (medians, ratios, samples) to --out or stdout.
//!
//! `--device` is passed to `torchbridge serve` (e.g. `cuda`); the Burn host stays on its CPU
//! backend, so a GPU run compares our GPU host with Burn's CPU host.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::transformer::TransformerEncoder;
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::optim::{GradientsParams, SgdConfig};
use burn::prelude::*;
use burn::tensor::TensorData;
use burn::tensor::activation::relu;
use burn::tensor::remote::RemoteHost;
use serde_json::{Value, json};
use torchbridge_interop::harness::{HostProcess, assert_same, torchbridge_bin};

mod kernels;
mod workloads;
use kernels::*;
use workloads::*;

const MIB: usize = 1 << 20;

// ---- Hosts -------------------------------------------------------------------------------------

/// The hosts compared, in the order of every per-host array below: ours, Burn's server on Flex with
/// its default features (`simd`, `rayon`: what a Burn user gets; the `*_vs_burn` anchor), and Burn's
/// server on Flex with `std` only (how the interop crate builds it; the `*_vs_burn_std` column).
const HOSTS: [&str; 3] = ["torchbridge", "burn", "burn_std"];

/// Burn's client every remote device goes through: the fusion client (graphs registered and
/// replayed) with this crate's default `fusion` feature, the plain router client without it.
const CLIENT: &str = if cfg!(feature = "fusion") {
    "fusion"
} else {
    "plain"
};

/// `bin args`, under `taskset -c cpus` when the hosts have CPUs of their own.
fn spawn_host(bin: &str, args: &[&str], cpus: Option<&str>) -> HostProcess {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match cpus {
        Some(cpus) => {
            let mut all = vec!["-c".to_string(), cpus.to_string(), bin.to_string()];
            all.extend(args);
            HostProcess::start("taskset", &all)
        }
        None => HostProcess::start(bin, &args),
    }
}

/// A reference server bin built next to this one (scripts/bench builds both).
fn sibling(name: &str) -> String {
    let bin = std::env::current_exe()
        .expect("current_exe")
        .with_file_name(name);
    assert!(
        bin.exists(),
        "{} is missing: scripts/bench builds it (bench/reference-flex for reference_server_flex)",
        bin.display()
    );
    bin.to_string_lossy().into_owned()
}

/// CPU time (all threads, nanoseconds) the process `pid` has used so far, from the scheduler's
/// per-thread accounting: nanosecond resolution, unlike the tick-based times of /proc/PID/stat.
fn process_cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum()
}

fn open(address: &str) -> Device {
    Device::remote_options(&RemoteHost::websocket(address))
        .init()
        .unwrap_or_else(|e| panic!("cannot open a device on {address}: {e:?}"))
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

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if s.is_empty() {
        return f64::NAN;
    }
    let at = q * (s.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (at - lo as f64)
}

fn median(v: &[f64]) -> f64 {
    quantile(v, 0.5)
}

/// The median of `v` scaled by `unit`, with its spread: quartiles, extremes and the count.
fn summary(v: &[f64], unit: f64) -> Value {
    json!({"median": median(v) * unit, "p25": quantile(v, 0.25) * unit,
           "p75": quantile(v, 0.75) * unit, "min": quantile(v, 0.0) * unit,
           "max": quantile(v, 1.0) * unit, "n": v.len()})
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// One figure per host (medians in `unit`), the ratios ours / Burn's, and each host's spread.
fn per_host(samples: &[Vec<f64>], unit: f64) -> (Value, [f64; 3]) {
    let m = [0, 1, 2].map(|h| median(&samples[h]) * unit);
    let mut o = serde_json::Map::new();
    for (h, name) in HOSTS.iter().enumerate() {
        o.insert(name.to_string(), json!(m[h]));
    }
    o.insert("ratio".into(), json!(m[0] / m[1]));
    o.insert("ratio_std".into(), json!(m[0] / m[2]));
    let spread: serde_json::Map<String, Value> = HOSTS
        .iter()
        .enumerate()
        .map(|(h, name)| (name.to_string(), summary(&samples[h], unit)))
        .collect();
    o.insert("spread".into(), Value::Object(spread));
    (Value::Object(o), m)
}

// ---- Main --------------------------------------------------------------------------------------

struct Args {
    reps: usize,
    quick: bool,
    device: String,
    threads: Option<String>,
    out: Option<String>,
    /// `--only opbound` (for profiling one host under one workload): time only that workload.
    /// `--only heavy` (or `kernels`): time only the op-heavy (kernel-bound) workloads and write
    /// their figures; `--only lu_500` (or another of `HEAVY` or `KERNELS`): that one alone.
    only: Option<String>,
    /// `--host-cpus LIST`: run every host under `taskset -c LIST` (scripts/bench gives the hosts
    /// and this client disjoint CPUs where the machine has four or more).
    host_cpus: Option<String>,
}

fn parse_args() -> Args {
    let mut a = Args {
        reps: 7,
        quick: false,
        device: "cpu".into(),
        threads: None,
        out: None,
        only: None,
        host_cpus: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--reps" => a.reps = it.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            "--quick" => a.quick = true,
            "--device" => a.device = it.next().expect("--device D"),
            "--threads" => a.threads = Some(it.next().expect("--threads N")),
            "--out" => a.out = Some(it.next().expect("--out FILE")),
            "--only" => a.only = Some(it.next().expect("--only opbound|heavy|kernels|lu_500|lu_300x500|det_300|qr_96x160|ctc_grad|resnet_block|encoder_layer")),
            "--host-cpus" => a.host_cpus = Some(it.next().expect("--host-cpus LIST")),
            "-h" | "--help" => {
                println!(
                    "remote_bench [--reps N] [--quick] [--device D] [--threads N] [--out FILE] \
                     [--only opbound|heavy|kernels|lu_500|lu_300x500|det_300|qr_96x160|ctc_grad|resnet_block|encoder_layer] [--host-cpus LIST]"
                );
                std::process::exit(0);
            }
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// The workloads of one host, in a fixed order.
struct Suite {
    compute: Vec<(&'static str, Box<dyn Workload>)>,
    opbound: OpChain,
    transfers: Vec<(usize, Transfer)>,
    reads: ReadRoundTrip,
    heavy: Vec<(&'static str, Box<dyn Workload>)>,
    kernels: Vec<(&'static str, Box<dyn Workload>)>,
}

/// The models every host runs, initialised once on Burn's CPU backend.
struct Models {
    mlp: Mlp,
    cnn: Cnn,
    block: BasicBlock,
    encoder: TransformerEncoder,
}

fn suite(device: &Device, m: &Models, sizes: &[usize], reads: usize) -> Suite {
    let (mlp, cnn) = (&m.mlp, &m.cnn);
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
        heavy: vec![
            (
                "lu_500",
                Box::new(Lu::new(device, 500, 500)) as Box<dyn Workload>,
            ),
            ("lu_300x500", Box::new(Lu::new(device, 300, 500))),
            ("det_300", Box::new(Det::new(device))),
            ("qr_96x160", Box::new(Qr::new(device))),
            ("ctc_grad", Box::new(CtcGrad::new(device))),
        ],
        kernels: vec![
            (
                "resnet_block",
                Box::new(ResNetBlock::new(device, &m.block)) as Box<dyn Workload>,
            ),
            (
                "encoder_layer",
                Box::new(EncoderLayer::new(device, &m.encoder)),
            ),
        ],
    }
}

/// The kernel-bound workloads, in the order of `Suite::kernels`.
const KERNELS: [&str; 2] = ["resnet_block", "encoder_layer"];

/// A group of named workloads of a suite (the op-heavy or the kernel-bound ones).
type Group = Vec<(&'static str, Box<dyn Workload>)>;
fn heavy_group(s: &mut Suite) -> &mut Group {
    &mut s.heavy
}
fn kernels_group(s: &mut Suite) -> &mut Group {
    &mut s.kernels
}

/// The first runs of a group's workloads: ours must give the answers of both of Burn's hosts, to
/// `tolerance` (1e-2 for the op-heavy ones: LU's 500 elimination steps on random values drift by
/// ~1e-3 between summation orders).
fn check_same_group_answers(
    suites: &mut [Suite],
    group: fn(&mut Suite) -> &mut Group,
    tolerance: f64,
) {
    let (ours, references) = suites.split_first_mut().unwrap();
    for (i, (name, w_ours)) in group(ours).iter_mut().enumerate() {
        eprintln!("remote_bench: checking {name}");
        let r_ours = w_ours.run().1.unwrap();
        for r in references.iter_mut() {
            assert_same(&r_ours, &group(r)[i].1.run().1.unwrap(), tolerance);
        }
    }
}

/// The op-heavy workloads, in the order of `Suite::heavy`.
const HEAVY: [&str; 5] = ["lu_500", "lu_300x500", "det_300", "qr_96x160", "ctc_grad"];

/// Seconds per run of each workload of a group on each host: wall clock, the host's CPU time,
/// and the client's (this process: Burn's client computes nothing, so its CPU time is what it
/// spends recording, optimising and sending the program; no host can make a run shorter).
#[derive(Clone)]
struct GroupSamples {
    wall: Vec<Vec<f64>>,
    host_cpu: Vec<Vec<f64>>,
    client_cpu: Vec<Vec<f64>>,
}

/// One repetition of a group's workloads on every host, the first host rotating.
fn time_group(
    suites: &mut [Suite],
    group: fn(&mut Suite) -> &mut Group,
    pids: &[u32],
    rep: usize,
    samples: &mut [GroupSamples],
) {
    let n = suites.len();
    for k in 0..n {
        let h = (rep + k) % n;
        for (i, (_, w)) in group(&mut suites[h]).iter_mut().enumerate() {
            let cpu_before = process_cpu_ns(pids[h]);
            let client_before = process_cpu_ns(std::process::id());
            samples[i].wall[h].push(w.run().0);
            let client = process_cpu_ns(std::process::id()).saturating_sub(client_before);
            let cpu = process_cpu_ns(pids[h]).saturating_sub(cpu_before);
            samples[i].host_cpu[h].push(cpu as f64 * 1e-9);
            samples[i].client_cpu[h].push(client as f64 * 1e-9);
        }
    }
}

fn group_samples(hosts: usize, workloads: usize) -> Vec<GroupSamples> {
    let empty = vec![Vec::new(); hosts];
    vec![
        GroupSamples {
            wall: empty.clone(),
            host_cpu: empty.clone(),
            client_cpu: empty
        };
        workloads
    ]
}

/// The geomean of ours / Burn's (Flex default) over a group's workloads, and their medians.
fn group_figures(
    names: &[&str],
    samples: &[GroupSamples],
) -> (f64, serde_json::Map<String, Value>) {
    let mut details = serde_json::Map::new();
    let mut ratios = Vec::new();
    for (name, s) in names.iter().zip(samples) {
        let (v, m) = per_host(&s.wall, 1e3);
        ratios.push(m[0] / m[1]);
        details.insert(format!("{name}_ms"), v);
        details.insert(format!("{name}_host_cpu_ms"), per_host(&s.host_cpu, 1e3).0);
        details.insert(format!("{name}_client_cpu_ms"), per_host(&s.client_cpu, 1e3).0);
    }
    (geomean(&ratios), details)
}

/// One warm-up run of every workload on every host; ours must give the answers of both of Burn's.
fn check_same_answers(suites: &mut [Suite]) {
    let (ours, references) = suites.split_first_mut().unwrap();
    for (i, (name, w_ours)) in ours.compute.iter_mut().enumerate() {
        eprintln!("remote_bench: checking {name}");
        let r_ours = w_ours.run().1.unwrap();
        let mut firsts = vec![r_ours.clone()];
        for r in references.iter_mut() {
            let r_theirs = r.compute[i].1.run().1.unwrap();
            assert_same(&r_ours, &r_theirs, 1e-3);
            firsts.push(r_theirs);
        }
        if *name == "train_step" {
            // A second step must see the first one's update: the parameters do train.
            let loss = |d: &TensorData| d.iter::<f32>().next().unwrap();
            let mut again = vec![w_ours.run().1.unwrap()];
            again.extend(
                references
                    .iter_mut()
                    .map(|r| r.compute[i].1.run().1.unwrap()),
            );
            for (before, after) in firsts.iter().zip(&again) {
                assert!(
                    loss(after) < loss(before),
                    "the training step does not train: loss {} then {}",
                    loss(before),
                    loss(after)
                );
            }
        }
    }
    let r_ours = ours.opbound.run().1.unwrap();
    for r in references.iter_mut() {
        assert_same(&r_ours, &r.opbound.run().1.unwrap(), 1e-4);
    }
    for s in std::iter::once(ours).chain(references.iter_mut()) {
        for (_, t) in s.transfers.iter_mut() {
            t.run();
        }
    }
}

/// `--only heavy|kernels|<one of them>`: that group (or workload) alone, checked then timed.
fn time_only_group(
    args: &Args,
    suites: &mut [Suite],
    pids: &[u32],
    group: fn(&mut Suite) -> &mut Group,
    key: &str,
    only: &str,
) {
    if only != "heavy" && only != "kernels" {
        for s in suites.iter_mut() {
            group(s).retain(|(name, _)| *name == only);
        }
    }
    let tolerance = if key == "remote_heavy_vs_burn" {
        1e-2
    } else {
        1e-3
    };
    check_same_group_answers(suites, group, tolerance);
    let names: Vec<&str> = group(&mut suites[0]).iter().map(|(n, _)| *n).collect();
    let mut samples = group_samples(HOSTS.len(), names.len());
    for rep in 0..args.reps {
        time_group(suites, group, pids, rep, &mut samples);
    }
    let (ratio, details) = group_figures(&names, &samples);
    let text = serde_json::to_string_pretty(&json!({
        key: ratio, "details": details,
        "config": {"reps": args.reps, "threads": args.threads, "client": CLIENT,
                   "device": args.device}}))
    .unwrap();
    match &args.out {
        Some(path) => std::fs::write(path, text + "\n").expect("cannot write --out"),
        None => println!("{text}"),
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

    let ours_bin = torchbridge_bin();
    let mut serve_args = vec![
        "serve",
        "--port",
        "0",
        "--exit-on-stdin-eof",
        "--log-level",
        "warn",
        "--device",
        args.device.as_str(),
    ];
    if let Some(t) = &args.threads {
        serve_args.extend(["--threads", t.as_str()]);
    }
    let reference_args = ["--port", "0", "--exit-on-stdin-eof"];
    let cpus = args.host_cpus.as_deref();
    let hosts = [
        spawn_host(&ours_bin, &serve_args, cpus),
        spawn_host(&sibling("reference_server_flex"), &reference_args, cpus),
        spawn_host(&sibling("reference_server"), &reference_args, cpus),
    ];
    for (name, h) in HOSTS.iter().zip(&hosts) {
        eprintln!("remote_bench: {name}: {}", h.banner);
    }
    let pids = hosts
        .each_ref()
        .map(|h| h.pid().expect("a host started here"));

    // The same initial weights on every host: initialised once on Burn's CPU backend.
    let cpu = Device::flex();
    cpu.seed(42);
    let models = Models {
        mlp: Mlp::new(&cpu),
        cnn: Cnn::new(&cpu),
        block: BasicBlock::new(&cpu),
        encoder: encoder(&cpu),
    };
    let devices: Vec<Device> = hosts.iter().map(|h| open(&h.address)).collect();
    let mut suites: Vec<Suite> = devices
        .iter()
        .map(|d| suite(d, &models, &sizes, reads))
        .collect();

    // Same answers first (one warm-up run each), then timing.
    if let Some(only) = args.only.as_deref() {
        // `--only heavy|kernels`, or one workload of either group alone (for profiling).
        let (group, key): (fn(&mut Suite) -> &mut Group, _) =
            if only == "kernels" || KERNELS.contains(&only) {
                (kernels_group, "remote_kernels_vs_burn")
            } else {
                (heavy_group, "remote_heavy_vs_burn")
            };
        if only == "heavy" || only == "kernels" || HEAVY.contains(&only) || KERNELS.contains(&only)
        {
            return time_only_group(&args, &mut suites, &pids, group, key, only);
        }
    }
    check_same_answers(&mut suites);
    check_same_group_answers(&mut suites, heavy_group, 1e-2);
    check_same_group_answers(&mut suites, kernels_group, 1e-3);

    if let Some(only) = &args.only {
        assert_eq!(
            only, "opbound",
            "--only supports opbound, heavy, kernels and their workloads"
        );
        // Each repetition's µs per op on every host, for finding slow modes.
        for rep in 0..args.reps {
            let per_op: Vec<String> = suites
                .iter_mut()
                .map(|s| format!("{:.2}", s.opbound.run().0 * 1e6 / CHAIN_OPS as f64))
                .collect();
            eprintln!("remote_bench: opbound rep {rep} us/op {}", per_op.join(" "));
        }
        return;
    }

    // samples[host][workload] = seconds per run.
    let n = HOSTS.len();
    let mut compute: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n]; 3];
    let mut opbound: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut host_cpu_per_op: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut transfer: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n]; sizes.len()];
    let mut read: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut raw: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    let mut heavy = group_samples(n, HEAVY.len());
    let mut kernels = group_samples(n, KERNELS.len());

    for rep in 0..args.reps {
        // Rotate which host goes first, so slow drifts in machine load hit all alike.
        for k in 0..n {
            let h = (rep + k) % n;
            let s = &mut suites[h];
            for (i, (_, w)) in s.compute.iter_mut().enumerate() {
                compute[i][h].push(w.run().0);
            }
            let cpu_before = process_cpu_ns(pids[h]);
            opbound[h].push(s.opbound.run().0 / CHAIN_OPS as f64);
            let cpu_used = process_cpu_ns(pids[h]).saturating_sub(cpu_before);
            host_cpu_per_op[h].push(cpu_used as f64 * 1e-9 / CHAIN_OPS as f64);
            for (i, (_, t)) in s.transfers.iter_mut().enumerate() {
                transfer[i][h].push(t.run().0);
            }
            read[h].extend(s.reads.samples());
        }
        time_group(&mut suites, heavy_group, &pids, rep, &mut heavy);
        time_group(&mut suites, kernels_group, &pids, rep, &mut kernels);
        for (i, &b) in sizes.iter().enumerate() {
            raw[i].push(raw_tcp_round_trip(b));
        }
        eprintln!("remote_bench: repetition {}/{} done", rep + 1, args.reps);
    }

    // Medians and ratios (ours / Burn's for times; ours / raw for throughput).
    let names = ["mlp_forward", "cnn_forward", "train_step"];
    let mut details = serde_json::Map::new();
    let (mut vs_burn, mut vs_std) = (Vec::new(), Vec::new());
    for (i, name) in names.iter().enumerate() {
        let (v, m) = per_host(&compute[i], 1e3);
        vs_burn.push(m[0] / m[1]);
        vs_std.push(m[0] / m[2]);
        details.insert(format!("{name}_ms"), v);
    }
    let (v, op) = per_host(&opbound, 1e6);
    details.insert("opbound_us_per_op".into(), v);
    let (v, host_ns) = per_host(&host_cpu_per_op, 1e9);
    details.insert("host_ns_per_op".into(), v);
    let mut transfer_ratios = Vec::new();
    for (i, &b) in sizes.iter().enumerate() {
        // Throughput of the median time, in GB/s (both directions' bytes).
        let gbps = |secs: f64| 2.0 * b as f64 / secs / 1e9;
        let m = [0, 1, 2].map(|h| gbps(median(&transfer[i][h])));
        let ceiling = gbps(median(&raw[i]));
        transfer_ratios.push(m[0] / ceiling);
        details.insert(
            format!("transfer_{}MiB_GBps", b / MIB),
            json!({"torchbridge": m[0], "burn": m[1], "burn_std": m[2], "raw_tcp": ceiling,
                   "torchbridge_vs_raw": m[0] / ceiling, "burn_vs_raw": m[1] / ceiling,
                   "burn_std_vs_raw": m[2] / ceiling,
                   "seconds": {"torchbridge": summary(&transfer[i][0], 1.0),
                               "burn": summary(&transfer[i][1], 1.0),
                               "burn_std": summary(&transfer[i][2], 1.0),
                               "raw_tcp": summary(&raw[i], 1.0)}}),
        );
    }
    let (v, reads_us) = per_host(&read, 1e6);
    details.insert("read_roundtrip_us".into(), v);
    let (heavy_ratio, heavy_details) = group_figures(&HEAVY, &heavy);
    details.extend(heavy_details);
    let (kernels_ratio, kernels_details) = group_figures(&KERNELS, &kernels);
    details.extend(kernels_details);

    let banners: serde_json::Map<String, Value> = HOSTS
        .iter()
        .zip(&hosts)
        .map(|(name, h)| (name.to_string(), json!(h.banner)))
        .collect();
    let result = json!({
        "remote_compute_vs_burn": geomean(&vs_burn),
        "remote_compute_vs_burn_std": geomean(&vs_std),
        "remote_opbound_vs_burn": op[0] / op[1],
        "remote_opbound_vs_burn_std": op[0] / op[2],
        "transfer_vs_raw_tcp": geomean(&transfer_ratios),
        "read_roundtrip_us": reads_us[0],
        "read_roundtrip_vs_burn": reads_us[0] / reads_us[1],
        "remote_heavy_vs_burn": heavy_ratio,
        "remote_kernels_vs_burn": kernels_ratio,
        "host_ns_per_op": host_ns[0],
        "host_ns_per_op_vs_burn": host_ns[0] / host_ns[1],
        "details": Value::Object(details),
        "config": {"reps": args.reps, "device": args.device, "hosts": HOSTS, "client": CLIENT,
                   "threads": args.threads, "host_cpus": args.host_cpus,
                   "banners": Value::Object(banners),
                   "chain_ops": CHAIN_OPS, "reads_per_rep": reads,
                   "transfer_sizes_MiB": sizes.iter().map(|b| b / MIB).collect::<Vec<_>>()},
    });
    let text = serde_json::to_string_pretty(&result).unwrap();
    match &args.out {
        Some(path) => std::fs::write(path, text + "\n").expect("cannot write --out"),
        None => println!("{text}"),
    }
}
