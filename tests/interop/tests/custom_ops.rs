//! TorchScript modules hosted with `torchbridge serve --model NAME=PATH.pt`, called from a Burn
//! program through Burn's custom-op client API (`CustomOpClient`, `OperationIr::Custom`), mixed
//! with ordinary Burn ops on the remote device and judged against the same math in Burn on Flex.
//!
//! The modules come from `tb_make_test_modules` (tests/backends/libtorch/test_modules.hpp): CTest
//! passes its path in `TB_MAKE_TEST_MODULES`; by hand the default build tree's copy is used.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use burn::backend::{DispatchDevice, Remote};
use burn::prelude::*;
use burn::tensor::DType;
use burn::tensor::remote::CustomOpClient;
use burn_ir::{CustomOpIr, ScalarIr, TensorIr};
use torchbridge_interop::harness::{TorchbridgeHost, assert_same, reference, torchbridge_bin};

/// The folder holding `<name>.pt` for every test module, written once per test binary.
fn modules() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let tool = std::env::var("TB_MAKE_TEST_MODULES").unwrap_or_else(|_| {
            let root = env!("CARGO_MANIFEST_DIR");
            format!("{root}/../../build/tests/backends/libtorch/tb_make_test_modules")
        });
        let dir = std::env::temp_dir().join(format!("tb_custom_ops_{}", std::process::id()));
        let status = Command::new(&tool)
            .arg(&dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
        assert!(
            status.status.success(),
            "{tool} failed: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        dir
    })
}

pub(crate) fn module(name: &str) -> String {
    modules().join(format!("{name}.pt")).display().to_string()
}

/// One host serving the test modules under their own names.
pub(crate) fn host() -> &'static TorchbridgeHost {
    static HOST: OnceLock<TorchbridgeHost> = OnceLock::new();
    HOST.get_or_init(|| {
        let specs: Vec<String> = ["affine", "scale", "sum_and_argmax", "fails", "mlp", "cnn"]
            .iter()
            .map(|name| format!("{name}={}", module(name)))
            .collect();
        spawn_serving(&specs)
    })
}

/// A host serving each `NAME=PATH` of `specs` (`--model`).
pub(crate) fn spawn_serving(specs: &[String]) -> TorchbridgeHost {
    let mut args = Vec::new();
    for spec in specs {
        args.push("--model");
        args.push(spec.as_str());
    }
    TorchbridgeHost::spawn(&args)
}

pub(crate) type Primitive = burn::backend::tensor::FloatTensor<Remote>;

/// Ships `OperationIr::Custom { id, inputs, outputs, scalars }` on the remote device behind
/// `device` through Burn's `CustomOpClient`; returns the outputs as remote primitives (wrap them
/// with `float` or `int`, as declared).
fn custom_op<const D: usize>(
    device: &Device,
    id: &str,
    inputs: Vec<Tensor<D>>,
    outputs: &[(Vec<usize>, DType)],
    scalars: Vec<ScalarIr>,
) -> Vec<Primitive> {
    let inputs = inputs.into_iter().map(primitive).collect();
    custom_op_primitives(device, id, inputs, outputs, scalars)
}

pub(crate) fn primitive<const D: usize>(t: Tensor<D>) -> Primitive {
    t.try_into_primitive::<Remote>().unwrap()
}

/// `custom_op` for inputs of mixed ranks, as primitives.
pub(crate) fn custom_op_primitives(
    device: &Device,
    id: &str,
    inputs: Vec<Primitive>,
    outputs: &[(Vec<usize>, DType)],
    scalars: Vec<ScalarIr>,
) -> Vec<Primitive> {
    let DispatchDevice::Remote(remote) = device.as_dispatch() else {
        panic!("custom ops run on a remote device, not {device:?}");
    };
    let client = CustomOpClient::new(remote);
    let inputs: Vec<TensorIr> = inputs.into_iter().map(|p| p.into_ir()).collect();
    let outputs: Vec<TensorIr> = outputs
        .iter()
        .map(|(shape, dtype)| {
            TensorIr::uninit(
                client.create_empty_handle(),
                Shape::from(shape.clone()),
                *dtype,
            )
        })
        .collect();
    client.register(CustomOpIr {
        id: id.to_string(),
        inputs,
        outputs,
        scalars,
    })
}

pub(crate) fn float<const D: usize>(p: Primitive) -> Tensor<D> {
    Tensor::from_primitive::<Remote>(p)
}

pub(crate) fn int<const D: usize>(p: Primitive) -> Tensor<D, Int> {
    Tensor::from_primitive::<Remote>(p)
}

/// The affine module's math in Burn: x @ W + b (the constants of test_modules.hpp).
fn affine_in_burn(x: Tensor<2>) -> Tensor<2> {
    let device = x.device();
    let w = Tensor::<2>::from_data([[1.0f32, -1.0], [0.5, 2.0], [-2.0, 0.25]], &device);
    let b = Tensor::<1>::from_data([0.5f32, -1.0], &device);
    x.matmul(w) + b.unsqueeze::<2>()
}

pub(crate) fn input(device: &Device) -> Tensor<2> {
    Tensor::<2>::from_data([[1.0f32, 2.0, 3.0], [-1.0, 0.0, 4.0]], device)
}

#[test]
fn a_hosted_module_runs_between_burn_ops() {
    let remote = host().device(0);
    // Burn preprocessing -> the Torch model -> a Burn loss, all on the remote device.
    let program = |device: &Device, model: &dyn Fn(Tensor<2>) -> Tensor<2>| {
        let x = (input(device) - 1.0) * 0.5;
        let y = model(x);
        let target = Tensor::<2>::from_data([[0.0f32, 1.0], [1.0, 0.0]], device);
        let loss = (y.clone() - target).powf_scalar(2.0).mean();
        vec![y.into_data(), loss.into_data()]
    };
    let ours = program(&remote, &|x| {
        float(
            custom_op(
                &remote,
                "affine",
                vec![x],
                &[(vec![2, 2], DType::F32)],
                vec![],
            )
            .remove(0),
        )
    });
    let theirs = program(&reference(), &affine_in_burn);
    for (a, e) in ours.iter().zip(theirs.iter()) {
        assert_same(a, e, 1e-6);
    }
}

#[test]
fn scalars_reach_the_module_and_defaults_fill_the_rest() {
    let remote = host().device(0);
    let x = input(&remote);
    let two = float::<2>(
        custom_op(
            &remote,
            "scale",
            vec![x.clone()],
            &[(vec![2, 3], DType::F32)],
            vec![ScalarIr::Float(2.5), ScalarIr::Float(-1.0)],
        )
        .remove(0),
    );
    let one = float::<2>(
        custom_op(
            &remote,
            "scale",
            vec![x],
            &[(vec![2, 3], DType::F32)],
            vec![ScalarIr::Float(2.5)],
        )
        .remove(0),
    );
    let flex = input(&reference());
    assert_same(
        &two.into_data(),
        &(flex.clone() * 2.5 - 1.0).into_data(),
        1e-6,
    );
    assert_same(&one.into_data(), &(flex * 2.5).into_data(), 1e-6);
}

#[test]
fn tuple_outputs_fill_float_and_int_outputs() {
    let remote = host().device(0);
    let a = input(&remote);
    let b = input(&remote).neg().exp();
    let [sum, argmax]: [Primitive; 2] = custom_op(
        &remote,
        "sum_and_argmax",
        vec![a, b],
        &[(vec![2, 3], DType::F32), (vec![2], DType::I64)],
        vec![],
    )
    .try_into()
    .unwrap();
    // Both outputs go on through Burn ops before they are read.
    let sum = float::<2>(sum) * 2.0;
    let argmax = int::<1>(argmax) + 10;
    let flex_a = input(&reference());
    let flex_sum = flex_a.clone() + flex_a.neg().exp();
    assert_same(
        &sum.into_data(),
        &(flex_sum.clone() * 2.0).into_data(),
        1e-6,
    );
    let ours: Vec<i64> = argmax
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .unwrap();
    let theirs: Vec<i64> = (flex_sum.argmax(1).reshape([2]) + 10)
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .unwrap();
    assert_eq!(ours, theirs);
}

/// Reads `t`, which must fail with an error containing `expected`.
#[track_caller]
pub(crate) fn expect_error<const D: usize>(t: Tensor<D>, expected: &str) {
    match t.try_into_data() {
        Ok(data) => panic!("expected an error containing {expected:?}, read {data:?}"),
        Err(e) => {
            let message = format!("{e}");
            assert!(
                message.contains(expected),
                "error {message:?} lacks {expected:?}"
            );
        }
    }
}

/// After an error the session still computes.
#[track_caller]
pub(crate) fn session_still_works(device: &Device) {
    let y = float::<2>(
        custom_op(
            device,
            "affine",
            vec![input(device)],
            &[(vec![2, 2], DType::F32)],
            vec![],
        )
        .remove(0),
    );
    assert_same(
        &y.into_data(),
        &affine_in_burn(input(&reference())).into_data(),
        1e-6,
    );
}

#[test]
fn an_unknown_module_is_an_error_and_the_session_goes_on() {
    let remote = host().device(0);
    let y = float::<2>(
        custom_op(
            &remote,
            "no_such_model",
            vec![input(&remote)],
            &[(vec![2, 2], DType::F32)],
            vec![],
        )
        .remove(0),
    );
    expect_error(
        y,
        "no custom op \"no_such_model\" is registered on this host",
    );
    session_still_works(&remote);
}

#[test]
fn a_shape_mismatch_is_an_error_and_the_session_goes_on() {
    let remote = host().device(0);
    let y = float::<2>(
        custom_op(
            &remote,
            "affine",
            vec![input(&remote)],
            &[(vec![2, 3], DType::F32)],
            vec![],
        )
        .remove(0),
    );
    expect_error(
        y,
        "custom op \"affine\" output 0 has shape [2, 2], the op declares [2, 3]",
    );
    session_still_works(&remote);
}

#[test]
fn wrong_arity_and_module_exceptions_are_errors() {
    let remote = host().device(0);
    let y = float::<2>(
        custom_op(
            &remote,
            "affine",
            vec![input(&remote), input(&remote)],
            &[(vec![2, 2], DType::F32)],
            vec![],
        )
        .remove(0),
    );
    expect_error(y, "takes 1 tensor input(s), the op passes 2");
    let y = float::<2>(
        custom_op(
            &remote,
            "fails",
            vec![input(&remote)],
            &[(vec![2, 3], DType::F32)],
            vec![],
        )
        .remove(0),
    );
    expect_error(y, "fails on purpose");
    session_still_works(&remote);
}

#[test]
fn serve_refuses_a_model_it_cannot_load() {
    let missing = modules().join("missing.pt").display().to_string();
    let out = Command::new(torchbridge_bin())
        .args(["serve", "--port", "0", "--model"])
        .arg(format!("m={missing}"))
        .output()
        .expect("cannot run torchbridge");
    assert!(!out.status.success(), "serve started with a missing model");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("cannot open TorchScript module {missing}")),
        "{text}"
    );
}

#[test]
fn models_prints_what_to_declare() {
    let out = Command::new(torchbridge_bin())
        .args(["models", &module("affine"), &module("sum_and_argmax")])
        .output()
        .expect("cannot run torchbridge");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("forward(Tensor x) -> Tensor"), "{text}");
    assert!(
        text.contains("forward(Tensor a, Tensor b) -> Tuple[Tensor, Tensor]"),
        "{text}"
    );
    assert!(text.contains("outputs: 2 tensor(s)"), "{text}");
}
