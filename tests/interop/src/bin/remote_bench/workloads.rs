//! The benchmark's models and workloads: each workload is bound to one device and runs one
//! timed unit at a time, returning its result for the cross-host comparison.

use super::*;

// ---- Models ------------------------------------------------------------------------------------

#[derive(Module, Debug)]
pub(super) struct Mlp {
    hidden: Linear,
    out: Linear,
}

impl Mlp {
    pub(super) fn new(device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(512, 1024).init(device),
            out: LinearConfig::new(1024, 512).init(device),
        }
    }
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.out.forward(relu(self.hidden.forward(x)))
    }
}

#[derive(Module, Debug)]
pub(super) struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    head: Linear,
}

impl Cnn {
    pub(super) fn new(device: &Device) -> Self {
        let conv = |i, o| {
            Conv2dConfig::new([i, o], [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device)
        };
        Self {
            conv1: conv(3, 16),
            conv2: conv(16, 32),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
            head: LinearConfig::new(32 * 8 * 8, 10).init(device),
        }
    }
    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let h = self.pool.forward(relu(self.conv1.forward(x)));
        let h = self.pool.forward(relu(self.conv2.forward(h)));
        self.head.forward(h.flatten(1, 3))
    }
}

// ---- Workloads ---------------------------------------------------------------------------------

/// One workload bound to one device: `run` does one timed unit and returns (seconds, result).
pub(super) trait Workload {
    fn run(&mut self) -> (f64, Option<TensorData>);
}

pub(super) fn time<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let start = Instant::now();
    let r = f();
    (start.elapsed().as_secs_f64(), r)
}

pub(super) fn input(shape: &[usize], seed: u64) -> TensorData {
    // Deterministic values in [-1, 1): the same bits on both hosts.
    let n: usize = shape.iter().product();
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let values: Vec<f32> = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect();
    TensorData::new(values, shape.to_vec())
}

pub(super) struct MlpForward {
    model: Mlp,
    x: Tensor<2>,
}
impl MlpForward {
    pub(super) fn new(device: &Device, model: &Mlp) -> Self {
        Self {
            model: model.clone().to_device(device),
            x: Tensor::from_data(input(&[64, 512], 1), device),
        }
    }
}
impl Workload for MlpForward {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, y) = time(|| self.model.forward(self.x.clone()).into_data());
        (s, Some(y))
    }
}

pub(super) struct CnnForward {
    model: Cnn,
    x: Tensor<4>,
}
impl CnnForward {
    pub(super) fn new(device: &Device, model: &Cnn) -> Self {
        Self {
            model: model.clone().to_device(device),
            x: Tensor::from_data(input(&[16, 3, 32, 32], 2), device),
        }
    }
}
impl Workload for CnnForward {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, y) = time(|| self.model.forward(self.x.clone()).into_data());
        (s, Some(y))
    }
}

/// One SGD step of the MLP on an MSE loss; the result compared is the first step's loss.
pub(super) struct TrainStep {
    model: Option<Mlp>,
    x: Tensor<2>,
    y: Tensor<2>,
}
impl TrainStep {
    /// The model is made afresh for each host on Burn's autodiff CPU backend from one seed and its
    /// parameters initialised there (they are lazy: left alone they would be drawn by each host's
    /// own RNG). Copies of one autodiff model would share its tape, and the first backward would
    /// consume what the other host's copy still needs.
    pub(super) fn new(device: &Device, seed: u64) -> Self {
        let cpu = Device::flex().autodiff();
        cpu.seed(seed);
        let model = Mlp::new(&cpu);
        for p in [&model.hidden.weight, &model.out.weight] {
            let _ = p.val();
        }
        for p in [&model.hidden.bias, &model.out.bias].into_iter().flatten() {
            let _ = p.val();
        }
        let device = device.clone().autodiff();
        Self {
            // `fork`, not `to_device`: the parameters become leaves of the remote device's own
            // graph. Moved with `to_device` they stay nodes of the CPU graph, whose tape the first
            // backward consumes; SGD then finds no gradient for them, leaves them as they are,
            // and the second step's backward fails on the consumed tape.
            model: Some(model.fork(&device)),
            x: Tensor::from_data(input(&[64, 512], 3), &device),
            y: Tensor::from_data(input(&[64, 512], 4), &device),
        }
    }
}
impl Workload for TrainStep {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let model = self.model.take().unwrap();
        let (s, (model, loss)) = time(|| {
            let loss = (model.forward(self.x.clone()) - self.y.clone())
                .powf_scalar(2.0)
                .mean();
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            let mut optim = SgdConfig::new().init();
            let model = optim.step(0.01, model, grads);
            (model, loss.into_data())
        });
        self.model = Some(model);
        (s, Some(loss))
    }
}

/// 1000 element-wise ops on [16, 16] tensors, then one read: per-op dispatch cost.
pub(super) const CHAIN_OPS: usize = 1000;
pub(super) struct OpChain {
    x: Tensor<2>,
    c1: Tensor<2>,
    c2: Tensor<2>,
}
impl OpChain {
    pub(super) fn new(device: &Device) -> Self {
        let c2 = input(&[16, 16], 7)
            .iter::<f32>()
            .map(|v| 1.0 + 0.5 * v)
            .collect::<Vec<_>>();
        Self {
            x: Tensor::from_data(input(&[16, 16], 5), device),
            c1: Tensor::from_data(input(&[16, 16], 6), device),
            c2: Tensor::from_data(TensorData::new(c2, [16, 16]), device),
        }
    }
}
impl Workload for OpChain {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, y) = time(|| {
            let mut x = self.x.clone();
            for i in 0..CHAIN_OPS {
                x = match i % 5 {
                    0 => x + self.c1.clone(),
                    1 => x * self.c2.clone(),
                    2 => x - self.c1.clone(),
                    3 => x / self.c2.clone(),
                    _ => relu(x),
                };
            }
            x.into_data()
        });
        (s, Some(y))
    }
}

/// Upload then download of `bytes` of f32.
pub(super) struct Transfer {
    device: Device,
    data: TensorData,
}
impl Transfer {
    pub(super) fn new(device: &Device, bytes: usize) -> Self {
        let n = bytes / 4;
        let values: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();
        Self {
            device: device.clone(),
            data: TensorData::new(values, [n]),
        }
    }
}
impl Workload for Transfer {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let data = self.data.clone();
        let (s, back) = time(|| Tensor::<1>::from_data(data, &self.device).into_data());
        assert_eq!(
            back.as_bytes(),
            self.data.as_bytes(),
            "a transfer came back changed"
        );
        (s, None)
    }
}

/// Reads of a small tensor already on the device: the median is the request/response latency.
pub(super) struct ReadRoundTrip {
    t: Tensor<1>,
    reads: usize,
}
impl ReadRoundTrip {
    pub(super) fn new(device: &Device, reads: usize) -> Self {
        let t = Tensor::<1>::from_data(TensorData::from([1.0f32, 2.0, 3.0, 4.0]), device);
        let _ = t.clone().into_data(); // resident before timing
        Self { t, reads }
    }
    /// Each read's seconds.
    pub(super) fn samples(&mut self) -> Vec<f64> {
        (0..self.reads)
            .map(|_| time(|| self.t.clone().into_data()).0)
            .collect()
    }
}

// ---- Op-heavy programs (the slowest cases of Burn's backend test suite) -------------------------

/// `burn::linalg::lu` as Burn's backend tests run it (500×500, 300×500): a blocked decomposition
/// whose pivot steps are each a dozen small ops (slices, gathers, a scatter, slice assignments into
/// the whole matrix) and no read until the end.
pub(super) struct Lu {
    a: Tensor<2>,
}
impl Lu {
    pub(super) fn new(device: &Device, rows: usize, cols: usize) -> Self {
        Self {
            a: Tensor::from_data(input(&[rows, cols], 11), device),
        }
    }
}
impl Workload for Lu {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, u) = time(|| {
            let (_p, _l, u) = burn::linalg::lu::<2, 1>(self.a.clone());
            u.into_data()
        });
        (s, Some(u))
    }
}

/// `burn::linalg::det` of a 300×300 matrix (Burn's `test_det_300x300_*` size): its LU, then the
/// product of the diagonal. The matrix is the identity plus small values, so the determinant
/// stays finite.
pub(super) struct Det {
    a: Tensor<3>,
}
impl Det {
    pub(super) fn new(device: &Device) -> Self {
        let n = 300;
        let noise = Tensor::<2>::from_data(input(&[n, n], 13), device);
        let a = (Tensor::<2>::eye(n, device) + noise * 0.05).reshape([1, n, n]);
        Self { a }
    }
}
impl Workload for Det {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, d) = time(|| burn::linalg::det::<3, 2, 1>(self.a.clone()).into_data());
        (s, Some(d))
    }
}

/// `burn::linalg::qr` of a medium-wide 96×160 matrix: Householder reflections, a few small ops
/// and two rank-one updates per column.
pub(super) struct Qr {
    a: Tensor<2>,
}
impl Qr {
    pub(super) fn new(device: &Device) -> Self {
        Self {
            a: Tensor::from_data(input(&[96, 160], 14), device),
        }
    }
}
impl Workload for Qr {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let (s, r) = time(|| {
            let (_q, r) = burn::linalg::qr::<2>(self.a.clone(), true);
            r.into_data()
        });
        (s, Some(r))
    }
}

/// CTC loss and its gradient at the scale of Burn's `test_ctc_loss_scaled_*` test (T 494 narrowed
/// to 402, batch 2, 36 classes, targets of 64): Burn's decomposition runs a 402-step loop of
/// element-wise ops and a slice assignment into the [T, N, 2S+1] alpha table, and the same again
/// backwards for beta.
pub(super) struct CtcGrad {
    device: Device,
    logits: TensorData,
    targets: TensorData,
}
impl CtcGrad {
    const B: usize = 2;
    const T: usize = 494;
    const WARMUP: usize = 92;
    const C: usize = 36;
    const S: usize = 64;
    pub(super) fn new(device: &Device) -> Self {
        let mut targets = vec![0i64; Self::B * Self::S];
        for b in 0..Self::B {
            let len = if b == 0 { Self::S } else { 43 };
            for s in 0..len {
                targets[b * Self::S + s] = ((s * 3 + b * 7) % 35 + 1) as i64;
            }
        }
        Self {
            device: device.clone().autodiff(),
            logits: input(&[Self::B, Self::T, Self::C], 12),
            targets: TensorData::new(targets, [Self::B, Self::S]),
        }
    }
}
impl Workload for CtcGrad {
    fn run(&mut self) -> (f64, Option<TensorData>) {
        let d = &self.device;
        let (s, grad) = time(|| {
            let logits = Tensor::<3>::from_data(self.logits.clone(), d).require_grad();
            let t_eff = (Self::T - Self::WARMUP) as i64;
            let log_probs = burn::tensor::activation::log_softmax(logits.clone(), 2)
                .swap_dims(0, 1)
                .narrow(0, Self::WARMUP, Self::T - Self::WARMUP);
            let targets = Tensor::<2, Int>::from_data(self.targets.clone(), d);
            let input_lengths = Tensor::<1, Int>::from_data(TensorData::from([t_eff, t_eff]), d);
            let target_lengths = Tensor::<1, Int>::from_data(TensorData::from([64i64, 43]), d);
            let loss = burn::tensor::module::ctc_loss(
                log_probs,
                targets,
                input_lengths,
                target_lengths,
                0,
            )
            .sum();
            let grads = loss.backward();
            logits
                .grad(&grads)
                .expect("logits get a gradient")
                .into_data()
        });
        (s, Some(grad))
    }
}
