//! A Burn program that runs on a torchbridge host: start the host (`scripts/serve`), then
//!
//!     scripts/cargo run --release --manifest-path tests/interop/Cargo.toml --example hello_remote
//!
//! It builds a small MLP with burn-nn on the remote device, runs a forward pass, takes one
//! training step with Burn's autodiff, and compares with Burn's own CPU backend.
//! `BURN_REMOTE_ADDRESS` overrides the address (default ws://127.0.0.1:3000).

use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{GradientsParams, SgdConfig};
use burn::prelude::*;
use burn::tensor::remote::RemoteHost;

#[derive(Module, Debug)]
struct Mlp {
    hidden: Linear,
    out: Linear,
    relu: Relu,
}

impl Mlp {
    fn new(device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(4, 16).init(device),
            out: LinearConfig::new(16, 1).init(device),
            relu: Relu::new(),
        }
    }
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.out.forward(self.relu.forward(self.hidden.forward(x)))
    }
}

fn run(model: Mlp, device: &Device) -> (Vec<f32>, f32) {
    let model = model.to_device(device);
    let x = Tensor::<2>::from_data([[1.0f32, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, 2.0]], device);
    let y = Tensor::<2>::from_data([[1.0f32], [0.0]], device);
    let prediction = model.forward(x.clone());
    let loss = (prediction.clone() - y).powf_scalar(2.0).mean();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    let mut optim = SgdConfig::new().init();
    let model = optim.step(0.1, model, grads);
    let after = model.forward(x).into_data();
    (after.try_to_vec().unwrap(), loss.into_scalar())
}

fn main() {
    let address =
        std::env::var("BURN_REMOTE_ADDRESS").unwrap_or_else(|_| "ws://127.0.0.1:3000".into());
    let remote = Device::remote_options(&RemoteHost::websocket(&address))
        .init()
        .unwrap_or_else(|e| panic!("cannot reach a torchbridge host at {address}: {e:?}"))
        .autodiff();
    // The same initial weights on both sides: initialised once, then copied to each device.
    let cpu = Device::flex().autodiff();
    cpu.seed(7);
    let model = Mlp::new(&cpu);
    let (ours, our_loss) = run(model.clone(), &remote);
    let (reference, reference_loss) = run(model, &cpu);
    println!("torchbridge at {address}: loss {our_loss:.6}, prediction after one SGD step {ours:?}");
    println!("Burn's Flex backend:  loss {reference_loss:.6}, prediction after one SGD step {reference:?}");
}
