//! A Burn program that calls a Torch model hosted by torchbridge, between ordinary Burn ops:
//! Burn preprocessing (feature standardisation) -> a TorchScript module run by LibTorch on the
//! host -> a Burn loss (cross-entropy). The same program then runs on Burn's own CPU backend, with
//! the model's math written in Burn, to show the two agree.
//!
//! `examples/torchscript/run.sh` does everything with the installed wheel (`PYTHON`: its venv's
//! python): serve.py defines the module in PyTorch, serves it with `torchbridge.serve` and runs
//! this program against it. By hand, with the `torchbridge` command:
//!
//!     python examples/torchscript/serve.py --export /tmp/affine.pt
//!     torchbridge serve --model classifier=/tmp/affine.pt &
//!     scripts/cargo run --release --manifest-path tests/interop/Cargo.toml --example torchscript
//!
//! `BURN_REMOTE_ADDRESS` overrides the address (default ws://127.0.0.1:3000); `TB_MODEL` the
//! custom op id (default `classifier`, the NAME given to `--model`).

use burn::backend::{DispatchDevice, Remote};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::prelude::*;
use burn::tensor::DType;
use burn::tensor::remote::{CustomOpClient, RemoteHost};
use burn_ir::{CustomOpIr, TensorIr};

/// Runs the hosted module `name` on `x` ([batch, 3] -> [batch, 2] logits).
///
/// This is Burn's custom-op client API: the op travels as `OperationIr::Custom` with the inputs'
/// ids and the declared outputs (shape and dtype: what `torchbridge models` says the module
/// returns); the host runs the module's `forward` on the session's device and checks its result
/// against the declaration. Nothing leaves the remote device.
fn torch_model(name: &str, x: Tensor<2>) -> Tensor<2> {
    let device = x.device();
    let DispatchDevice::Remote(remote) = device.as_dispatch() else {
        panic!("a hosted model runs on a remote device");
    };
    let client = CustomOpClient::new(remote);
    let batch = x.dims()[0];
    let input = x.try_into_primitive::<Remote>().unwrap().into_ir();
    let logits = TensorIr::uninit(client.create_empty_handle(), Shape::from([batch, 2]), DType::F32);
    let mut outputs = client.register(CustomOpIr {
        id: name.to_string(),
        inputs: vec![input],
        outputs: vec![logits],
        scalars: vec![],
    });
    Tensor::from_primitive::<Remote>(outputs.remove(0))
}

/// The module's math in Burn (the weights of serve.py's `Affine`), for the reference run on
/// Burn's CPU backend.
fn same_model_in_burn(x: Tensor<2>) -> Tensor<2> {
    let device = x.device();
    let w = Tensor::<2>::from_data([[1.0f32, -1.0], [0.5, 2.0], [-2.0, 0.25]], &device);
    let b = Tensor::<1>::from_data([0.5f32, -1.0], &device);
    x.matmul(w) + b.unsqueeze::<2>()
}

fn program(device: &Device, model: &dyn Fn(Tensor<2>) -> Tensor<2>) -> (Vec<f32>, f32) {
    let features = Tensor::<2>::from_data(
        [[5.1f32, 3.5, 1.4], [4.9, 3.0, 1.4], [6.2, 3.4, 5.4], [5.9, 3.0, 5.1]],
        device,
    );
    let labels = Tensor::<1, Int>::from_data([0i64, 0, 1, 1], device);
    // Burn: standardise each feature.
    let mean = features.clone().mean_dim(0);
    let std = features.clone().var(0).add_scalar(1e-5).sqrt();
    let x = (features - mean) / std;
    // Torch: the hosted model.
    let logits = model(x);
    // Burn: the loss.
    let loss = CrossEntropyLossConfig::new().init(device).forward(logits.clone(), labels);
    (logits.into_data().try_to_vec::<f32>().unwrap(), loss.into_scalar())
}

fn main() {
    let address =
        std::env::var("BURN_REMOTE_ADDRESS").unwrap_or_else(|_| "ws://127.0.0.1:3000".into());
    let name = std::env::var("TB_MODEL").unwrap_or_else(|_| "classifier".into());
    let remote = Device::remote_options(&RemoteHost::websocket(&address))
        .init()
        .unwrap_or_else(|e| panic!("cannot reach a torchbridge host at {address}: {e:?}"));
    let (logits, loss) = program(&remote, &|x| torch_model(&name, x));
    let (ref_logits, ref_loss) = program(&Device::flex(), &same_model_in_burn);
    println!("torchbridge at {address}, model \"{name}\": loss {loss:.6}, logits {logits:?}");
    println!("Burn's Flex backend, same math:      loss {ref_loss:.6}, logits {ref_logits:?}");
    let worst = logits.iter().zip(&ref_logits).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst < 1e-4 && (loss - ref_loss).abs() < 1e-4, "the two runs disagree");
    println!("agree within {worst:e}");
}
