//! Inputs and autodiff helpers the conformance suites share (conformance_nn, and the 0.23 crate's
//! conformance_v6): tensors from the fixed generator (`harness::values`, the same on every device,
//! where Burn's RNG streams differ between backends) or from literal data.

use burn::prelude::*;
use burn::tensor::{Bool, Gradients, Int, TensorData};

use crate::harness::values;

/// A float tensor of `shape` with values in [-1, 1) keyed by `seed`.
pub fn t<const D: usize>(shape: [usize; D], seed: u64, device: &Device) -> Tensor<D> {
    let n = shape.iter().product();
    Tensor::from_data(TensorData::new(values(n, seed), shape), device)
}

/// Like `t`, scaled by `scale` (for activations' interesting ranges).
pub fn ts<const D: usize>(shape: [usize; D], seed: u64, scale: f32, device: &Device) -> Tensor<D> {
    let n = shape.iter().product();
    let v = values(n, seed).into_iter().map(|x| x * scale).collect::<Vec<_>>();
    Tensor::from_data(TensorData::new(v, shape), device)
}

pub fn floats<const D: usize>(data: Vec<f32>, shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(data, shape), device)
}

pub fn ints<const D: usize>(data: Vec<i64>, shape: [usize; D], device: &Device) -> Tensor<D, Int> {
    Tensor::from_data(TensorData::new(data, shape), device)
}

pub fn bools<const D: usize>(data: Vec<bool>, shape: [usize; D], device: &Device) -> Tensor<D, Bool> {
    Tensor::from_data(TensorData::new(data, shape), device)
}

/// The autodiff flavour of the device a program was handed.
pub fn ad(device: &Device) -> Device {
    device.clone().autodiff()
}

/// A leaf that tracks its gradient.
pub fn p<const D: usize>(shape: [usize; D], seed: u64, device: &Device) -> Tensor<D> {
    t(shape, seed, device).require_grad()
}

/// sum(y * w) for a fixed w: every output element gets a different upstream gradient.
pub fn loss<const D: usize>(y: Tensor<D>, seed: u64) -> Tensor<1> {
    let w = t(y.dims(), seed, &y.device());
    (y * w).sum()
}

/// The gradient of a tracked leaf.
pub fn g<const D: usize>(x: &Tensor<D>, grads: &Gradients) -> TensorData {
    x.grad(grads).expect("no gradient for a tracked leaf").into_data()
}

/// Max-pool indices as i64: the index dtype is the device's default int dtype, which Burn's remote
/// client sets to I64 and Flex to I32 (the client asks for it; the host honours it).
pub fn idx_data<const D: usize>(indices: Tensor<D, Int>) -> TensorData {
    indices.into_data().convert::<i64>()
}
