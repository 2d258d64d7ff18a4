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

fn module(name: &str) -> String {
    modules().join(format!("{name}.pt")).display().to_string()
}

/// One host serving the test modules under their own names.
fn host() -> &'static TorchbridgeHost {
    static HOST: OnceLock<TorchbridgeHost> = OnceLock::new();
    HOST.get_or_init(|| {
        let specs: Vec<String> = ["affine", "scale", "sum_and_argmax", "fails", "mlp"]
            .iter()
            .map(|name| format!("{name}={}", module(name)))
            .collect();
        let mut args = Vec::new();
        for spec in &specs {
            args.push("--model");
            args.push(spec.as_str());
        }
        TorchbridgeHost::spawn(&args)
    })
}

type Primitive = burn::backend::tensor::FloatTensor<Remote>;

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

fn primitive<const D: usize>(t: Tensor<D>) -> Primitive {
    t.try_into_primitive::<Remote>().unwrap()
}

/// `custom_op` for inputs of mixed ranks, as primitives.
fn custom_op_primitives(
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

fn float<const D: usize>(p: Primitive) -> Tensor<D> {
    Tensor::from_primitive::<Remote>(p)
}

fn int<const D: usize>(p: Primitive) -> Tensor<D, Int> {
    Tensor::from_primitive::<Remote>(p)
}

/// The affine module's math in Burn: x @ W + b (the constants of test_modules.hpp).
fn affine_in_burn(x: Tensor<2>) -> Tensor<2> {
    let device = x.device();
    let w = Tensor::<2>::from_data([[1.0f32, -1.0], [0.5, 2.0], [-2.0, 0.25]], &device);
    let b = Tensor::<1>::from_data([0.5f32, -1.0], &device);
    x.matmul(w) + b.unsqueeze::<2>()
}

fn input(device: &Device) -> Tensor<2> {
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
fn expect_error<const D: usize>(t: Tensor<D>, expected: &str) {
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
fn session_still_works(device: &Device) {
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

// ---- The training contract (docs/torchscript.md): NAME::parameters, ::functional, ::backward ----

/// The mlp module's parameters (test_modules.hpp), in the contract's order.
const MLP_PARAMETERS: [&[usize]; 4] = [&[4, 3], &[4], &[2, 4], &[2]];

fn declared(shapes: &[&[usize]]) -> Vec<(Vec<usize>, DType)> {
    shapes.iter().map(|s| (s.to_vec(), DType::F32)).collect()
}

/// p - lr * g for a parameter of either rank the mlp has.
fn sgd(p: Primitive, g: Primitive, rank: usize, lr: f64) -> Primitive {
    match rank {
        1 => primitive(float::<1>(p) - float::<1>(g) * lr),
        2 => primitive(float::<2>(p) - float::<2>(g) * lr),
        _ => unreachable!(),
    }
}

fn scalar(t: Tensor<1>) -> f32 {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()[0]
}

/// A Burn layer (x0 @ a), the hosted mlp, a Burn loss; plain SGD on a and on the mlp's
/// parameters. The host's side takes the mlp's gradients from `mlp::backward` and chains them
/// into `a` by hand; the native side is Burn's autodiff on Flex over the same math from the
/// same initial weights. Both must take the same steps.
#[test]
fn a_burn_training_loop_trains_through_a_hosted_module_as_native_burn_does() {
    const STEPS: usize = 12;
    const LR: f64 = 0.2;
    let remote = host().device(0);
    let x0_data = TensorData::new((0..24).map(|i| (i as f32 * 0.41).sin()).collect(), [8, 3]);
    let t_data = TensorData::new(
        (0..16).map(|i| (i as f32 * 0.23).cos() * 0.5).collect(),
        [8, 2],
    );
    let a_data = TensorData::new(
        vec![1.0f32, 0.2, 0.0, -0.1, 0.9, 0.1, 0.0, 0.3, 1.1],
        [3, 3],
    );

    // On the host.
    let mut params = custom_op_primitives(
        &remote,
        "mlp::parameters",
        vec![],
        &declared(&MLP_PARAMETERS),
        vec![],
    );
    let initial: Vec<TensorData> = params
        .iter()
        .zip(MLP_PARAMETERS)
        .map(|(p, shape)| match shape.len() {
            1 => float::<1>(p.clone()).into_data(),
            _ => float::<2>(p.clone()).into_data(),
        })
        .collect();
    let x0 = Tensor::<2>::from_data(x0_data.clone(), &remote);
    let target = Tensor::<2>::from_data(t_data.clone(), &remote);
    let mut a = Tensor::<2>::from_data(a_data.clone(), &remote);
    let mut ours = Vec::new();
    for _ in 0..STEPS {
        let x = x0.clone().matmul(a.clone());
        let mut inputs = vec![primitive(x.clone())];
        inputs.extend(params.iter().cloned());
        let y = float::<2>(
            custom_op_primitives(
                &remote,
                "mlp::functional",
                inputs.clone(),
                &declared(&[&[8, 2]]),
                vec![],
            )
            .remove(0),
        );
        let diff = y - target.clone();
        ours.push(scalar(diff.clone().powf_scalar(2.0).mean()));
        inputs.push(primitive(diff * (2.0 / 16.0)));
        let mut grads = custom_op_primitives(
            &remote,
            "mlp::backward",
            inputs,
            &declared(&[&[8, 3], &[4, 3], &[4], &[2, 4], &[2]]),
            vec![],
        );
        let dx = float::<2>(grads.remove(0));
        a = a - x0.clone().transpose().matmul(dx) * LR;
        params = params
            .into_iter()
            .zip(grads)
            .zip(MLP_PARAMETERS)
            .map(|((p, g), shape)| sgd(p, g, shape.len(), LR))
            .collect();
    }

    // Native: Burn's autodiff on Flex.
    let flex = reference();
    let ad = flex.clone().autodiff();
    let (mut w1, mut b1, mut w2, mut b2) = (
        initial[0].clone(),
        initial[1].clone(),
        initial[2].clone(),
        initial[3].clone(),
    );
    let mut a_native = a_data;
    let mut theirs = Vec::new();
    let step = |p: &TensorData, g: Option<TensorData>, rank: usize| -> TensorData {
        let g = g.expect("no gradient for a tracked leaf");
        match rank {
            1 => (Tensor::<1>::from_data(p.clone(), &flex) - Tensor::<1>::from_data(g, &flex) * LR)
                .into_data(),
            _ => (Tensor::<2>::from_data(p.clone(), &flex) - Tensor::<2>::from_data(g, &flex) * LR)
                .into_data(),
        }
    };
    for _ in 0..STEPS {
        let a_t = Tensor::<2>::from_data(a_native.clone(), &ad).require_grad();
        let w1_t = Tensor::<2>::from_data(w1.clone(), &ad).require_grad();
        let b1_t = Tensor::<1>::from_data(b1.clone(), &ad).require_grad();
        let w2_t = Tensor::<2>::from_data(w2.clone(), &ad).require_grad();
        let b2_t = Tensor::<1>::from_data(b2.clone(), &ad).require_grad();
        let x = Tensor::<2>::from_data(x0_data.clone(), &ad).matmul(a_t.clone());
        let h = (x.matmul(w1_t.clone().transpose()) + b1_t.clone().unsqueeze::<2>()).tanh();
        let y = h.matmul(w2_t.clone().transpose()) + b2_t.clone().unsqueeze::<2>();
        let loss = (y - Tensor::<2>::from_data(t_data.clone(), &ad))
            .powf_scalar(2.0)
            .mean();
        theirs.push(scalar(loss.clone()));
        let g = loss.backward();
        a_native = step(&a_native, a_t.grad(&g).map(|t| t.into_data()), 2);
        w1 = step(&w1, w1_t.grad(&g).map(|t| t.into_data()), 2);
        b1 = step(&b1, b1_t.grad(&g).map(|t| t.into_data()), 1);
        w2 = step(&w2, w2_t.grad(&g).map(|t| t.into_data()), 2);
        b2 = step(&b2, b2_t.grad(&g).map(|t| t.into_data()), 1);
    }

    println!("loss, hosted mlp:  {ours:?}\nloss, native Burn: {theirs:?}");
    for (step, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        assert!(
            (o - t).abs() <= 1e-5 * t.abs().max(1.0),
            "step {step}: {o} against {t}"
        );
    }
    assert!(
        ours[STEPS - 1] < 0.5 * ours[0],
        "the loss did not go down: {ours:?}"
    );
    assert_same(&a.into_data(), &a_native, 1e-4);
    for ((p, shape), native) in params.into_iter().zip(MLP_PARAMETERS).zip([w1, b1, w2, b2]) {
        let p = match shape.len() {
            1 => float::<1>(p).into_data(),
            _ => float::<2>(p).into_data(),
        };
        assert_same(&p, &native, 1e-4);
    }
}

#[test]
fn training_contract_errors_name_the_op_and_the_session_goes_on() {
    let remote = host().device(0);
    let y = float::<2>(
        custom_op_primitives(
            &remote,
            "mlp::functional",
            vec![primitive(Tensor::<2>::zeros([2, 3], &remote))],
            &declared(&[&[2, 2]]),
            vec![],
        )
        .remove(0),
    );
    expect_error(
        y,
        "mlp::functional takes forward's inputs, then 4 parameter(s)",
    );
    session_still_works(&remote);
}
