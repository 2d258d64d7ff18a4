//! Train through Torch models hosted by [torchbridge](https://github.com/) from Burn programs.
//!
//! A torchbridge host started with `torchbridge serve --model NAME=model.pt` serves the module's
//! forward as the custom op `NAME` and its training contract as `NAME::parameters`,
//! `NAME::functional`, `NAME::backward` and `NAME::spec` (torchbridge's docs/torchscript.md).
//! [`TorchModule`] wraps that contract as a Burn [`Module`]:
//!
//! ```rust,ignore
//! let device = Device::remote("ws://host:3000")?.autodiff();
//! let model = TorchModule::load(&device, "classifier")?;   // parameters become Burn `Param`s
//! let y: Tensor<2> = model.forward(x);                       // NAME::functional on the host
//! let grads = GradientsParams::from_grads(loss.backward(), &model); // NAME::backward
//! let model = optimizer.step(lr, model, grads);              // Burn's optimizer owns the weights
//! ```
//!
//! On an autodiff device the call is an op Burn's autodiff knows: `loss.backward()` asks the host
//! for the gradients of the inputs and the parameters (LibTorch's autograd), so the backward
//! also reaches Burn layers before the module. On a plain device the call is inference only.
//!
//! The host's functional mode never touches its own copy of the weights, so any number of
//! programs can fine-tune one hosted model at once. The output shapes come from the host
//! (`NAME::spec`, one forward per distinct input shape, cached).
//!
//! Pinned to Burn 0.22.1, the version the host's protocol 2 serves; rust/torchbridge-burn-023
//! builds these sources against Burn 0.23.0-pre.1 (protocol 6).

mod op;
mod spec;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use burn::backend::ops::FloatTensorOps;
use burn::backend::{Autodiff, DispatchDevice, Remote};
use burn::module::{Module, Param};
use burn::prelude::*;
use burn::tensor::DType;
pub use burn_ir::ScalarIr;
use burn_remote::RemoteDevice;

use op::{AdPrim, Prim};
use spec::{parse_spec, read_spec};

/// What can go wrong: each carries the host's or this crate's message, naming the op.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// The device is not a remote device (nor the autodiff flavour of one).
    NotRemote(String),
    /// The host failed the op (an unknown module, a module exception, a wrong shape...).
    Host(String),
    /// A call that cannot fit the module, found before anything is sent.
    Usage(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotRemote(m) => write!(f, "torchbridge-burn: not a remote device: {m}"),
            Error::Host(m) => write!(f, "torchbridge-burn: the host refused: {m}"),
            Error::Usage(m) => write!(f, "torchbridge-burn: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// A float tensor of any rank on the remote device, tracked by autodiff or not.
#[derive(Clone, Debug)]
pub enum AnyTensor {
    Plain(Prim),
    Tracked(AdPrim),
}

impl<const D: usize> From<Tensor<D>> for AnyTensor {
    fn from(t: Tensor<D>) -> Self {
        match t.clone().try_into_primitive::<Autodiff<Remote>>() {
            Ok(p) => AnyTensor::Tracked(p),
            Err(_) => AnyTensor::Plain(
                t.try_into_primitive::<Remote>()
                    .expect("torchbridge-burn: a float tensor on a remote device"),
            ),
        }
    }
}

impl AnyTensor {
    /// As a `Tensor<D>` on the device it lives on; `None` when its rank is not `D`.
    pub fn into_tensor<const D: usize>(self) -> Option<Tensor<D>> {
        use burn::backend::TensorMetadata;
        match self {
            AnyTensor::Plain(p) => {
                (p.shape().num_dims() == D).then(|| Tensor::from_primitive::<Remote>(p))
            }
            AnyTensor::Tracked(p) => (p.primitive().shape().num_dims() == D)
                .then(|| Tensor::from_primitive::<Autodiff<Remote>>(p)),
        }
    }

    fn plain(&self) -> Prim {
        match self {
            AnyTensor::Plain(p) => p.clone(),
            AnyTensor::Tracked(p) => p.primitive().clone(),
        }
    }

    fn tracked(self) -> AdPrim {
        match self {
            AnyTensor::Plain(p) => AdPrim::new(p),
            AnyTensor::Tracked(p) => p,
        }
    }
}

/// Output shapes and dtypes by input shapes and scalars.
type OutputCache = HashMap<(Vec<Vec<usize>>, String), Vec<(Shape, DType)>>;

#[derive(Debug)]
struct Meta {
    name: String,
    device: RemoteDevice,
    shapes: Vec<Shape>,
    outputs: Mutex<OutputCache>,
}

/// A Torch module hosted by torchbridge, as a Burn module whose parameters are Burn `Param`s.
///
/// The parameters are stored flat (`Param<Tensor<1>>`: a Burn module's `Vec` of parameters has one
/// rank) and take their shapes back, differentiably, for each call.
#[derive(Module, Debug)]
pub struct TorchModule {
    params: Vec<Param<Tensor<1>>>,
    #[module(skip)]
    meta: Arc<Meta>,
}

fn remote_of(device: &Device) -> Result<RemoteDevice, Error> {
    match device.clone().without_autodiff().as_dispatch() {
        DispatchDevice::Remote(r) => Ok(r.clone()),
        other => Err(Error::NotRemote(format!("{other:?}"))),
    }
}

impl TorchModule {
    /// The hosted module `name` with its parameters read from the host, as trainable `Param`s on
    /// `device` (a remote device, or its autodiff flavour for training).
    pub fn load(device: &Device, name: &str) -> Result<Self, Error> {
        let remote = remote_of(device)?;
        let (params, _) = parse_spec(&read_spec(&remote, name, vec![], &[])?)?;
        for (i, (_, dtype)) in params.iter().enumerate() {
            if !dtype.is_float() {
                return Err(Error::Host(format!(
                    "{name}: parameter {i} is {dtype:?}, not a float"
                )));
            }
        }
        let shapes: Vec<Shape> = params.iter().map(|(s, _)| s.clone()).collect();
        let values = op::call(
            &remote,
            &format!("{name}::parameters"),
            vec![],
            &params,
            vec![],
        );
        let params: Vec<Param<Tensor<1>>> = values
            .into_iter()
            .zip(&params)
            .map(|(p, (shape, _))| {
                let flat = Remote::float_reshape(p, Shape::from(vec![shape.num_elements()]));
                let t = if device.is_autodiff() {
                    Tensor::<1>::from_primitive::<Autodiff<Remote>>(AdPrim::new(flat))
                } else {
                    Tensor::<1>::from_primitive::<Remote>(flat)
                };
                Param::from_tensor(t)
            })
            .collect();
        // The parameters' values are read now: an unknown module fails here, not at first use.
        if let Some(p) = params.first() {
            p.val()
                .try_into_data()
                .map_err(|e| Error::Host(e.to_string()))?;
        }
        Ok(Self {
            meta: Arc::new(Meta {
                name: name.to_string(),
                device: remote,
                shapes,
                outputs: Mutex::new(HashMap::new()),
            }),
            params,
        })
    }

    /// The hosted module's name (its custom-op id).
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// The parameters' current values, flat, in the host's order; `parameter_shapes` gives their
    /// shapes.
    pub fn parameters(&self) -> Vec<Tensor<1>> {
        self.params.iter().map(|p| p.val()).collect()
    }

    /// The parameters' shapes, in the host's order (PyTorch's state-dict order).
    pub fn parameter_shapes(&self) -> &[Shape] {
        &self.meta.shapes
    }

    /// One float input, one float output: the common case. Panics with the host's message on
    /// an error; see [`TorchModule::call`] for a `Result`.
    pub fn forward<const D: usize, const E: usize>(&self, x: Tensor<D>) -> Tensor<E> {
        let out = self
            .call(vec![x.into()], vec![])
            .unwrap_or_else(|e| panic!("{e}"));
        match out.into_iter().next() {
            Some(y) => y.into_tensor::<E>().unwrap_or_else(|| {
                panic!(
                    "torchbridge-burn: {}'s output is not of rank {E}",
                    self.meta.name
                )
            }),
            None => panic!("torchbridge-burn: {} returned no output", self.meta.name),
        }
    }

    /// forward's tensors and scalars in, its outputs out. On an autodiff device the call is
    /// recorded: `backward()` sends the gradients through `NAME::backward` into the inputs and
    /// the parameters.
    pub fn call(
        &self,
        inputs: Vec<AnyTensor>,
        scalars: Vec<ScalarIr>,
    ) -> Result<Vec<AnyTensor>, Error> {
        let name = &self.meta.name;
        if inputs.len() + self.params.len() > op::MAX_TENSORS {
            return Err(Error::Usage(format!(
                "{name}: {} inputs and {} parameters are more than {} tensors",
                inputs.len(),
                self.params.len(),
                op::MAX_TENSORS
            )));
        }
        let outputs = self.output_spec(&inputs, &scalars)?;
        if let Some((i, (_, dtype))) = outputs
            .iter()
            .enumerate()
            .find(|(_, (_, d))| *d != outputs[0].1 || !d.is_float())
        {
            return Err(Error::Usage(format!(
                "{name}: output {i} is {dtype:?}; a call takes float outputs of one dtype"
            )));
        }
        let params: Vec<(AnyTensor, &Shape)> = self
            .params
            .iter()
            .zip(&self.meta.shapes)
            .map(|(p, shape)| (AnyTensor::from(p.val()), shape))
            .collect();
        let tracked = inputs
            .iter()
            .chain(params.iter().map(|(p, _)| p))
            .any(|x| matches!(x, AnyTensor::Tracked(_)));
        let params = params.into_iter();
        if tracked {
            let mut all: Vec<AdPrim> = inputs.into_iter().map(AnyTensor::tracked).collect();
            all.extend(params.map(|(p, shape)| {
                <Autodiff<Remote> as FloatTensorOps<Autodiff<Remote>>>::float_reshape(
                    p.tracked(),
                    shape.clone(),
                )
            }));
            Ok(
                op::differentiable(&self.meta.device, name, all, &outputs, scalars)
                    .into_iter()
                    .map(AnyTensor::Tracked)
                    .collect(),
            )
        } else {
            let mut all: Vec<Prim> = inputs.iter().map(AnyTensor::plain).collect();
            all.extend(params.map(|(p, shape)| Remote::float_reshape(p.plain(), shape.clone())));
            Ok(op::call(
                &self.meta.device,
                &format!("{name}::functional"),
                all,
                &outputs,
                scalars,
            )
            .into_iter()
            .map(AnyTensor::Plain)
            .collect())
        }
    }

    /// forward's output shapes and dtypes for these inputs, from the host once per input shape.
    fn output_spec(
        &self,
        inputs: &[AnyTensor],
        scalars: &[ScalarIr],
    ) -> Result<Vec<(Shape, DType)>, Error> {
        use burn::backend::TensorMetadata;
        let plain: Vec<Prim> = inputs.iter().map(AnyTensor::plain).collect();
        let key = (
            plain.iter().map(|p| p.shape().to_vec()).collect::<Vec<_>>(),
            format!("{scalars:?}"),
        );
        if let Some(found) = self.meta.outputs.lock().unwrap().get(&key) {
            return Ok(found.clone());
        }
        let (_, outputs) = parse_spec(&read_spec(
            &self.meta.device,
            &self.meta.name,
            plain,
            scalars,
        )?)?;
        let outputs = outputs
            .ok_or_else(|| Error::Host(format!("{}: the spec has no outputs", self.meta.name)))?;
        self.meta
            .outputs
            .lock()
            .unwrap()
            .insert(key, outputs.clone());
        Ok(outputs)
    }
}
