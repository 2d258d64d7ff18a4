//! Fine-tuning a Torch model hosted by torchbridge from a Burn program, with a Burn layer in front
//! of it: Burn's autodiff and Burn's optimizer train both. `TorchModule` (rust/torchbridge-burn)
//! reads the module's parameters from the host as Burn `Param`s; each forward runs the module on
//! the host (`classifier::functional`) and `loss.backward()` asks the host for its gradients
//! (`classifier::backward`, LibTorch's autograd), which flow on into the Burn layer.
//!
//! `examples/torch_finetune/run.sh` does everything with the installed wheel (`PYTHON`: its venv's
//! python): serve.py defines the MLP in PyTorch, serves it with `torchbridge.serve` (as
//! TorchScript, the format the host trains through) and runs this program against it. By hand,
//! with the `torchbridge` command:
//!
//!     python examples/torch_finetune/serve.py --export /tmp/mlp.pt
//!     torchbridge serve --model classifier=/tmp/mlp.pt &
//!     scripts/cargo run --release --manifest-path tests/interop/Cargo.toml --example torch_finetune
//!
//! `BURN_REMOTE_ADDRESS` overrides the address (default ws://127.0.0.1:3000); `TB_MODEL` the
//! module's name (default `classifier`, the NAME given to `--model`).

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::prelude::*;
use burn::tensor::remote::RemoteHost;
use torchbridge_burn::TorchModule;

/// A Burn layer, then the hosted Torch model ([batch, 3] -> [batch, 2] logits).
#[derive(Module, Debug)]
struct Classifier {
    features: Linear,
    torch: TorchModule,
}

impl Classifier {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.torch.forward(self.features.forward(x))
    }
}

/// 32 points in 3-D; the class is whether the first two coordinates sum to more than the third.
fn data(device: &Device) -> (Tensor<2>, Tensor<1, Int>) {
    let points: Vec<f32> = (0..96)
        .map(|i| ((i * 7919 % 113) as f32 / 56.5) - 1.0)
        .collect();
    let labels: Vec<i64> = points
        .chunks(3)
        .map(|p| i64::from(p[0] + p[1] > p[2]))
        .collect();
    (
        Tensor::from_data(TensorData::new(points, [32, 3]), device),
        Tensor::from_data(TensorData::new(labels, [32]), device),
    )
}

fn main() {
    let address =
        std::env::var("BURN_REMOTE_ADDRESS").unwrap_or_else(|_| "ws://127.0.0.1:3000".into());
    let name = std::env::var("TB_MODEL").unwrap_or_else(|_| "classifier".into());
    let device = Device::remote_options(&RemoteHost::websocket(&address))
        .init()
        .unwrap_or_else(|e| panic!("cannot reach a torchbridge host at {address}: {e:?}"))
        .autodiff();
    let torch = TorchModule::load(&device, &name)
        .unwrap_or_else(|e| panic!("cannot load the hosted module {name:?}: {e}"));
    println!(
        "hosted module \"{name}\": {} parameters {:?}",
        torch.parameter_shapes().len(),
        torch
            .parameter_shapes()
            .iter()
            .map(|s| s.to_vec())
            .collect::<Vec<_>>()
    );
    let mut model = Classifier {
        features: LinearConfig::new(3, 3).init(&device),
        torch,
    };
    let (x, y) = data(&device);
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let mut optim = AdamConfig::new().init();
    let mut losses = Vec::new();
    for step in 0..=40 {
        let logits = model.forward(x.clone());
        let loss = loss_fn.forward(logits.clone(), y.clone());
        let value: f32 = loss.clone().into_scalar();
        losses.push(value);
        if step % 10 == 0 {
            let predicted = logits.argmax(1).reshape([32]);
            let correct: i64 = predicted.equal(y.clone()).int().sum().into_scalar();
            println!("step {step:2}: loss {value:.4}, accuracy {correct}/32");
        }
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.05, model, grads);
    }
    assert!(
        losses[losses.len() - 1] < 0.7 * losses[0],
        "the loss did not go down: {losses:?}"
    );
    println!(
        "trained the Burn layer and the hosted Torch model together: loss {:.4} -> {:.4}",
        losses[0],
        losses[losses.len() - 1]
    );
}
