//! AOTInductor packages (.pt2, torch.export + AOTInductor) hosted with `torchbridge serve --model
//! NAME=PATH.pt2` and called from a Burn program through Burn's custom-op client, between ordinary
//! Burn ops. Their outputs must equal the model run eagerly in torch: tests/models/
//! make_aoti_models.py writes each package with NAME.expected (the inputs, and torch's outputs
//! for them), and CTest passes the folder in `TB_AOTI_MODELS` (the default build).
//! Without that folder (a build on a LibTorch that cannot load packages) the suite checks that
//! `serve` refuses a package at start-up with exit code 2. The Burn 0.23 crate runs it too.

use std::process::Command;
use std::sync::OnceLock;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use burn_ir::ScalarIr;
use torchbridge_interop::harness::{TorchbridgeHost, assert_same, torchbridge_bin};

use crate::custom_ops::{custom_op_primitives, expect_error, float, int, primitive, spawn_serving};

fn models_dir() -> Option<String> {
    std::env::var("TB_AOTI_MODELS")
        .ok()
        .filter(|d| !d.is_empty())
}

fn package(name: &str) -> String {
    format!("{}/{name}.pt2", models_dir().expect("TB_AOTI_MODELS"))
}

/// One tensor of NAME.expected: `in|out DTYPE RANK DIMS... VALUES...`.
struct Recorded {
    input: bool,
    data: TensorData,
}

fn expected(name: &str) -> Vec<Recorded> {
    let path = format!("{}/{name}.expected", models_dir().expect("TB_AOTI_MODELS"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            let rank: usize = words[2].parse().unwrap();
            let shape: Vec<usize> = words[3..3 + rank]
                .iter()
                .map(|d| d.parse().unwrap())
                .collect();
            let values = &words[3 + rank..];
            let data = match words[1] {
                "float32" => TensorData::new(
                    values.iter().map(|v| v.parse::<f32>().unwrap()).collect(),
                    shape,
                ),
                "int64" => TensorData::new(
                    values.iter().map(|v| v.parse::<i64>().unwrap()).collect(),
                    shape,
                ),
                other => panic!("{path}: dtype {other}"),
            };
            Recorded {
                input: words[0] == "in",
                data,
            }
        })
        .collect()
}

/// The host serving the packages: one of our own, or, with TB_AOTI_HOST, the one that
/// `torchbridge.serve` started from Python (tests/models/serve_from_python.py, run by
/// scripts/test-wheel) with the same models under the same names.
fn host() -> &'static TorchbridgeHost {
    static HOST: OnceLock<TorchbridgeHost> = OnceLock::new();
    HOST.get_or_init(|| {
        if let Some(address) = std::env::var("TB_AOTI_HOST").ok().filter(|a| !a.is_empty()) {
            return TorchbridgeHost::external(address);
        }
        let specs: Vec<String> = ["mlp", "scaled", "lookup"]
            .iter()
            .map(|name| format!("{name}={}", package(name)))
            .collect();
        spawn_serving(&specs)
    })
}

/// `scaled` on a batch of 5 (it was exported with 4: a dynamic dimension) equals torch's result.
fn scaled_matches_torch(remote: &Device) {
    let rec = expected("scaled");
    let x = Tensor::<2>::from_data(rec[0].data.clone(), remote);
    let out = custom_op_primitives(
        remote,
        "scaled",
        vec![primitive(x)],
        &[(vec![5, 3], DType::F32)],
        vec![],
    );
    assert_same(
        &float::<2>(out.into_iter().next().unwrap()).into_data(),
        &rec[1].data,
        1e-6,
    );
}

#[test]
fn packages_serve_a_burn_program_with_torchs_outputs() {
    if models_dir().is_none() {
        eprintln!("no TB_AOTI_MODELS: this build's check is serve_refuses_packages_it_cannot_load");
        return;
    }
    let remote = host().device(0);

    // mlp: two float inputs made by Burn ops on the remote device, two float outputs that Burn
    // goes on computing with.
    let rec = expected("mlp");
    let x = Tensor::<2>::from_data(rec[0].data.clone(), &remote);
    let y = Tensor::<2>::from_data(rec[1].data.clone(), &remote);
    let (x, y) = ((x * 2.0) / 2.0, y + 0.0);
    let mut out = custom_op_primitives(
        &remote,
        "mlp",
        vec![primitive(x), primitive(y)],
        &[(vec![2, 3], DType::F32), (vec![2], DType::F32)],
        vec![],
    );
    let sum = float::<1>(out.remove(1));
    let act = float::<2>(out.remove(0));
    assert_same(&act.clone().into_data(), &rec[2].data, 1e-6);
    assert_same(&sum.into_data(), &rec[3].data, 1e-6);
    let expected_total: f32 = rec[2].data.try_to_vec::<f32>().unwrap().iter().sum();
    let total = act.sum().into_data().try_to_vec::<f32>().unwrap()[0];
    assert!(
        (total - expected_total).abs() < 1e-5,
        "{total} vs {expected_total}"
    );

    scaled_matches_torch(&remote);

    // lookup: an int64 input, a float and an int64 output.
    let rec = expected("lookup");
    // Burn's ints default to I32 on this device; the model was exported for int64 ids.
    let ids = Tensor::<1, Int>::from_data(rec[0].data.clone(), (&remote, DType::I64));
    let ids = ids
        .try_into_primitive::<burn::backend::Remote>()
        .expect("an int tensor on the remote device");
    let mut out = custom_op_primitives(
        &remote,
        "lookup",
        vec![ids],
        &[(vec![4, 2], DType::F32), (vec![4], DType::I64)],
        vec![],
    );
    let doubled = int::<1>(out.remove(1));
    let rows = float::<2>(out.remove(0));
    assert_same(&rows.into_data(), &rec[1].data, 0.0);
    assert_eq!(
        doubled.into_data().try_to_vec::<i64>().unwrap(),
        rec[2].data.try_to_vec::<i64>().unwrap()
    );
    assert!(rec.iter().filter(|r| r.input).count() == 1);
}

#[test]
fn wrong_inputs_and_training_ops_are_errors_and_the_session_goes_on() {
    if models_dir().is_none() {
        return;
    }
    let remote = host().device(0);
    // A batch of 3 where the package was compiled for 2: refused, never read out of bounds.
    let x = Tensor::<2>::ones([3, 4], &remote);
    let y = Tensor::<2>::ones([3, 3], &remote);
    let bad = custom_op_primitives(
        &remote,
        "mlp",
        vec![primitive(x), primitive(y)],
        &[(vec![3, 3], DType::F32), (vec![3], DType::F32)],
        vec![],
    );
    expect_error(
        float::<2>(bad.into_iter().next().unwrap()),
        "unmatched dim value at 0",
    );
    let x = Tensor::<2>::ones([2, 3], &remote);
    let spec = custom_op_primitives(
        &remote,
        "scaled::spec",
        vec![primitive(x)],
        &[(vec![8], DType::F32)],
        vec![ScalarIr::Int(0)],
    );
    expect_error(
        float::<1>(spec.into_iter().next().unwrap()),
        "served for inference only",
    );
    // The session still runs the package.
    scaled_matches_torch(&remote);
}

#[test]
fn serve_refuses_packages_it_cannot_load() {
    let missing = "/no/such/model.pt2";
    let out = Command::new(torchbridge_bin())
        .args(["serve", "--port", "0", "--model"])
        .arg(format!("m={missing}"))
        .output()
        .expect("cannot run torchbridge");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    let expected = if models_dir().is_some() {
        format!("cannot open AOTInductor package {missing}")
    } else {
        format!("{missing}: AOTInductor packages (.pt2) need LibTorch 2.8 or later")
    };
    assert!(text.contains(&expected), "{text}");
}
