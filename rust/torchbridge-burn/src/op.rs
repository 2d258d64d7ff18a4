//! The contract's ops as Burn custom ops, and `NAME::functional` as an op Burn's autodiff knows.
//!
//! burn-autodiff records ops with one float output and a fixed number of parents
//! (`Backward<B, N>`). A module's outputs are therefore flattened and concatenated into one
//! tensor for the recorded op and sliced apart afterwards with differentiable backend ops, and the
//! arity is picked from 1..=32 tensors (forward's inputs plus the parameters).

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::ops::FloatTensorOps;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Remote, TensorMetadata};
use burn::tensor::{DType, Shape, Slice};
use burn_ir::{CustomOpIr, ScalarIr, TensorIr};
use burn_remote::{CustomOpClient, RemoteDevice};

/// A float tensor on the remote device.
pub(crate) type Prim = FloatTensor<Remote>;
/// A float tensor on the remote device's autodiff flavour.
pub(crate) type AdPrim = FloatTensor<Autodiff<Remote>>;

/// Ships `OperationIr::Custom` to `device`'s host.
pub(crate) fn call(
    device: &RemoteDevice,
    id: &str,
    inputs: Vec<Prim>,
    outputs: &[(Shape, DType)],
    scalars: Vec<ScalarIr>,
) -> Vec<Prim> {
    let client = CustomOpClient::new(device);
    let outputs = outputs
        .iter()
        .map(|(shape, dtype)| TensorIr::uninit(client.create_empty_handle(), shape.clone(), *dtype))
        .collect();
    client.register(CustomOpIr {
        id: id.to_string(),
        inputs: inputs.into_iter().map(|t| t.into_ir()).collect(),
        outputs,
        scalars,
    })
}

fn numel(shape: &Shape) -> usize {
    shape.iter().product()
}

/// All outputs flattened and concatenated (one output per recorded op).
fn pack(outputs: Vec<Prim>, shapes: &[Shape]) -> Prim {
    if outputs.len() == 1 {
        let n = numel(&shapes[0]);
        return Remote::float_reshape(outputs.into_iter().next().unwrap(), Shape::from(vec![n]));
    }
    let flat = outputs
        .into_iter()
        .zip(shapes)
        .map(|(t, s)| Remote::float_reshape(t, Shape::from(vec![numel(s)])))
        .collect();
    Remote::float_cat(flat, 0)
}

/// The inverse of `pack`, on any backend: on `Autodiff<Remote>` the slices are recorded, so the
/// outputs' gradients flow back into the packed tensor.
fn unpack<B: burn::backend::Backend>(
    packed: FloatTensor<B>,
    shapes: &[Shape],
) -> Vec<FloatTensor<B>> {
    let mut at = 0;
    shapes
        .iter()
        .map(|s| {
            let n = numel(s);
            let part = B::float_slice(packed.clone(), &[Slice::from(at..at + n)]);
            at += n;
            B::float_reshape(part, s.clone())
        })
        .collect()
}

#[derive(Clone, Debug)]
struct State {
    device: RemoteDevice,
    name: String,
    scalars: Vec<ScalarIr>,
    // Forward's inputs, then the parameters: NAME::backward recomputes the forward from them.
    saved: Vec<Prim>,
    outputs: Vec<(Shape, DType)>,
}

#[derive(Debug)]
struct TorchBackward;

impl<const N: usize> Backward<Remote, N> for TorchBackward {
    type State = State;

    fn backward(self, ops: Ops<State, N>, grads: &mut Gradients, _: &mut Checkpointer) {
        let State {
            device,
            name,
            scalars,
            saved,
            outputs,
        } = ops.state;
        let packed = grads.consume::<Remote>(&ops.node);
        let shapes: Vec<Shape> = outputs.iter().map(|(s, _)| s.clone()).collect();
        let declared: Vec<(Shape, DType)> = saved.iter().map(|t| (t.shape(), t.dtype())).collect();
        let mut inputs = saved;
        inputs.extend(unpack::<Remote>(packed, &shapes));
        let gradients = call(
            &device,
            &format!("{name}::backward"),
            inputs,
            &declared,
            scalars,
        );
        for (parent, g) in ops.parents.into_iter().zip(gradients) {
            if let Some(node) = parent {
                grads.register::<Remote>(node.id, g);
            }
        }
    }
}

fn record<const N: usize>(
    device: &RemoteDevice,
    name: &str,
    all: Vec<AdPrim>,
    outputs: &[(Shape, DType)],
    scalars: Vec<ScalarIr>,
) -> AdPrim {
    let (prims, guards): (Vec<Prim>, Vec<_>) = all.into_iter().map(|t| t.into_parts()).unzip();
    let guards: [_; N] = guards.try_into().unwrap_or_else(|_| unreachable!());
    let shapes: Vec<Shape> = outputs.iter().map(|(s, _)| s.clone()).collect();
    let result = call(
        device,
        &format!("{name}::functional"),
        prims.clone(),
        outputs,
        scalars.clone(),
    );
    let packed = pack(result, &shapes);
    match Backward::<Remote, N>::prepare::<NoCheckpointing>(TorchBackward, guards)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(
            State {
                device: device.clone(),
                name: name.to_string(),
                scalars,
                saved: prims,
                outputs: outputs.to_vec(),
            },
            packed,
        ),
        OpsKind::UnTracked(prep) => prep.finish(packed),
    }
}

macro_rules! by_arity {
    ($n:expr, $N:ident => $e:expr; $($k:literal)*) => {
        match $n {
            $($k => { const $N: usize = $k; $e })*
            n => panic!("torchbridge-burn: {n} tensors (inputs and parameters) is more than 32"),
        }
    };
}

/// The most tensors (forward's inputs plus parameters) a differentiable call takes.
pub(crate) const MAX_TENSORS: usize = 32;

/// `NAME::functional` recorded for autodiff: `loss.backward()` calls `NAME::backward`.
pub(crate) fn differentiable(
    device: &RemoteDevice,
    name: &str,
    all: Vec<AdPrim>,
    outputs: &[(Shape, DType)],
    scalars: Vec<ScalarIr>,
) -> Vec<AdPrim> {
    let packed = by_arity!(all.len(), N => record::<N>(device, name, all, outputs, scalars);
        1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
    let shapes: Vec<Shape> = outputs.iter().map(|(s, _)| s.clone()).collect();
    unpack::<Autodiff<Remote>>(packed, &shapes)
}
