//! rust/torchbridge-burn: a TorchScript module hosted by torchbridge as a Burn `Module`, trained
//! by Burn's own autodiff and optimizer. A Burn layer, the hosted MLP and a Burn loss train
//! together; the same model written natively in Burn on Flex, from the same initial weights,
//! must take the same steps.

use burn::module::{Module, Param};
use burn::optim::{GradientsParams, SgdConfig};
use burn::prelude::*;
use torchbridge_burn::{Error, TorchModule};
use torchbridge_interop::harness::{TorchbridgeHost, assert_same, reference};

use crate::custom_ops::{host, module};

/// A Burn layer (x @ a), then the hosted mlp (test_modules.hpp).
#[derive(Module, Debug)]
struct Mixed {
    a: Param<Tensor<2>>,
    torch: TorchModule,
}

impl Mixed {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.torch.forward(x.matmul(self.a.val()))
    }
}

/// The same model in Burn: the mlp is fc2(tanh(fc1(x))) with PyTorch's [out, in] weights.
#[derive(Module, Debug)]
struct Native {
    a: Param<Tensor<2>>,
    w1: Param<Tensor<2>>,
    b1: Param<Tensor<1>>,
    w2: Param<Tensor<2>>,
    b2: Param<Tensor<1>>,
}

impl Native {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let h = (x.matmul(self.a.val()).matmul(self.w1.val().transpose())
            + self.b1.val().unsqueeze::<2>())
        .tanh();
        h.matmul(self.w2.val().transpose()) + self.b2.val().unsqueeze::<2>()
    }
}

fn a_data() -> TensorData {
    TensorData::new(
        vec![1.0f32, 0.2, 0.0, -0.1, 0.9, 0.1, 0.0, 0.3, 1.1],
        [3, 3],
    )
}

fn batch() -> (TensorData, TensorData) {
    (
        TensorData::new((0..24).map(|i| (i as f32 * 0.41).sin()).collect(), [8, 3]),
        TensorData::new(
            (0..16).map(|i| (i as f32 * 0.23).cos() * 0.5).collect(),
            [8, 2],
        ),
    )
}

fn loss_of(t: Tensor<1>) -> f32 {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()[0]
}

/// `steps` plain SGD steps on mean((forward(x) - target)^2): the trained model and each step's
/// loss.
fn sgd<M: Module, const D: usize>(
    mut model: M,
    forward: impl Fn(&M, Tensor<D>) -> Tensor<2>,
    (x, target): (&TensorData, &TensorData),
    device: &Device,
    steps: usize,
    lr: f64,
) -> (M, Vec<f32>) {
    let mut optim = SgdConfig::new().init();
    let mut losses = Vec::new();
    for _ in 0..steps {
        let y = forward(&model, Tensor::<D>::from_data(x.clone(), device));
        let loss = (y - Tensor::from_data(target.clone(), device))
            .powf_scalar(2.0)
            .mean();
        losses.push(loss_of(loss.clone()));
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(lr, model, grads);
    }
    (model, losses)
}

/// Every step's loss within `tolerance` (relative above 1), and the last below `fraction` of the
/// first.
fn assert_same_losses(what: &str, ours: &[f32], theirs: &[f32], tolerance: f32, fraction: f32) {
    println!("{what} loss, torchbridge-burn: {ours:?}\n{what} loss, native Burn:      {theirs:?}");
    for (step, (o, t)) in ours.iter().zip(theirs).enumerate() {
        assert!(
            (o - t).abs() <= tolerance * t.abs().max(1.0),
            "step {step}: {o} against {t}"
        );
    }
    assert!(
        ours[ours.len() - 1] < fraction * ours[0],
        "the loss did not go down: {ours:?}"
    );
}

#[test]
fn a_hosted_module_trains_with_burn_layers_as_native_burn_does() {
    const STEPS: usize = 10;
    const LR: f64 = 0.2;
    let device = host().device(0).autodiff();
    let (x, target) = batch();

    let model = Mixed {
        a: Param::from_tensor(Tensor::from_data(a_data(), &device)),
        torch: TorchModule::load(&device, "mlp").expect("load mlp"),
    };
    let shapes: Vec<Vec<usize>> = model
        .torch
        .parameter_shapes()
        .iter()
        .map(|s| s.to_vec())
        .collect();
    assert_eq!(shapes, vec![vec![4, 3], vec![4], vec![2, 4], vec![2]]);
    let initial: Vec<TensorData> = model
        .torch
        .parameters()
        .into_iter()
        .map(|p| p.into_data())
        .collect();

    let (model, ours) = sgd(model, Mixed::forward, (&x, &target), &device, STEPS, LR);

    let flex = reference().autodiff();
    let param2 = |d: &TensorData, shape: [usize; 2]| {
        Param::from_tensor(Tensor::<1>::from_data(d.clone(), &flex).reshape(shape))
    };
    let native = Native {
        a: Param::from_tensor(Tensor::from_data(a_data(), &flex)),
        w1: param2(&initial[0], [4, 3]),
        b1: Param::from_tensor(Tensor::from_data(initial[1].clone(), &flex)),
        w2: param2(&initial[2], [2, 4]),
        b2: Param::from_tensor(Tensor::from_data(initial[3].clone(), &flex)),
    };
    let (native, theirs) = sgd(native, Native::forward, (&x, &target), &flex, STEPS, LR);
    assert_same_losses("mlp", &ours, &theirs, 1e-5, 0.5);
    // The Burn layer before the module trained too: backward went through the hosted module.
    assert_same(
        &model.a.val().into_data(),
        &native.a.val().into_data(),
        1e-4,
    );
    let trained = model.torch.parameters();
    assert_same(
        &trained[3].clone().into_data(),
        &native.b2.val().into_data(),
        1e-4,
    );
    assert_same(
        &trained[0].clone().into_data(),
        &native.w1.val().reshape([12]).into_data(),
        1e-4,
    );
}

#[test]
fn inference_on_a_plain_device_equals_the_modules_math() {
    let device = host().device(0);
    let model = TorchModule::load(&device, "mlp").unwrap();
    let (x, _) = batch();
    let y: Tensor<2> = model.forward(Tensor::<2>::from_data(x.clone(), &device));
    let flex = reference();
    let p: Vec<TensorData> = model
        .parameters()
        .into_iter()
        .map(|p| p.into_data())
        .collect();
    let w1 = Tensor::<1>::from_data(p[0].clone(), &flex).reshape([4, 3]);
    let w2 = Tensor::<1>::from_data(p[2].clone(), &flex).reshape([2, 4]);
    let h = (Tensor::<2>::from_data(x, &flex).matmul(w1.transpose())
        + Tensor::<1>::from_data(p[1].clone(), &flex).unsqueeze::<2>())
    .tanh();
    let expected =
        h.matmul(w2.transpose()) + Tensor::<1>::from_data(p[3].clone(), &flex).unsqueeze::<2>();
    assert_same(&y.into_data(), &expected.into_data(), 1e-5);
}

/// The cnn module (test_modules.hpp): conv 1->2 channels 3x3 padding 1, relu, a linear head.
#[derive(Module, Debug)]
struct NativeCnn {
    conv_w: Param<Tensor<4>>,
    conv_b: Param<Tensor<1>>,
    head_w: Param<Tensor<2>>,
    head_b: Param<Tensor<1>>,
}

impl NativeCnn {
    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        use burn::tensor::module::conv2d;
        use burn::tensor::ops::ConvOptions;
        let y = conv2d(
            x,
            self.conv_w.val(),
            Some(self.conv_b.val()),
            ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
        );
        let y: Tensor<2> = burn::tensor::activation::relu(y).flatten(1, 3);
        y.matmul(self.head_w.val().transpose()) + self.head_b.val().unsqueeze::<2>()
    }
}

#[test]
fn a_hosted_cnn_fine_tunes_as_native_burn_does() {
    const STEPS: usize = 8;
    const LR: f64 = 0.05;
    let device = host().device(0).autodiff();
    let x = TensorData::new(
        (0..64).map(|i| (i as f32 * 0.17).sin()).collect(),
        [4, 1, 4, 4],
    );
    let target = TensorData::new((0..12).map(|i| (i as f32 * 0.5).cos()).collect(), [4, 3]);

    let model = TorchModule::load(&device, "cnn").unwrap();
    let initial: Vec<TensorData> = model
        .parameters()
        .into_iter()
        .map(|p| p.into_data())
        .collect();
    let forward = |m: &TorchModule, x: Tensor<4>| -> Tensor<2> { m.forward(x) };
    let (model, ours) = sgd(model, forward, (&x, &target), &device, STEPS, LR);

    let flex = reference().autodiff();
    let flat = |d: &TensorData| Tensor::<1>::from_data(d.clone(), &flex);
    let native = NativeCnn {
        conv_w: Param::from_tensor(flat(&initial[0]).reshape([2, 1, 3, 3])),
        conv_b: Param::from_tensor(flat(&initial[1])),
        head_w: Param::from_tensor(flat(&initial[2]).reshape([3, 32])),
        head_b: Param::from_tensor(flat(&initial[3])),
    };
    let (native, theirs) = sgd(native, NativeCnn::forward, (&x, &target), &flex, STEPS, LR);
    assert_same_losses("cnn", &ours, &theirs, 1e-4, 0.8);
    assert_same(
        &model.parameters()[0].clone().into_data(),
        &native.conv_w.val().reshape([18]).into_data(),
        1e-4,
    );
}

#[test]
fn an_unknown_module_or_a_refused_input_is_an_error_not_a_panic() {
    let device = host().device(0).autodiff();
    match TorchModule::load(&device, "no_such_module") {
        Err(Error::Host(m)) => assert!(m.contains("no_such_module::spec"), "{m}"),
        other => panic!("expected a host error, got {other:?}"),
    }
    let model = TorchModule::load(&device, "mlp").unwrap();
    let wrong = Tensor::<2>::zeros([2, 7], &device);
    match model.call(vec![wrong.into()], vec![]) {
        Err(Error::Host(m)) => assert!(m.contains("mlp.pt raised"), "{m}"),
        other => panic!("expected a host error, got {other:?}"),
    }
    // The session goes on.
    let y: Tensor<2> = model.forward(Tensor::<2>::zeros([1, 3], &device));
    assert_eq!(y.dims(), [1, 2]);
    assert!(matches!(
        TorchModule::load(&reference(), "mlp"),
        Err(Error::NotRemote(_))
    ));
}

/// Trains the hosted mlp alone on `device` for a few SGD steps on data scaled by `scale`; the
/// parameters it ends with.
fn train_mlp(device: Device, scale: f32) -> Vec<Vec<f32>> {
    let device = device.autodiff();
    let model = TorchModule::load(&device, "mlp").unwrap();
    let (x, target) = batch();
    let x = Tensor::<2>::from_data(x, &reference())
        .mul_scalar(scale)
        .into_data();
    let forward = |m: &TorchModule, x: Tensor<2>| -> Tensor<2> { m.forward(x) };
    let (model, _) = sgd(model, forward, (&x, &target), &device, 6, 0.3);
    parameter_values(&model)
}

/// The module's parameters as f32 values, in the training contract's order.
fn parameter_values(model: &TorchModule) -> Vec<Vec<f32>> {
    model
        .parameters()
        .into_iter()
        .map(|p| p.into_data().convert::<f32>().try_to_vec::<f32>().unwrap())
        .collect()
}

#[test]
fn two_sessions_training_one_hosted_module_at_once_do_not_interfere() {
    let spec = format!("mlp={}", module("mlp"));
    let host = TorchbridgeHost::spawn(&["--device", "cpu", "--device", "cpu", "--model", &spec]);
    let initial = parameter_values(&TorchModule::load(&host.device(0), "mlp").unwrap());
    let alone = [
        train_mlp(host.device(0), 1.0),
        train_mlp(host.device(0), -0.5),
    ];
    let together = std::thread::scope(|s| {
        let a = s.spawn(|| train_mlp(host.device(0), 1.0));
        let b = s.spawn(|| train_mlp(host.device(1), -0.5));
        [a.join().unwrap(), b.join().unwrap()]
    });
    // Bit for bit: each session saw only its own parameters.
    assert_eq!(alone, together);
    assert_ne!(alone[0], alone[1]);
    assert_ne!(alone[0], initial);
    // The hosted module's own weights did not move.
    let after = parameter_values(&TorchModule::load(&host.device(1), "mlp").unwrap());
    assert_eq!(after, initial);
}
