//! Workloads where kernels, not round trips, set the time (issue 38): the remote twins of
//! `bench/inprocess_kernels.cpp`, as Burn programs written with Burn's own modules. A ResNet basic
//! block at batch 32 (two 3×3 convolutions of 64 channels on 16×16, batch norm in inference, the
//! identity added back) and a post-norm transformer encoder layer at sequence length 256 (d 256,
//! 4 heads, feed-forward 1024). Each run is a few dozen ops whose convolutions, matmuls and
//! attention take milliseconds: LibTorch's kernels (oneDNN, MKL; cuDNN, cuBLAS on a GPU) against
//! Flex's. The shapes are those of the in-process pair, so that on a GPU `scripts/device-check`
//! can set our remote time beside PyTorch eager's for the same layer.

use burn::nn::transformer::{
    TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput,
};
use burn::nn::{BatchNorm, BatchNormConfig};

use super::*;

/// conv3×3-BN-ReLU-conv3×3-BN, plus the input, ReLU.
#[derive(Module, Debug)]
pub(super) struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm,
    conv2: Conv2d,
    bn2: BatchNorm,
}

impl BasicBlock {
    const C: usize = 64;
    pub(super) fn new(device: &Device) -> Self {
        let conv = || {
            Conv2dConfig::new([Self::C, Self::C], [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device)
        };
        let norm = || BatchNormConfig::new(Self::C).init(device);
        Self {
            conv1: conv(),
            bn1: norm(),
            conv2: conv(),
            bn2: norm(),
        }
    }
    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let h = relu(self.bn1.forward(self.conv1.forward(x.clone())));
        relu(self.bn2.forward(self.conv2.forward(h)) + x)
    }
}

/// One forward of the block on a [32, 64, 16, 16] batch.
pub(super) struct ResNetBlock {
    model: BasicBlock,
    x: Tensor<4>,
}
impl ResNetBlock {
    pub(super) fn new(device: &Device, model: &BasicBlock) -> Self {
        Self {
            model: model.clone().to_device(device),
            x: Tensor::from_data(input(&[32, BasicBlock::C, 16, 16], 30), device),
        }
    }
}
impl Workload for ResNetBlock {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, y) = time(|| self.model.forward(self.x.clone()).into_data());
        (s, Some(y))
    }
}

/// A one-layer post-norm encoder without dropout.
pub(super) fn encoder(device: &Device) -> TransformerEncoder {
    TransformerEncoderConfig::new(256, 1024, 4, 1)
        .with_dropout(0.0)
        .init(device)
}

/// One forward of the encoder layer on a [1, 256, 256] sequence.
pub(super) struct EncoderLayer {
    model: TransformerEncoder,
    x: Tensor<3>,
}
impl EncoderLayer {
    pub(super) fn new(device: &Device, model: &TransformerEncoder) -> Self {
        Self {
            model: model.clone().to_device(device),
            x: Tensor::from_data(input(&[1, 256, 256], 31), device),
        }
    }
}
impl Workload for EncoderLayer {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, y) = time(|| {
            self.model
                .forward(TransformerEncoderInput::new(self.x.clone()))
                .into_data()
        });
        (s, Some(y))
    }
}
