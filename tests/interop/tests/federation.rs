//! A federation (docs/federation.md): three torchbridge processes on loopback that an unmodified
//! Burn 0.22.1 program sees as one host with four devices (two on member 0, one on each of the
//! others), through member 0's address. Sessions for the other members' devices are relayed to
//! them; all-reduces span the members on c10d's Gloo.

use std::net::TcpListener;
#[cfg(not(burn_023))]
use std::time::{Duration, Instant};

#[cfg(not(burn_023))]
use burn::prelude::*;
#[cfg(not(burn_023))]
use burn::tensor::distributed::{ReduceOperation, all_reduce};
#[cfg(not(burn_023))]
use burn::tensor::remote::RemoteHost;
use torchbridge_interop::harness::{HostProcess, Target, compare, target, torchbridge_bin};

/// A port free now (the members bind theirs a moment later).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Members with `devices[r]` CPU devices each, rank 0 first, and their store's HOST:PORT. `extra`
/// goes to every member. The ports are chosen free, but another process may take one before a
/// member binds it: then every member is stopped and the federation starts again on new ports.
fn spawn_federation(devices: &[usize], extra: &[&str]) -> (Vec<HostProcess>, String) {
    let mut last = String::new();
    for _ in 0..5 {
        match try_spawn_federation(devices, extra) {
            Ok(started) => return started,
            Err(reasons) if reasons.contains("Address already in use") => last = reasons,
            Err(reasons) => panic!("the federation did not start: {reasons}"),
        }
    }
    panic!("no free ports in five tries: {last}")
}

fn try_spawn_federation(
    devices: &[usize],
    extra: &[&str],
) -> Result<(Vec<HostProcess>, String), String> {
    let store = free_port();
    let world = devices.len().to_string();
    let args: Vec<Vec<String>> = devices
        .iter()
        .enumerate()
        .map(|(rank, &n)| {
            let mut a: Vec<String> = [
                "serve",
                "--port",
                &free_port().to_string(),
                "--exit-on-stdin-eof",
                "--log-level",
                "warn",
                "--federation",
                &format!("127.0.0.1:{store}"),
                "--rank",
                &rank.to_string(),
                "--world-size",
                &world,
                "--federation-timeout-ms",
                "60000",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            for _ in 0..n {
                a.extend(["--device".to_string(), "cpu".to_string()]);
            }
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        })
        .collect();
    // Each member prints its address once every member is ready: they start together.
    let bin = torchbridge_bin();
    let started: Vec<Result<HostProcess, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = args
            .iter()
            .map(|a| s.spawn(|| HostProcess::try_start(&bin, a)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // Dropping the members that did start stops them before a retry.
    let reasons: Vec<&String> = started.iter().filter_map(|m| m.as_ref().err()).collect();
    if !reasons.is_empty() {
        return Err(reasons.iter().map(|r| r.as_str()).collect::<Vec<_>>().join("; "));
    }
    let members = started.into_iter().map(Result::unwrap).collect();
    Ok((members, format!("127.0.0.1:{store}")))
}

fn applies() -> bool {
    // Burn's own server has no federation; our build may lack c10d's Gloo (a PyTorch wheel).
    matches!(target(), Target::Torchbridge) && std::env::var("TB_NO_FEDERATION").is_err()
}

#[cfg(not(burn_023))]
fn data(n: usize, seed: u64) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as f32 + 1.0) * 0.37 + seed as f32).sin())
        .collect()
}

#[cfg(not(burn_023))]
/// One data-parallel SGD step of a linear model over `devices`: each device takes two rows of the
/// batch, computes its gradients with Burn's autodiff, averages them with the others through
/// `all_reduce`, and updates its copy of the weights. Returns each device's new (w, b).
fn data_parallel_step(devices: &[Device]) -> Vec<(TensorData, TensorData)> {
    const LR: f64 = 0.5;
    let n = devices.len();
    let x_all = data(n * 2 * 3, 1);
    let t_all = data(n * 2 * 2, 2);
    let inner: Vec<Device> = devices.to_vec();
    // Everything is sent before anything is read: each device's all-reduce waits for the others.
    let updated: Vec<(Tensor<2>, Tensor<1>)> = devices
        .iter()
        .enumerate()
        .map(|(i, device)| {
            let ad = device.clone().autodiff();
            let x = Tensor::<2>::from_data(
                TensorData::new(x_all[i * 6..(i + 1) * 6].to_vec(), [2, 3]),
                &ad,
            );
            let t = Tensor::<2>::from_data(
                TensorData::new(t_all[i * 4..(i + 1) * 4].to_vec(), [2, 2]),
                &ad,
            );
            let w = Tensor::<2>::from_data(TensorData::new(data(6, 3), [3, 2]), &ad).require_grad();
            let b = Tensor::<1>::from_data(TensorData::new(data(2, 4), [2]), &ad).require_grad();
            let y = x.matmul(w.clone()) + b.clone().unsqueeze::<2>();
            let loss = (y - t).powi_scalar(2).mean();
            let grads = loss.backward();
            let gw = w.grad(&grads).unwrap();
            let gb = b.grad(&grads).unwrap();
            let gw = all_reduce(gw, ReduceOperation::Mean, inner.clone()).resolve();
            let gb = all_reduce(gb, ReduceOperation::Mean, inner.clone()).resolve();
            (w.inner() - gw * LR, b.inner() - gb * LR)
        })
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = updated
            .into_iter()
            .map(|(w, b)| s.spawn(move || (w.into_data(), b.into_data())))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[cfg(not(burn_023))]
#[test]
fn a_data_parallel_step_over_three_members_matches_one_host() {
    if !applies() {
        return;
    }
    let (members, _) = spawn_federation(&[2, 1, 1], &[]);
    let front = &members[0];
    let devices: Vec<Device> = (0..4).map(|i| front.device(i)).collect();
    let federated = data_parallel_step(&devices);

    let one = HostProcess::spawn(&[
        "--device", "cpu", "--device", "cpu", "--device", "cpu", "--device", "cpu",
    ]);
    let single = data_parallel_step(&(0..4).map(|i| one.device(i)).collect::<Vec<_>>());

    for (i, ((w, b), (sw, sb))) in federated.iter().zip(&single).enumerate() {
        compare(w, sw, 1e-6).unwrap_or_else(|why| panic!("device {i}, w: {why}"));
        compare(b, sb, 1e-6).unwrap_or_else(|why| panic!("device {i}, b: {why}"));
        // Every device holds the same bits: the reduction order is fixed.
        assert_eq!(
            w.as_bytes(),
            federated[0].0.as_bytes(),
            "device {i}: w differs from device 0's"
        );
        assert_eq!(
            b.as_bytes(),
            federated[0].1.as_bytes(),
            "device {i}: b differs from device 0's"
        );
    }
    // The step moved the weights (a step that changed nothing would match too).
    let w0 = TensorData::new(data(6, 3), [3, 2]);
    assert!(
        compare(&federated[0].0, &w0, 1e-3).is_err(),
        "the step left w unchanged"
    );
    // Another member is a front door too.
    let via_member_2: Vec<Device> = (0..4).map(|i| members[2].device(i)).collect();
    let again = data_parallel_step(&via_member_2);
    assert_eq!(
        again[3].0.as_bytes(),
        federated[3].0.as_bytes(),
        "front door 2 disagrees"
    );
}

#[cfg(not(burn_023))]
#[test]
fn a_member_that_dies_fails_its_collectives_in_bounded_time_and_the_others_serve_on() {
    if !applies() {
        return;
    }
    let (members, store) = spawn_federation(&[1, 1, 1], &["--transfer-timeout-ms", "5000"]);
    let front = &members[0];
    let devices: Vec<Device> = (0..3).map(|i| front.device(i)).collect();
    let ones = |d: &Device| Tensor::<1>::from_data(TensorData::new(vec![1.0f32; 4], [4]), d);
    // Warm: one all-reduce across all three works.
    let sums: Vec<Tensor<1>> = devices
        .iter()
        .map(|d| all_reduce(ones(d), ReduceOperation::Sum, devices.clone()).resolve())
        .collect();
    for s in std::thread::scope(|sc| {
        let hs: Vec<_> = sums
            .into_iter()
            .map(|t| sc.spawn(move || t.into_data()))
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    }) {
        assert_eq!(s.try_to_vec::<f32>().unwrap(), vec![3.0f32; 4]);
    }

    // Member 2 dies. Devices 0 and 1 start an all-reduce that needs it.
    let pid = members[2].pid().unwrap();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let results: Vec<_> = std::thread::scope(|sc| {
        let hs: Vec<_> = devices[..2]
            .iter()
            .map(|d| {
                let t = all_reduce(ones(d), ReduceOperation::Sum, devices.clone()).resolve();
                sc.spawn(move || t.try_into_data())
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let waited = started.elapsed();
    for (i, r) in results.iter().enumerate() {
        assert!(
            r.is_err(),
            "device {i}: an all-reduce needing a dead member succeeded: {r:?}"
        );
    }
    // The transfer timeout (5 s) bounds it, with room for a loaded machine.
    assert!(
        waited < Duration::from_secs(30),
        "the failures took {waited:?}"
    );

    // The surviving members serve new sessions, through the front door and directly.
    for (host, index) in [(front, 1usize), (&members[1], 0usize)] {
        let d = host.device(index);
        let x = Tensor::<1>::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0], [3]), &d);
        assert_eq!(
            (x * 2.0).into_data().try_to_vec::<f32>().unwrap(),
            vec![2.0, 4.0, 6.0]
        );
    }
    // The dead member's device is refused with an error, not a hang.
    let started = Instant::now();
    let dead = Device::remote_options(&RemoteHost::websocket(&front.address))
        .device_index(2)
        .init();
    if let Ok(d) = dead {
        let x = Tensor::<1>::from_data(TensorData::new(vec![1.0f32], [1]), &d);
        assert!(
            x.try_into_data().is_err(),
            "a read on the dead member's device succeeded"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the dead device took {:?}",
        started.elapsed()
    );

    // A member restarted with the dead one's rank is refused: the others' links were to the first.
    let mut restarted = std::process::Command::new(torchbridge_bin())
        .args([
            "serve",
            "--port",
            &free_port().to_string(),
            "--log-level",
            "error",
        ])
        .args(["--federation", &store, "--rank", "2", "--world-size", "3"])
        .output()
        .unwrap();
    assert!(!restarted.status.success(), "a second rank 2 joined");
    let said = String::from_utf8_lossy(&restarted.stdout).to_string()
        + &String::from_utf8_lossy(&std::mem::take(&mut restarted.stderr));
    assert!(said.contains("already joined"), "no reason given: {said}");
}

#[cfg(not(burn_023))]
#[test]
fn tensors_move_between_devices_of_different_members() {
    if !applies() {
        return;
    }
    let (members, _) = spawn_federation(&[2, 1], &[]);
    let front = &members[0];
    let d: Vec<Device> = (0..3).map(|i| front.device(i)).collect();
    let values = data(6, 5);
    let x = Tensor::<2>::from_data(TensorData::new(values.clone(), [2, 3]), &d[0]);
    // Member 0 to member 1 (a relayed session), back to member 0's other device, and an int tensor
    // from member 1 to member 0: same-host transfers to Burn's client, /data between members.
    let on_2 = x.clone().to_device(&d[2]);
    let doubled = (on_2.clone() * 2.0).to_device(&d[1]);
    let ints = Tensor::<1, Int>::from_data(TensorData::new(vec![7i64, -3, 11], [3]), &d[2])
        .to_device(&d[0]);
    assert_eq!(
        on_2.into_data().try_to_vec::<f32>().unwrap(),
        values,
        "device 0 to 2"
    );
    let twice: Vec<f32> = values.iter().map(|v| v * 2.0).collect();
    assert_eq!(
        doubled.into_data().try_to_vec::<f32>().unwrap(),
        twice,
        "device 2 to 1"
    );
    assert_eq!(
        ints.into_data()
            .convert::<i64>()
            .try_to_vec::<i64>()
            .unwrap(),
        vec![7, -3, 11],
        "ints, device 2 to 0"
    );
    // A tensor far over the handshake's message limit, up to and back from a relayed session.
    let big: Vec<f32> = (0..1 << 18).map(|i| i as f32 * 0.5).collect();
    let on_2 = Tensor::<1>::from_data(TensorData::new(big.clone(), [1 << 18]), &d[2]);
    assert_eq!(
        on_2.into_data().try_to_vec::<f32>().unwrap(),
        big,
        "1 MiB through a relay"
    );
    // Through member 1's door the same device numbers name the same devices.
    let y = Tensor::<1>::from_data(
        TensorData::new(vec![1.0f32, 2.0], [2]),
        &members[1].device(0),
    )
    .to_device(&members[1].device(2));
    assert_eq!(y.into_data().try_to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
}

/// Burn 0.23's `float_all_reduce` over four devices on three members: each member's sessions are
/// placed through the federation's store, the members' parts meet on each member, and the sums
/// cross on Gloo. Every device reads the same bits, equal (to rounding) to Flex's all-reduce.
#[cfg(burn_023)]
#[test]
fn an_all_reduce_local_spans_members_with_the_same_bits_everywhere() {
    use burn_backend::distributed::ReduceOperation;
    use burn_backend::ops::CollectiveOps;
    use burn_backend::tensor::FloatTensor;
    use burn_backend::{Backend, TensorData};
    use burn_flex::Flex;
    use torchbridge_interop::harness::{Router, values};

    fn part<B: Backend>(seed: u64, device: &B::Device) -> FloatTensor<B> {
        B::float_from_data(TensorData::new(values(6, seed), vec![2, 3]), device)
    }
    fn read<B: Backend>(t: FloatTensor<B>) -> TensorData {
        burn_std::future::block_on(B::float_into_data(t)).expect("reading a float tensor")
    }

    if !applies() {
        return;
    }
    let (members, _) = spawn_federation(&[2, 1, 1], &[]);
    // Through member 1's door: devices 0 and 1 are relayed to member 0, 3 to member 2.
    let devices: Vec<_> = (0..4).map(|i| members[1].router_device(i)).collect();
    let flex = burn_flex::FlexDevice::default();
    for (op, seed) in [(ReduceOperation::Sum, 70), (ReduceOperation::Mean, 72)] {
        for round in 0..2u64 {
            let parts: Vec<_> = devices
                .iter()
                .enumerate()
                .map(|(i, d)| part::<Router>(seed + round + i as u64, d))
                .collect();
            let reads: Vec<TensorData> = Router::float_all_reduce(parts, op)
                .into_iter()
                .map(read::<Router>)
                .collect();
            let expected = read::<Flex>(
                Flex::float_all_reduce(
                    (0..4)
                        .map(|i| part::<Flex>(seed + round + i as u64, &flex))
                        .collect(),
                    op,
                )
                .remove(0),
            );
            for (i, r) in reads.iter().enumerate() {
                compare(r, &expected, 1e-6)
                    .unwrap_or_else(|why| panic!("{op:?}, round {round}, device {i}: {why}"));
                assert_eq!(
                    r.as_bytes(),
                    reads[0].as_bytes(),
                    "{op:?}: device {i} differs"
                );
            }
        }
    }
}
