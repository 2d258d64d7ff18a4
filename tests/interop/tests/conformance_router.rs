//! Differential conformance through Burn's router client, driven directly through the backend
//! traits (`BackendRouter<RemoteChannel>`, what `burn_remote::RemoteBackend` is without `fusion`).
//!
//! The other conformance suites use the dispatch `Device`/`Tensor` API, which goes through Burn's
//! fusion client; that client decomposes activations, linear, layer_norm and friends before they
//! reach a host, so their IR leaves never arrive. Here each trait method reaches the host as the
//! leaf the router emits for it (burn-router 0.22.1, src/ops/*.rs). Every case is one function
//! generic over the backend, run on the device under test (see `TB_TARGET`) and on Flex in-process,
//! every output compared.

#[cfg(not(burn_023))]
use burn_backend::distributed::DistributedOps;
use burn_backend::distributed::ReduceOperation;
#[cfg(burn_023)]
use burn_backend::ops::CollectiveOps;
use burn_backend::ops::{ConvTransposeOptions, FloatTensorOps, IntTensorOps, UnfoldOptions};
use burn_backend::tensor::{BoolTensor, FloatTensor, IntTensor};
use burn_backend::{
    Backend, BoolStore, DType, Distribution, IntDType, Scalar, Shape, TensorData, TensorMetadata,
};
#[cfg(not(burn_023))]
use burn_backend::DeviceId;
use burn_flex::Flex;
use torchbridge_interop::harness::{
    HostProcess, Router, Target, check_backend, compare, target, values,
};

// ---------------------------------------------------------------------------------------------
// Inputs and reads

/// A float tensor of `shape` with values in [-scale, scale) keyed by `seed`.
fn fs<B: Backend>(shape: &[usize], seed: u64, scale: f32, device: &B::Device) -> FloatTensor<B> {
    let n = shape.iter().product();
    let v: Vec<f32> = values(n, seed).into_iter().map(|x| x * scale).collect();
    B::float_from_data(TensorData::new(v, shape.to_vec()), device)
}

/// A float tensor of `shape` with values in [-1, 1) keyed by `seed`.
fn f<B: Backend>(shape: &[usize], seed: u64, device: &B::Device) -> FloatTensor<B> {
    fs::<B>(shape, seed, 1.0, device)
}

/// Strictly positive values in [0.5, 1.5) (variances, scales).
fn pos<B: Backend>(shape: &[usize], seed: u64, device: &B::Device) -> FloatTensor<B> {
    let n = shape.iter().product();
    let v: Vec<f32> = values(n, seed).into_iter().map(|x| x * 0.5 + 1.0).collect();
    B::float_from_data(TensorData::new(v, shape.to_vec()), device)
}

fn fv<B: Backend>(data: Vec<f32>, shape: &[usize], device: &B::Device) -> FloatTensor<B> {
    B::float_from_data(TensorData::new(data, shape.to_vec()), device)
}

fn iv<B: Backend>(data: Vec<i64>, shape: &[usize], device: &B::Device) -> IntTensor<B> {
    B::int_from_data(TensorData::new(data, shape.to_vec()), device)
}

fn bv<B: Backend>(data: Vec<bool>, shape: &[usize], device: &B::Device) -> BoolTensor<B> {
    B::bool_from_data(TensorData::new(data, shape.to_vec()), device)
}

/// An upstream gradient shaped like `like`.
fn grad_like<B: Backend>(like: &FloatTensor<B>, seed: u64, device: &B::Device) -> FloatTensor<B> {
    f::<B>(&like.shape(), seed, device)
}

fn rf<B: Backend>(t: FloatTensor<B>) -> TensorData {
    burn_std::future::block_on(B::float_into_data(t)).expect("reading a float tensor")
}

fn ri<B: Backend>(t: IntTensor<B>) -> TensorData {
    burn_std::future::block_on(B::int_into_data(t)).expect("reading an int tensor")
}

fn rb<B: Backend>(t: BoolTensor<B>) -> TensorData {
    burn_std::future::block_on(B::bool_into_data(t)).expect("reading a bool tensor")
}

const NATIVE: BoolStore = BoolStore::Native;

// ---------------------------------------------------------------------------------------------
// Cases: one function per group of leaves, generic over the backend.

mod cases {
    use super::*;

    // Activation.Relu, Activation.ReluBackward (output-based: the grad passes where output > 0).
    pub fn act_relu<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = f::<B>(&[2, 3, 4], 1, d);
        let y = B::relu(x.clone());
        let g = grad_like::<B>(&x, 2, d);
        let dx = B::relu_backward(y.clone(), g);
        // Rank 0 and an exact zero (relu(0) = 0, and no gradient flows through it).
        let z = fv::<B>(vec![0.0, -0.0, 1.5, -2.0], &[4], d);
        let dz = B::relu_backward(B::relu(z.clone()), fv::<B>(vec![1.0; 4], &[4], d));
        let s = B::relu(fv::<B>(vec![-3.0], &[], d));
        vec![
            rf::<B>(y),
            rf::<B>(dx),
            rf::<B>(B::relu(z)),
            rf::<B>(dz),
            rf::<B>(s),
        ]
    }

    // Activation.LeakyRelu.
    pub fn act_leaky_relu<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[3, 5], 3, 4.0, d);
        vec![
            rf::<B>(B::leaky_relu(x.clone(), Scalar::Float(0.01))),
            rf::<B>(B::leaky_relu(x.clone(), Scalar::Float(0.3))),
            // A slope of 0 is relu; a slope above 1 is still applied to negatives only.
            rf::<B>(B::leaky_relu(x.clone(), Scalar::Float(0.0))),
            rf::<B>(B::leaky_relu(x, Scalar::Float(2.5))),
        ]
    }

    // Activation.PRelu: alpha broadcasts against the input (a per-channel [1, C, 1], a single
    // [1, 1, 1]; the router's IR builder wants alpha of the input's rank).
    pub fn act_prelu<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[2, 3, 4], 4, 2.0, d);
        let per_channel = fv::<B>(vec![0.1, 0.25, -0.5], &[1, 3, 1], d);
        let same_shape = f::<B>(&[2, 3, 4], 5, d);
        let single = fv::<B>(vec![0.2], &[1, 1, 1], d);
        vec![
            rf::<B>(B::prelu(x.clone(), per_channel)),
            rf::<B>(B::prelu(x.clone(), same_shape)),
            rf::<B>(B::prelu(x, single)),
        ]
    }

    // Activation.Gelu, Activation.GeluBackward (gradient w.r.t. the input x).
    pub fn act_gelu<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[4, 6], 6, 4.0, d);
        let g = grad_like::<B>(&x, 7, d);
        vec![rf::<B>(B::gelu(x.clone())), rf::<B>(B::gelu_backward(x, g))]
    }

    // Activation.Sigmoid, Activation.SigmoidBackward (output-based), with saturating inputs.
    pub fn act_sigmoid<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[3, 4], 8, 6.0, d);
        let big = fv::<B>(vec![-100.0, -20.0, 0.0, 20.0, 100.0], &[5], d);
        let y = B::sigmoid(x.clone());
        let g = grad_like::<B>(&x, 9, d);
        let dx = B::sigmoid_backward(y.clone(), g);
        vec![rf::<B>(y), rf::<B>(dx), rf::<B>(B::sigmoid(big))]
    }

    // Activation.HardSigmoid: clamp(alpha * x + beta, 0, 1), both clamps hit.
    pub fn act_hard_sigmoid<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[4, 5], 10, 5.0, d);
        vec![
            rf::<B>(B::hard_sigmoid(
                x.clone(),
                Scalar::Float(0.2),
                Scalar::Float(0.5),
            )),
            rf::<B>(B::hard_sigmoid(
                x,
                Scalar::Float(1.0 / 6.0),
                Scalar::Float(0.5),
            )),
        ]
    }

    // Activation.LogSigmoid, Activation.LogSigmoidBackward (gradient w.r.t. the input x), with
    // large magnitudes where a naive log(sigmoid(x)) loses everything.
    pub fn act_log_sigmoid<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[3, 4], 11, 5.0, d);
        let g = grad_like::<B>(&x, 12, d);
        let big = fv::<B>(vec![-120.0, -30.0, 0.0, 30.0, 120.0], &[5], d);
        let gb = fv::<B>(vec![1.0; 5], &[5], d);
        vec![
            rf::<B>(B::log_sigmoid(x.clone())),
            rf::<B>(B::log_sigmoid_backward(x, g)),
            rf::<B>(B::log_sigmoid(big.clone())),
            rf::<B>(B::log_sigmoid_backward(big, gb)),
        ]
    }

    // Activation.Softmax, Activation.LogSoftmax, Activation.Softmin over every dim, a size-1 dim
    // and rank 1.
    pub fn act_softmax<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[2, 3, 4], 13, 3.0, d);
        let mut out = Vec::new();
        for dim in 0..3 {
            out.push(rf::<B>(B::softmax(x.clone(), dim)));
            out.push(rf::<B>(B::log_softmax(x.clone(), dim)));
            out.push(rf::<B>(B::softmin(x.clone(), dim)));
        }
        let one = f::<B>(&[3, 1], 14, d);
        out.push(rf::<B>(B::softmax(one.clone(), 1)));
        out.push(rf::<B>(B::log_softmax(one.clone(), 1)));
        out.push(rf::<B>(B::softmin(one, 1)));
        let v = fv::<B>(vec![1000.0, 0.0, -1000.0, 5.0], &[4], d);
        out.push(rf::<B>(B::softmax(v.clone(), 0)));
        out.push(rf::<B>(B::log_softmax(v.clone(), 0)));
        out.push(rf::<B>(B::softmin(v, 0)));
        out
    }

    // Module.Linear (with and without bias, rank 2 and 3 inputs), Module.LinearXBackward,
    // Module.LinearWeightBackward, Module.LinearBiasBackward. Weights are [d_in, d_out].
    pub fn module_linear<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = f::<B>(&[2, 3, 4], 15, d);
        let w = f::<B>(&[4, 5], 16, d);
        let b = f::<B>(&[5], 17, d);
        let y = B::linear(x.clone(), w.clone(), Some(b.clone()));
        let x2 = f::<B>(&[6, 4], 18, d);
        let y2 = B::linear(x2, w.clone(), None);
        let g = grad_like::<B>(&y, 19, d);
        vec![
            rf::<B>(y),
            rf::<B>(y2),
            rf::<B>(B::linear_x_backward(w, g.clone())),
            rf::<B>(B::linear_weight_backward(x, g.clone())),
            rf::<B>(B::linear_bias_backward(g)),
        ]
    }

    // Module.LayerNorm over the last dim, with and without beta.
    pub fn module_layer_norm<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[2, 3, 6], 20, 3.0, d);
        let gamma = pos::<B>(&[6], 21, d);
        let beta = f::<B>(&[6], 22, d);
        vec![
            rf::<B>(B::layer_norm(x.clone(), gamma.clone(), Some(beta), 1e-5)),
            rf::<B>(B::layer_norm(x, gamma, None, 1e-3)),
        ]
    }

    // Module.BatchNorm (inference form: given running mean and variance) on rank 3 and 4 inputs.
    pub fn module_batch_norm<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let gamma = pos::<B>(&[3], 23, d);
        let beta = f::<B>(&[3], 24, d);
        let mean = f::<B>(&[3], 25, d);
        let var = pos::<B>(&[3], 26, d);
        let x4 = fs::<B>(&[2, 3, 4, 5], 27, 2.0, d);
        let x3 = fs::<B>(&[2, 3, 4], 28, 2.0, d);
        vec![
            rf::<B>(B::batch_norm(
                x4,
                gamma.clone(),
                beta.clone(),
                mean.clone(),
                var.clone(),
                1e-5,
            )),
            rf::<B>(B::batch_norm(x3, gamma, beta, mean, var, 1e-1)),
        ]
    }

    // Module.Embedding, Module.EmbeddingBackward (repeated indices accumulate).
    pub fn module_embedding<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let weights = f::<B>(&[5, 3], 29, d);
        let indices = iv::<B>(vec![0, 4, 2, 2, 4, 4], &[2, 3], d);
        let y = B::embedding(weights.clone(), indices.clone());
        let g = grad_like::<B>(&y, 30, d);
        vec![
            rf::<B>(y),
            rf::<B>(B::embedding_backward(weights, g, indices)),
        ]
    }

    // Module.Unfold4d: stride, padding and dilation, and the plain case.
    pub fn module_unfold4d<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = f::<B>(&[2, 2, 5, 6], 31, d);
        vec![
            rf::<B>(B::unfold4d(
                x.clone(),
                [2, 3],
                UnfoldOptions::new([1, 2], [1, 0], [1, 1]),
            )),
            rf::<B>(B::unfold4d(
                x.clone(),
                [3, 2],
                UnfoldOptions::new([2, 1], [0, 1], [2, 1]),
            )),
            rf::<B>(B::unfold4d(
                x,
                [1, 1],
                UnfoldOptions::new([1, 1], [0, 0], [1, 1]),
            )),
        ]
    }

    // Module.ConvTranspose1dWeightBackward, Module.ConvTranspose1dBiasBackward, with groups,
    // stride, padding, output padding and dilation.
    pub fn module_conv_transpose1d_backward<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = f::<B>(&[2, 4, 5], 32, d);
        let w = f::<B>(&[4, 3, 3], 33, d); // [c_in, c_out / groups, k]
        let b = f::<B>(&[6], 34, d);
        let opts = ConvTransposeOptions::new([2], [1], [1], [2], 2);
        let y = B::conv_transpose1d(x.clone(), w.clone(), Some(b.clone()), opts.clone());
        let g = grad_like::<B>(&y, 35, d);
        vec![
            rf::<B>(B::conv_transpose1d_weight_backward(
                x.clone(),
                w,
                g.clone(),
                opts,
            )),
            rf::<B>(B::conv_transpose1d_bias_backward(x, b, g)),
        ]
    }

    // Module.ConvTranspose2dWeightBackward, Module.ConvTranspose2dBiasBackward.
    pub fn module_conv_transpose2d_backward<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = f::<B>(&[2, 2, 3, 4], 36, d);
        let w = f::<B>(&[2, 3, 2, 3], 37, d);
        let b = f::<B>(&[3], 38, d);
        let opts = ConvTransposeOptions::new([2, 1], [0, 1], [1, 0], [1, 2], 1);
        let y = B::conv_transpose2d(x.clone(), w.clone(), Some(b.clone()), opts.clone());
        let g = grad_like::<B>(&y, 39, d);
        vec![
            rf::<B>(B::conv_transpose2d_weight_backward(
                x.clone(),
                w,
                g.clone(),
                opts,
            )),
            rf::<B>(B::conv_transpose2d_bias_backward(x, b, g)),
        ]
    }

    // Module.ConvTranspose3dWeightBackward, Module.ConvTranspose3dBiasBackward.
    pub fn module_conv_transpose3d_backward<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = f::<B>(&[1, 2, 3, 2, 3], 40, d);
        let w = f::<B>(&[2, 2, 2, 2, 2], 41, d);
        let b = f::<B>(&[2], 42, d);
        let opts = ConvTransposeOptions::new([1, 2, 1], [1, 0, 0], [0, 1, 0], [1, 1, 2], 1);
        let y = B::conv_transpose3d(x.clone(), w.clone(), Some(b.clone()), opts.clone());
        let g = grad_like::<B>(&y, 43, d);
        vec![
            rf::<B>(B::conv_transpose3d_weight_backward(
                x.clone(),
                w,
                g.clone(),
                opts,
            )),
            rf::<B>(B::conv_transpose3d_bias_backward(x, b, g)),
        ]
    }

    // NumericFloat.Neg, NumericFloat.Sign (zeros and negative zero), NumericFloat.ClampMin,
    // NumericFloat.ClampMax.
    pub fn float_neg_sign_clamp<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[3, 4], 44, 3.0, d);
        let z = fv::<B>(vec![0.0, -0.0, 2.5, -7.0, 1e-30], &[5], d);
        let s = fv::<B>(vec![-1.5], &[], d);
        vec![
            rf::<B>(B::float_neg(x.clone())),
            rf::<B>(B::float_neg(s.clone())),
            rf::<B>(B::float_sign(x.clone())),
            rf::<B>(B::float_sign(z)),
            rf::<B>(B::float_clamp_min(x.clone(), Scalar::Float(-0.5))),
            rf::<B>(B::float_clamp_max(x.clone(), Scalar::Float(0.25))),
            rf::<B>(B::float_clamp_min(s.clone(), Scalar::Float(0.0))),
            rf::<B>(B::float_clamp_max(s, Scalar::Float(-2.0))),
        ]
    }

    // NumericFloat.Sort, NumericFloat.SortWithIndices, NumericFloat.ArgSort, both directions,
    // every dim (distinct values: indices of ties are not specified).
    pub fn float_sort<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = f::<B>(&[3, 4, 5], 45, d);
        let mut out = Vec::new();
        for dim in 0..3 {
            for descending in [false, true] {
                out.push(rf::<B>(B::float_sort(x.clone(), dim, descending)));
                let (v, i) = B::float_sort_with_indices(x.clone(), dim, descending, IntDType::I64);
                out.push(rf::<B>(v));
                out.push(ri::<B>(i));
                out.push(ri::<B>(B::float_argsort(
                    x.clone(),
                    dim,
                    descending,
                    IntDType::I64,
                )));
            }
        }
        // Ties and infinities in values-only sort (order of equal values does not show).
        let t = fv::<B>(
            vec![2.0, -1.0, 2.0, f32::INFINITY, -1.0, f32::NEG_INFINITY],
            &[6],
            d,
        );
        out.push(rf::<B>(B::float_sort(t.clone(), 0, false)));
        out.push(rf::<B>(B::float_sort(t, 0, true)));
        out
    }

    // NumericFloat.PowiScalar (exponents outside {0, 1, 2, -1, -2}, which Burn's default rewrites
    // to mul/recip). NumericFloat.Powi: see `float_powi_tensor_exponent`.
    pub fn float_powi_scalar<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fs::<B>(&[2, 4], 46, 2.0, d);
        vec![
            rf::<B>(B::float_powi_scalar(x.clone(), Scalar::Int(3))),
            rf::<B>(B::float_powi_scalar(x.clone(), Scalar::Int(-3))),
            rf::<B>(B::float_powi_scalar(x, Scalar::Int(5))),
        ]
    }

    // BaseFloat.NotEqual, BaseFloat.NotEqualElem (with NaN, which is unequal to everything).
    pub fn float_not_equal<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let a = fv::<B>(vec![1.0, 2.0, f32::NAN, 0.0, -0.0, 5.0], &[2, 3], d);
        let b = fv::<B>(vec![1.0, 3.0, f32::NAN, -0.0, 0.0, 4.0], &[2, 3], d);
        let row = fv::<B>(vec![1.0, 2.0, 3.0], &[1, 3], d);
        vec![
            rb::<B>(B::float_not_equal(a.clone(), b, NATIVE)),
            rb::<B>(B::float_not_equal(a.clone(), row, NATIVE)),
            rb::<B>(B::float_not_equal_elem(
                a.clone(),
                Scalar::Float(2.0),
                NATIVE,
            )),
            rb::<B>(B::float_not_equal_elem(a, Scalar::Float(0.0), NATIVE)),
        ]
    }

    // NumericInt.Neg, NumericInt.Sign, NumericInt.ClampMin, NumericInt.ClampMax.
    pub fn int_neg_sign_clamp<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = iv::<B>(vec![-7, -1, 0, 1, 3, 100, -100, 0], &[2, 4], d);
        let s = iv::<B>(vec![-4], &[], d);
        vec![
            ri::<B>(B::int_neg(x.clone())),
            ri::<B>(B::int_neg(s.clone())),
            ri::<B>(B::int_sign(x.clone())),
            ri::<B>(B::int_clamp_min(x.clone(), Scalar::Int(-1))),
            ri::<B>(B::int_clamp_max(x, Scalar::Int(2))),
            ri::<B>(B::int_clamp_max(s, Scalar::Int(-5))),
        ]
    }

    // NumericInt.Sort, NumericInt.SortWithIndices, NumericInt.ArgSort: both directions, both dims;
    // ties only in the values-only sort.
    pub fn int_sort<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = iv::<B>(vec![5, -3, 9, 0, 12, -8, 7, 1, -1, 4, 2, 6], &[3, 4], d);
        let mut out = Vec::new();
        for dim in 0..2 {
            for descending in [false, true] {
                out.push(ri::<B>(B::int_sort(x.clone(), dim, descending)));
                let (v, i) = B::int_sort_with_indices(x.clone(), dim, descending);
                out.push(ri::<B>(v));
                out.push(ri::<B>(i));
                out.push(ri::<B>(B::int_argsort(x.clone(), dim, descending)));
            }
        }
        let t = iv::<B>(vec![3, 1, 3, -2, 1, 3], &[6], d);
        out.push(ri::<B>(B::int_sort(t.clone(), 0, false)));
        out.push(ri::<B>(B::int_sort(t, 0, true)));
        out
    }

    // NumericInt.Powi, NumericInt.PowiScalar (exponents outside {0, 1, 2}).
    pub fn int_powi<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = iv::<B>(vec![-3, -2, -1, 0, 1, 2, 3, 4], &[2, 4], d);
        let e = iv::<B>(vec![3, 2, 5, 4, 7, 0, 1, 3], &[2, 4], d);
        vec![
            ri::<B>(B::int_powi(x.clone(), e)),
            ri::<B>(B::int_powi_scalar(x.clone(), Scalar::Int(3))),
            ri::<B>(B::int_powi_scalar(x, Scalar::Int(5))),
        ]
    }

    // BaseInt.NotEqual (same shape and broadcast), BaseInt.NotEqualElem.
    pub fn int_not_equal<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let a = iv::<B>(vec![1, 2, 3, -4, 5, 6], &[2, 3], d);
        let b = iv::<B>(vec![1, 0, 3, 4, 5, -6], &[2, 3], d);
        let col = iv::<B>(vec![2, 5], &[2, 1], d);
        vec![
            rb::<B>(B::int_not_equal(a.clone(), b, NATIVE)),
            rb::<B>(B::int_not_equal(a.clone(), col, NATIVE)),
            rb::<B>(B::int_not_equal_elem(a, Scalar::Int(3), NATIVE)),
        ]
    }

    // Bool.Xor, BaseBool.NotEqual, BaseBool.NotEqualElem.
    pub fn bool_xor_not_equal<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let a = bv::<B>(vec![true, true, false, false, true, false], &[2, 3], d);
        let b = bv::<B>(vec![true, false, true, false, false, false], &[2, 3], d);
        let row = bv::<B>(vec![true, false, true], &[1, 3], d);
        vec![
            rb::<B>(B::bool_xor(a.clone(), b.clone())),
            rb::<B>(B::bool_xor(a.clone(), row.clone())),
            rb::<B>(B::bool_not_equal(a.clone(), b)),
            rb::<B>(B::bool_not_equal(a.clone(), row)),
            rb::<B>(B::bool_not_equal_elem(a.clone(), Scalar::Bool(true))),
            rb::<B>(B::bool_not_equal_elem(a, Scalar::Bool(false))),
        ]
    }
    // Empty tensors through a leaf of each family: shapes must survive, nothing may fail.
    pub fn empty_tensors<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        let x = fv::<B>(vec![], &[0, 4], d);
        let i = iv::<B>(vec![], &[3, 0], d);
        let b = bv::<B>(vec![], &[0], d);
        let w = f::<B>(&[4, 2], 60, d);
        vec![
            rf::<B>(B::relu(x.clone())),
            rf::<B>(B::sigmoid(x.clone())),
            rf::<B>(B::softmax(x.clone(), 1)),
            rf::<B>(B::float_neg(x.clone())),
            rf::<B>(B::float_sort(x.clone(), 0, false)),
            rf::<B>(B::linear(x.clone(), w, None)),
            rb::<B>(B::float_not_equal_elem(x, Scalar::Float(1.0), NATIVE)),
            ri::<B>(B::int_sign(i.clone())),
            ri::<B>(B::int_sort(i, 1, true)),
            rb::<B>(B::bool_xor(b.clone(), b)),
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// One #[test] per case.

macro_rules! router_cases {
    ($($(#[$meta:meta])* $name:ident: $tolerance:expr;)*) => {
        $(
            $(#[$meta])*
            #[test]
            fn $name() {
                check_backend(cases::$name::<Router>, cases::$name::<Flex>, $tolerance);
            }
        )*
    };
}

router_cases! {
    act_relu: 1e-6;
    act_leaky_relu: 1e-6;
    act_prelu: 1e-6;
    act_gelu: 1e-4;
    act_sigmoid: 1e-5;
    act_hard_sigmoid: 1e-6;
    act_log_sigmoid: 1e-5;
    act_softmax: 1e-5;
    module_linear: 1e-5;
    module_layer_norm: 1e-4;
    module_batch_norm: 1e-5;
    module_embedding: 1e-6;
    module_unfold4d: 1e-6;
    module_conv_transpose1d_backward: 1e-4;
    module_conv_transpose2d_backward: 1e-4;
    module_conv_transpose3d_backward: 1e-4;
    float_neg_sign_clamp: 0.0;
    float_sort: 0.0;
    float_powi_scalar: 1e-5;
    float_not_equal: 0.0;
    int_neg_sign_clamp: 0.0;
    int_sort: 0.0;
    int_powi: 0.0;
    int_not_equal: 0.0;
    bool_xor_not_equal: 0.0;
    empty_tensors: 0.0;
}

// ---------------------------------------------------------------------------------------------
// Cases that cannot compare values with Flex.

/// NumericInt.IntRandom: Burn's RNG streams differ between devices, so check what is specified:
/// shape, dtype and the range of a uniform distribution (both bounds reachable in 4096 draws).
#[test]
fn int_random() {
    let fresh = matches!(target(), Target::Burn).then(|| HostProcess::spawn_reference(&[]));
    let host = fresh
        .as_ref()
        .unwrap_or_else(|| HostProcess::shared_target());
    let device = host.router_device(0);
    for dtype in [IntDType::I64, IntDType::I32] {
        let t = Router::int_random(
            Shape::new([64, 64]),
            Distribution::Uniform(-3.0, 4.0),
            &device,
            dtype,
        );
        let data = ri::<Router>(t);
        assert_eq!(data.dtype(), DType::from(dtype), "dtype");
        assert_eq!(data.shape().to_vec(), vec![64, 64], "shape");
        let v: Vec<i64> = data.convert::<i64>().try_to_vec::<i64>().unwrap();
        assert!(
            v.iter().all(|x| (-3..4).contains(x)),
            "values outside [-3, 4): {v:?}"
        );
        assert_eq!(v.iter().min(), Some(&-3), "lowest value never drawn");
        assert_eq!(v.iter().max(), Some(&3), "highest value never drawn");
    }
}

/// Distributed.AllReduce and Distributed.SyncCollective (Burn 0.22.1): a two-device host; each device's session
/// contributes its tensor to an all-reduce over both (devices named by their position on the host,
/// as Burn's server resolves them), then resolves it (SyncCollective). Both must read the sum (or
/// the mean) of the contributions, compared with Flex adding them in-process.
#[cfg(not(burn_023))]
#[test]
fn distributed_all_reduce() {
    let host = match target() {
        Target::Torchbridge => HostProcess::spawn(&["--device", "cpu", "--device", "cpu"]),
        Target::Burn => HostProcess::spawn_reference(&["--devices", "2"]),
    };
    let devices = [host.router_device(0), host.router_device(1)];
    // A Burn program names the devices of a collective by their ids; the remote client rewrites
    // each to its position on the host.
    let ids: Vec<DeviceId> = devices
        .iter()
        .map(burn_std::device::Device::to_id)
        .collect();
    let flex = burn_flex::FlexDevice::default();
    for (op, seed) in [(ReduceOperation::Sum, 50), (ReduceOperation::Mean, 52)] {
        // Both contributions are registered before either is read: each session's all-reduce waits
        // for the other, so the reads run on two threads.
        let outs: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(i, device)| {
                let x = f::<Router>(&[2, 3], seed + i as u64, device);
                Router::all_reduce(x, op, ids.clone()).resolve()
            })
            .collect();
        let reads: Vec<TensorData> = std::thread::scope(|s| {
            let handles: Vec<_> = outs
                .into_iter()
                .map(|t| s.spawn(move || rf::<Router>(t)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("read thread"))
                .collect()
        });
        let sum = Flex::float_add(
            f::<Flex>(&[2, 3], seed, &flex),
            f::<Flex>(&[2, 3], seed + 1, &flex),
        );
        let expected = match op {
            ReduceOperation::Sum => sum,
            ReduceOperation::Mean => Flex::float_div_scalar(sum, Scalar::Float(2.0)),
        };
        let expected = rf::<Flex>(expected);
        for (i, actual) in reads.iter().enumerate() {
            if let Err(why) = compare(actual, &expected, 1e-6) {
                panic!("{op:?}, device {i} ({:?} target): {why}", target());
            }
        }
    }
}

/// Task::AllReduceLocal (Burn 0.23): a two-device host; the client's `float_all_reduce` over one
/// tensor per device sends each member's part (one random collective id, the members' sessions)
/// to the host, which reduces them across the two sessions. Every member must read the sum (or
/// the mean) of the contributions, compared with Flex adding them in-process; on both devices the
/// bits must be the same.
#[cfg(burn_023)]
#[test]
fn distributed_all_reduce_local() {
    let host = match target() {
        Target::Torchbridge => HostProcess::spawn(&["--device", "cpu", "--device", "cpu"]),
        Target::Burn => HostProcess::spawn_reference(&["--devices", "2"]),
    };
    let devices = [host.router_device(0), host.router_device(1)];
    let flex = burn_flex::FlexDevice::default();
    for (op, seed) in [(ReduceOperation::Sum, 50), (ReduceOperation::Mean, 52)] {
        let parts: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(i, device)| f::<Router>(&[2, 3], seed + i as u64, device))
            .collect();
        let outs = Router::float_all_reduce(parts, op);
        assert_eq!(outs.len(), 2, "one result per member");
        let reads: Vec<TensorData> = outs.into_iter().map(rf::<Router>).collect();
        let expected = rf::<Flex>(Flex::float_all_reduce(
            vec![f::<Flex>(&[2, 3], seed, &flex), f::<Flex>(&[2, 3], seed + 1, &flex)],
            op,
        )
        .remove(0));
        for (i, actual) in reads.iter().enumerate() {
            if let Err(why) = compare(actual, &expected, 1e-6) {
                panic!("{op:?}, device {i} ({:?} target): {why}", target());
            }
        }
        assert_eq!(reads[0].as_bytes(), reads[1].as_bytes(), "{op:?}: members disagree");
    }
}

/// NumericFloat.Powi. The router's `float_powi(lhs, rhs: IntTensor)` cannot send an int exponent:
/// burn-ir's `BinaryOpIr::create` asserts equal dtypes and panics (`DTypeMismatch`) before anything
/// is sent, and Burn's tensor API sends float `powi` as Powf. The one Powi the router can emit has
/// an exponent tensor of the base's float dtype (a router int primitive is the same type as a float
/// one), which Burn's interpreter then hands to the backend's `float_powi` as its int operand. Our
/// host must read it as integer powers of integer-valued exponents: compared with Flex's powf.
#[test]
fn float_powi_tensor_exponent() {
    let fresh = matches!(target(), Target::Burn).then(|| HostProcess::spawn_reference(&[]));
    let host = fresh
        .as_ref()
        .unwrap_or_else(|| HostProcess::shared_target());
    let device = host.router_device(0);
    let exponents = vec![0.0f32, 1.0, 2.0, 3.0, -1.0, -2.0, 4.0, 5.0];
    let x = fs::<Router>(&[2, 4], 46, 2.0, &device);
    let e = fv::<Router>(exponents.clone(), &[2, 4], &device);
    let actual = rf::<Router>(Router::float_powi(x, e));
    let flex = burn_flex::FlexDevice::default();
    let expected = rf::<Flex>(Flex::float_powf(
        fs::<Flex>(&[2, 4], 46, 2.0, &flex),
        fv::<Flex>(exponents, &[2, 4], &flex),
    ));
    if let Err(why) = compare(&actual, &expected, 1e-5) {
        panic!("{:?} target: {why}", target());
    }
}
