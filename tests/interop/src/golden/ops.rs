//! Real `burn_ir::OperationIr` values, one or more per leaf of the operation tree.
//!
//! Field values are deliberately varied: tensor ids small, above 2^32 and with bit 63 set; every
//! `TensorStatus`; shapes of rank 0..=5 including a zero-size dimension; every `DType`; every
//! `ScalarIr` variant; `Option`s both `None` and `Some`; negative `Slice` bounds and steps; every
//! `Distribution`; several `QuantScheme` forms.
//!
//! Built with `cfg(burn_023)` (tests/interop-0.23), the `cfg(burn_023)` parts cover Burn
//! 0.23.0-pre.1's tree instead: no `Distributed` category; `Float.Fmod(Scalar)`; the 3-D pools;
//! avg-pool `dilation`; the 6-field `InterpolateOptionsIr`; `AttentionOptionsIr.causal_alignment`;
//! `Module.AttentionWithLogsumexp` and `Module.AttentionBackward`.

#[cfg(not(burn_023))]
use burn_backend::distributed::ReduceOperation;
#[cfg(burn_023)]
use burn_backend::ops::CausalAlignment;
use burn_backend::tensor::IndexingUpdateOp;
use burn_backend::{BoolStore, DType, Distribution, Shape, Slice};
use burn_ir::*;
use burn_std::{QuantMode, QuantScheme, QuantStore, QuantValue, ScaleDtype};

/// The tensor-kind a category works on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum K {
    Float,
    Int,
    Bool,
}

pub const FLOAT_DTYPES: [DType; 5] = [DType::F32, DType::F64, DType::F16, DType::BF16, DType::Flex32];
pub const INT_DTYPES: [DType; 8] = [
    DType::I64,
    DType::I32,
    DType::I16,
    DType::I8,
    DType::U64,
    DType::U32,
    DType::U16,
    DType::U8,
];
pub const BOOL_DTYPES: [DType; 3] = [
    DType::Bool(BoolStore::Native),
    DType::Bool(BoolStore::U8),
    DType::Bool(BoolStore::U32),
];

/// Quantization schemes used throughout the vectors, with a short label for names.
pub fn schemes() -> Vec<(&'static str, QuantScheme)> {
    vec![
        ("default", QuantScheme::default()),
        (
            "q8s-tensor-f32",
            QuantScheme::default()
                .with_value(QuantValue::Q8S)
                .with_store(QuantStore::Native)
                .per_tensor(ScaleDtype::F32),
        ),
        (
            "q8s-block32-f32",
            QuantScheme::default()
                .with_value(QuantValue::Q8S)
                .with_store(QuantStore::PackedU32(0))
                .per_block([32], ScaleDtype::F32),
        ),
        (
            "q4f-block32-f16",
            QuantScheme::default()
                .with_value(QuantValue::Q4F)
                .with_store(QuantStore::PackedU32(0))
                .with_mode(QuantMode::Symmetric)
                .per_block([32], ScaleDtype::F16),
        ),
        (
            // [1, 16] canonicalizes to [16] (leading unit dims are dropped by BlockSize::new).
            "q2s-block1x16-bf16",
            QuantScheme::default()
                .with_value(QuantValue::Q2S)
                .with_store(QuantStore::PackedU32(0))
                .per_block([1, 16], ScaleDtype::BF16),
        ),
        (
            "e4m3-block4x8-ue8m0",
            QuantScheme::default()
                .with_value(QuantValue::E4M3)
                .with_store(QuantStore::Native)
                .per_block([4, 8], ScaleDtype::UE8M0),
        ),
        (
            "e2m1-two-level-ue4m3",
            QuantScheme::default()
                .with_value(QuantValue::E2M1)
                .with_store(QuantStore::PackedNative(1))
                .per_block([16], ScaleDtype::UE4M3)
                .per_tensor(ScaleDtype::F32),
        ),
        (
            "q4s-lookup-tensor-f16",
            QuantScheme::default()
                .with_value(QuantValue::Q4S)
                .with_store(QuantStore::PackedU32(0))
                .with_mode(QuantMode::Lookup)
                .per_tensor(ScaleDtype::F16),
        ),
        (
            "q8f-lookup-block2x4x8-bf16",
            QuantScheme::default()
                .with_value(QuantValue::Q8F)
                .with_store(QuantStore::Native)
                .with_mode(QuantMode::Lookup)
                .per_block([2, 4, 8], ScaleDtype::BF16),
        ),
        (
            "e5m2-tensor-bf16",
            QuantScheme::default()
                .with_value(QuantValue::E5M2)
                .with_store(QuantStore::Native)
                .per_tensor(ScaleDtype::BF16),
        ),
        (
            "q2f-block8-ue8m0-packed1",
            QuantScheme::default()
                .with_value(QuantValue::Q2F)
                .with_store(QuantStore::PackedU32(1))
                .per_block([8], ScaleDtype::UE8M0),
        ),
    ]
}

/// Deterministic source of varied ids, statuses and dtypes.
pub struct G {
    n: u64,
    status: usize,
    fi: usize,
    ii: usize,
    bi: usize,
}

impl G {
    pub fn new() -> Self {
        Self { n: 0, status: 0, fi: 0, ii: 0, bi: 0 }
    }

    /// Ids cycle through five magnitudes: small, > 2^32, bit 63 set, near u64::MAX, medium.
    pub fn id(&mut self) -> TensorId {
        self.n += 1;
        let n = self.n;
        let v = match n % 5 {
            0 => n,
            1 => (1u64 << 32) + n * 7919,
            2 => (1u64 << 63) | n.wrapping_mul(0x9E37_79B9),
            3 => u64::MAX - n,
            _ => 1_000_000 + n,
        };
        TensorId::new(v)
    }

    fn next_status(&mut self) -> TensorStatus {
        self.status += 1;
        if self.status % 3 == 0 {
            TensorStatus::ReadWrite
        } else {
            TensorStatus::ReadOnly
        }
    }

    /// An input tensor: ReadOnly or ReadWrite.
    pub fn inp(&mut self, shape: &[usize], dtype: DType) -> TensorIr {
        let status = self.next_status();
        TensorIr {
            id: self.id(),
            shape: Shape::from(shape.to_vec()),
            status,
            dtype,
        }
    }

    /// An output tensor: NotInit.
    pub fn out(&mut self, shape: &[usize], dtype: DType) -> TensorIr {
        TensorIr {
            id: self.id(),
            shape: Shape::from(shape.to_vec()),
            status: TensorStatus::NotInit,
            dtype,
        }
    }

    pub fn fd(&mut self) -> DType {
        self.fi += 1;
        FLOAT_DTYPES[self.fi % FLOAT_DTYPES.len()]
    }

    pub fn idt(&mut self) -> DType {
        self.ii += 1;
        INT_DTYPES[self.ii % INT_DTYPES.len()]
    }

    pub fn bd(&mut self) -> DType {
        self.bi += 1;
        BOOL_DTYPES[self.bi % BOOL_DTYPES.len()]
    }

    pub fn dt(&mut self, k: K) -> DType {
        match k {
            K::Float => self.fd(),
            K::Int => self.idt(),
            K::Bool => self.bd(),
        }
    }

    /// A scalar matching `dtype`, as `ScalarIr::new` would pick its variant.
    pub fn sc(&mut self, dtype: DType) -> ScalarIr {
        self.n += 1;
        let n = self.n;
        if dtype.is_float() {
            [
                ScalarIr::Float(-2.75),
                ScalarIr::Float(0.1),
                ScalarIr::Float(1e-7),
                ScalarIr::Float(3.0),
                ScalarIr::Float(-1.0e300),
            ][(n % 5) as usize]
        } else if dtype.is_int() {
            [ScalarIr::Int(-5), ScalarIr::Int(i64::MIN), ScalarIr::Int(300), ScalarIr::Int(-129)]
                [(n % 4) as usize]
        } else if dtype.is_uint() {
            [ScalarIr::UInt(u64::MAX - 2), ScalarIr::UInt(7), ScalarIr::UInt(70_000), ScalarIr::UInt(1 << 40)]
                [(n % 4) as usize]
        } else {
            ScalarIr::Bool(n % 2 == 0)
        }
    }
}

pub type Labeled = (Option<String>, OperationIr);

fn l(label: &str) -> Option<String> {
    Some(label.to_string())
}

/// Every `BaseOperationIr` variant for one kind.
pub fn base_ops(g: &mut G, k: K) -> Vec<(Option<String>, BaseOperationIr)> {
    use BaseOperationIr as B;
    let mut v: Vec<(Option<String>, BaseOperationIr)> = Vec::new();

    let d = g.dt(k);
    v.push((None, B::Reshape(ShapeOpIr { input: g.inp(&[2, 3, 4], d), out: g.out(&[6, 4], d) })));
    let d = g.dt(k);
    v.push((l("to-rank0"), B::Reshape(ShapeOpIr { input: g.inp(&[1, 1], d), out: g.out(&[], d) })));
    let d = g.dt(k);
    v.push((None, B::SwapDims(SwapDimsOpIr { input: g.inp(&[2, 3, 4], d), out: g.out(&[4, 3, 2], d), dim1: 0, dim2: 2 })));
    let d = g.dt(k);
    v.push((None, B::Permute(PermuteOpIr { input: g.inp(&[2, 3, 4, 5], d), out: g.out(&[5, 2, 4, 3], d), axes: vec![3, 0, 2, 1] })));
    let d = g.dt(k);
    v.push((None, B::Flip(FlipOpIr { input: g.inp(&[3, 0, 2], d), out: g.out(&[3, 0, 2], d), axes: vec![0, 2] })));
    let d = g.dt(k);
    v.push((None, B::Expand(ShapeOpIr { input: g.inp(&[1, 3], d), out: g.out(&[4, 3], d) })));
    let d = g.dt(k);
    v.push((None, B::Unfold(UnfoldOpIr { input: g.inp(&[2, 10], d), out: g.out(&[2, 3, 4], d), dim: 1, size: 4, step: 3 })));
    let d = g.dt(k);
    v.push((
        None,
        B::Slice(SliceOpIr {
            tensor: g.inp(&[8, 6, 4], d),
            ranges: vec![
                Slice { start: 1, end: Some(7), step: 2 },
                Slice { start: -1, end: None, step: -1 },
                Slice { start: 0, end: Some(-1), step: 1 },
            ],
            out: g.out(&[3, 1, 3], d),
        }),
    ));
    let d = g.dt(k);
    v.push((
        None,
        B::SliceAssign(SliceAssignOpIr {
            tensor: g.inp(&[8, 6], d),
            ranges: vec![Slice { start: -4, end: None, step: 1 }, Slice { start: 0, end: Some(6), step: 3 }],
            value: g.inp(&[4, 2], d),
            out: g.out(&[8, 6], d),
        }),
    ));
    let d = g.dt(k);
    let di = g.idt();
    v.push((None, B::Select(SelectOpIr { tensor: g.inp(&[5, 7], d), dim: 1, indices: g.inp(&[3], di), out: g.out(&[5, 3], d) })));
    let d = g.dt(k);
    let di = g.idt();
    v.push((
        None,
        B::SelectAssign(SelectAssignOpIr {
            tensor: g.inp(&[5, 7], d),
            dim: 0,
            indices: g.inp(&[2], di),
            value: g.inp(&[2, 7], d),
            update: IndexingUpdateOp::Add,
            out: g.out(&[5, 7], d),
        }),
    ));
    let d = g.dt(k);
    let db = g.bd();
    v.push((
        None,
        B::MaskWhere(MaskWhereOpIr { tensor: g.inp(&[2, 3], d), mask: g.inp(&[2, 3], db), value: g.inp(&[1, 3], d), out: g.out(&[2, 3], d) }),
    ));
    let d = g.dt(k);
    let db = g.bd();
    let s = g.sc(d);
    v.push((None, B::MaskFill(MaskFillOpIr { tensor: g.inp(&[2, 3], d), mask: g.inp(&[1, 3], db), value: s, out: g.out(&[2, 3], d) })));
    let d = g.dt(k);
    let di = g.idt();
    v.push((None, B::Gather(GatherOpIr { tensor: g.inp(&[4, 5], d), dim: 1, indices: g.inp(&[4, 2], di), out: g.out(&[4, 2], d) })));
    for (label, update) in [
        (None, IndexingUpdateOp::Assign),
        (l("mul"), IndexingUpdateOp::Mul),
        (l("min"), IndexingUpdateOp::Min),
    ] {
        let d = g.dt(k);
        let di = g.idt();
        v.push((
            label,
            B::Scatter(ScatterOpIr {
                tensor: g.inp(&[4, 5], d),
                dim: 0,
                indices: g.inp(&[2, 5], di),
                value: g.inp(&[2, 5], d),
                update,
                out: g.out(&[4, 5], d),
            }),
        ));
    }
    let d = g.dt(k);
    let di = g.idt();
    v.push((
        None,
        B::ScatterNd(ScatterNdOpIr {
            data: g.inp(&[4, 4, 3], d),
            indices: g.inp(&[5, 2], di),
            values: g.inp(&[5, 3], d),
            reduction: IndexingUpdateOp::Max,
            out: g.out(&[4, 4, 3], d),
        }),
    ));
    let d = g.dt(k);
    let di = g.idt();
    v.push((None, B::GatherNd(GatherNdOpIr { data: g.inp(&[4, 4, 3], d), indices: g.inp(&[5, 2], di), out: g.out(&[5, 3], d) })));
    let d = g.dt(k);
    let db = g.bd();
    v.push((None, B::Equal(BinaryOpIr { lhs: g.inp(&[2, 3], d), rhs: g.inp(&[2, 3], d), out: g.out(&[2, 3], db) })));
    let d = g.dt(k);
    let db = g.bd();
    let s = g.sc(d);
    v.push((None, B::EqualElem(ScalarOpIr { lhs: g.inp(&[], d), rhs: s, out: g.out(&[], db) })));
    let d = g.dt(k);
    v.push((None, B::RepeatDim(RepeatDimOpIr { tensor: g.inp(&[2, 3], d), dim: 0, times: 4, out: g.out(&[8, 3], d) })));
    let d = g.dt(k);
    v.push((
        None,
        B::Cat(CatOpIr { tensors: vec![g.inp(&[2, 3], d), g.inp(&[4, 3], d), g.inp(&[0, 3], d)], dim: 0, out: g.out(&[6, 3], d) }),
    ));
    let d = g.dt(k);
    let d2 = g.dt(k);
    v.push((None, B::Cast(CastOpIr { input: g.inp(&[2, 2], d), out: g.out(&[2, 2], d2) })));
    let d = g.dt(k);
    v.push((None, B::Empty(CreationOpIr { out: g.out(&[3, 4], d) })));
    let d = g.dt(k);
    v.push((None, B::Ones(CreationOpIr { out: g.out(&[2, 1, 3, 1, 2], d) })));
    let d = g.dt(k);
    v.push((None, B::Zeros(CreationOpIr { out: g.out(&[], d) })));
    let d = g.dt(k);
    let db = g.bd();
    v.push((None, B::NotEqual(BinaryOpIr { lhs: g.inp(&[4, 1], d), rhs: g.inp(&[1, 5], d), out: g.out(&[4, 5], db) })));
    let d = g.dt(k);
    let db = g.bd();
    let s = g.sc(d);
    v.push((None, B::NotEqualElem(ScalarOpIr { lhs: g.inp(&[3], d), rhs: s, out: g.out(&[3], db) })));
    let d = g.dt(k);
    let db = g.bd();
    v.push((None, B::All(ReduceOpIr { input: g.inp(&[2, 3], d), out: g.out(&[1], db) })));
    let d = g.dt(k);
    let db = g.bd();
    v.push((None, B::Any(ReduceOpIr { input: g.inp(&[0, 3], d), out: g.out(&[1], db) })));
    let d = g.dt(k);
    let db = g.bd();
    v.push((None, B::AllDim(ReduceDimOpIr { input: g.inp(&[2, 3], d), out: g.out(&[2, 1], db), axis: 1, accumulator_len: 1 })));
    let d = g.dt(k);
    let db = g.bd();
    v.push((None, B::AnyDim(ReduceDimOpIr { input: g.inp(&[2, 3, 4], d), out: g.out(&[1, 3, 4], db), axis: 0, accumulator_len: 1 })));
    v
}

/// Every `NumericOperationIr` variant for float or int tensors of dtype `d`.
pub fn numeric_ops(g: &mut G, d: DType) -> Vec<(Option<String>, NumericOperationIr)> {
    use NumericOperationIr as N;
    let mut v: Vec<(Option<String>, NumericOperationIr)> = Vec::new();
    let int = !d.is_float();

    fn bin(g: &mut G, d: DType, a: &[usize], b: &[usize], o: &[usize]) -> BinaryOpIr {
        BinaryOpIr { lhs: g.inp(a, d), rhs: g.inp(b, d), out: g.out(o, d) }
    }
    fn sca(g: &mut G, d: DType, s: &[usize]) -> ScalarOpIr {
        let rhs = g.sc(d);
        ScalarOpIr { lhs: g.inp(s, d), rhs, out: g.out(s, d) }
    }
    fn cmp(g: &mut G, d: DType, a: &[usize], b: &[usize], o: &[usize]) -> BinaryOpIr {
        let db = g.bd();
        BinaryOpIr { lhs: g.inp(a, d), rhs: g.inp(b, d), out: g.out(o, db) }
    }
    fn cmps(g: &mut G, d: DType, s: &[usize]) -> ScalarOpIr {
        let db = g.bd();
        let rhs = g.sc(d);
        ScalarOpIr { lhs: g.inp(s, d), rhs, out: g.out(s, db) }
    }
    fn red(g: &mut G, d: DType, s: &[usize]) -> ReduceOpIr {
        ReduceOpIr { input: g.inp(s, d), out: g.out(&[1], d) }
    }
    fn rdim(g: &mut G, d: DType, od: DType, s: &[usize], axis: usize, acc: usize) -> ReduceDimOpIr {
        let mut o = s.to_vec();
        o[axis] = acc;
        ReduceDimOpIr { input: g.inp(s, d), out: g.out(&o, od), axis, accumulator_len: acc }
    }
    fn dimop(g: &mut G, d: DType, s: &[usize], axis: usize) -> DimOpIr {
        DimOpIr { input: g.inp(s, d), out: g.out(s, d), axis }
    }

    v.push((None, N::Add(bin(g, d, &[2, 3], &[2, 3], &[2, 3]))));
    v.push((l("broadcast"), N::Add(bin(g, d, &[4, 1, 3], &[5, 1], &[4, 5, 3]))));
    v.push((l("rank0"), N::Add(bin(g, d, &[], &[], &[]))));
    v.push((None, N::AddScalar(sca(g, d, &[2, 3]))));
    v.push((None, N::Sub(bin(g, d, &[3, 1], &[1, 4], &[3, 4]))));
    v.push((None, N::SubScalar(sca(g, d, &[7]))));
    v.push((None, N::Div(bin(g, d, &[2, 2], &[2, 2], &[2, 2]))));
    v.push((None, N::DivScalar(sca(g, d, &[2, 0, 3]))));
    v.push((None, N::Rem(bin(g, d, &[6], &[6], &[6]))));
    v.push((None, N::RemScalar(sca(g, d, &[3, 3]))));
    v.push((None, N::Mul(bin(g, d, &[0, 4], &[1, 4], &[0, 4]))));
    v.push((None, N::MulScalar(sca(g, d, &[2, 3, 4]))));
    v.push((None, N::Abs(UnaryOpIr { input: g.inp(&[5, 5], d), out: g.out(&[5, 5], d) })));
    let s = g.sc(d);
    v.push((None, N::Full(FullOpIr { out: g.out(&[3, 2], d), value: s })));
    let s = g.sc(d);
    v.push((l("rank0"), N::Full(FullOpIr { out: g.out(&[], d), value: s })));
    v.push((None, N::MeanDim(rdim(g, d, d, &[4, 6], 1, 1))));
    v.push((None, N::Mean(red(g, d, &[4, 6]))));
    v.push((None, N::Sum(red(g, d, &[2, 3, 4]))));
    v.push((None, N::SumDim(rdim(g, d, d, &[2, 3, 4], 2, 1))));
    v.push((None, N::SumDims(ReduceDimsOpIr { input: g.inp(&[2, 3, 4], d), out: g.out(&[1, 3, 1], d), axes: vec![0, 2] })));
    v.push((None, N::Prod(red(g, d, &[3, 3]))));
    v.push((None, N::ProdDim(rdim(g, d, d, &[3, 5], 0, 1))));
    v.push((None, N::Greater(cmp(g, d, &[2, 3], &[2, 3], &[2, 3]))));
    v.push((None, N::GreaterElem(cmps(g, d, &[2, 3]))));
    v.push((None, N::GreaterEqual(cmp(g, d, &[4], &[1], &[4]))));
    v.push((None, N::GreaterEqualElem(cmps(g, d, &[]))));
    v.push((None, N::Lower(cmp(g, d, &[2, 1], &[1, 2], &[2, 2]))));
    v.push((None, N::LowerElem(cmps(g, d, &[5]))));
    v.push((None, N::LowerEqual(cmp(g, d, &[3, 3], &[3, 3], &[3, 3]))));
    v.push((None, N::LowerEqualElem(cmps(g, d, &[1, 2, 3]))));
    let di = g.idt();
    v.push((None, N::ArgMax(rdim(g, d, di, &[4, 7], 1, 1))));
    let di = g.idt();
    v.push((None, N::ArgTopK(rdim(g, d, di, &[4, 7], 1, 3))));
    v.push((None, N::TopK(rdim(g, d, d, &[2, 9], 1, 4))));
    let di = g.idt();
    v.push((
        None,
        N::TopKWithIndices(TopKWithIndicesOpIr {
            tensor: g.inp(&[2, 9], d),
            dim: 1,
            k: 4,
            out: g.out(&[2, 4], d),
            out_indices: g.out(&[2, 4], di),
        }),
    ));
    let di = g.idt();
    v.push((None, N::ArgMin(rdim(g, d, di, &[6, 2], 0, 1))));
    v.push((None, N::Max(red(g, d, &[6, 2]))));
    let di = g.idt();
    v.push((
        None,
        N::MaxDimWithIndices(ReduceDimWithIndicesOpIr {
            tensor: g.inp(&[3, 5], d),
            dim: 1,
            out: g.out(&[3, 1], d),
            out_indices: g.out(&[3, 1], di),
        }),
    ));
    let di = g.idt();
    v.push((
        None,
        N::MinDimWithIndices(ReduceDimWithIndicesOpIr {
            tensor: g.inp(&[3, 5], d),
            dim: 0,
            out: g.out(&[1, 5], d),
            out_indices: g.out(&[1, 5], di),
        }),
    ));
    v.push((None, N::Min(red(g, d, &[0]))));
    v.push((None, N::MaxDim(rdim(g, d, d, &[2, 8], 1, 1))));
    v.push((None, N::MinDim(rdim(g, d, d, &[2, 8], 0, 1))));
    v.push((None, N::MaxAbs(red(g, d, &[10]))));
    v.push((None, N::MaxAbsDim(rdim(g, d, d, &[3, 4, 5], 2, 1))));
    let (min, max) = (g.sc(d), g.sc(d));
    v.push((None, N::Clamp(ClampOpIr { tensor: g.inp(&[4, 4], d), min, max, out: g.out(&[4, 4], d) })));
    let dists = [
        (None, Distribution::Default),
        (l("bernoulli"), Distribution::Bernoulli(0.3)),
        (l("uniform"), Distribution::Uniform(-10.0, 10.0)),
        (l("normal"), Distribution::Normal(0.0, 2.5)),
    ];
    for (label, distribution) in dists {
        v.push((label, N::IntRandom(RandomOpIr { out: g.out(&[3, 4], d), distribution })));
    }
    v.push((None, N::Powi(bin(g, d, &[2, 3], &[2, 3], &[2, 3]))));
    let rhs = if int { g.sc(d) } else { ScalarIr::Int(3) };
    v.push((None, N::PowiScalar(ScalarOpIr { lhs: g.inp(&[2, 3], d), rhs, out: g.out(&[2, 3], d) })));
    v.push((None, N::CumSum(dimop(g, d, &[4, 5], 1))));
    v.push((None, N::CumProd(dimop(g, d, &[4, 5], 0))));
    v.push((None, N::CumMin(dimop(g, d, &[2, 3, 4], 2))));
    v.push((None, N::CumMax(dimop(g, d, &[6], 0))));
    v.push((None, N::Neg(UnaryOpIr { input: g.inp(&[2, 3], d), out: g.out(&[2, 3], d) })));
    v.push((None, N::Sign(UnaryOpIr { input: g.inp(&[2, 3], d), out: g.out(&[2, 3], d) })));
    v.push((None, N::ClampMin(sca(g, d, &[3, 3]))));
    v.push((None, N::ClampMax(sca(g, d, &[3, 3]))));
    v.push((None, N::Sort(SortOpIr { input: g.inp(&[4, 6], d), dim: 1, descending: false, out: g.out(&[4, 6], d) })));
    let di = g.idt();
    v.push((
        None,
        N::SortWithIndices(SortWithIndicesOpIr {
            input: g.inp(&[4, 6], d),
            dim: 0,
            descending: true,
            out: g.out(&[4, 6], d),
            out_indices: g.out(&[4, 6], di),
        }),
    ));
    let di = g.idt();
    v.push((None, N::ArgSort(SortOpIr { input: g.inp(&[5], d), dim: 0, descending: true, out: g.out(&[5], di) })));
    let s = g.sc(d);
    for (label, mode) in [(None, PadModeIr::Constant(s)), (l("reflect"), PadModeIr::Reflect), (l("edge"), PadModeIr::Edge)] {
        v.push((
            label,
            N::Pad(PadOpIr { input: g.inp(&[2, 3, 4], d), out: g.out(&[2, 6, 9], d), padding: vec![(0, 0), (1, 2), (5, 0)], mode }),
        ));
    }
    v
}

/// Every `FloatOperationIr` variant, each with its outer dtype.
pub fn float_ops(g: &mut G) -> Vec<(Option<String>, DType, FloatOperationIr)> {
    use FloatOperationIr as F;
    let mut v = Vec::new();
    macro_rules! unary {
        ($($variant:ident),*) => {$(
            let d = g.fd();
            v.push((None, d, F::$variant(UnaryOpIr { input: g.inp(&[2, 3], d), out: g.out(&[2, 3], d) })));
        )*};
    }
    unary!(Exp, Log, Log1p, Erf);
    let d = g.fd();
    let s = g.sc(d);
    v.push((None, d, F::PowfScalar(ScalarOpIr { lhs: g.inp(&[4], d), rhs: s, out: g.out(&[4], d) })));
    unary!(Sqrt, Cos, Cosh, Sin, Sinh, Tan, Tanh, ArcCos, ArcCosh, ArcSin, ArcSinh, ArcTan, ArcTanh);
    let d = g.fd();
    v.push((None, d, F::ArcTan2(BinaryOpIr { lhs: g.inp(&[2, 3], d), rhs: g.inp(&[2, 3], d), out: g.out(&[2, 3], d) })));
    unary!(Round, Floor, Ceil, Trunc);
    let d = g.fd();
    let di = g.idt();
    v.push((None, d, F::IntoInt(CastOpIr { input: g.inp(&[3, 3], d), out: g.out(&[3, 3], di) })));
    let d = g.fd();
    v.push((None, d, F::Matmul(MatmulOpIr { lhs: g.inp(&[2, 3, 4], d), rhs: g.inp(&[2, 4, 5], d), out: g.out(&[2, 3, 5], d) })));
    let d = g.fd();
    v.push((l("broadcast"), d, F::Matmul(MatmulOpIr { lhs: g.inp(&[7, 1, 3, 4], d), rhs: g.inp(&[2, 4, 5], d), out: g.out(&[7, 2, 3, 5], d) })));
    let d = g.fd();
    v.push((None, d, F::Cross(CrossOpIr { lhs: g.inp(&[4, 3], d), rhs: g.inp(&[4, 3], d), out: g.out(&[4, 3], d), dim: 1 })));
    for (label, distribution) in [
        (None, Distribution::Default),
        (l("bernoulli"), Distribution::Bernoulli(0.125)),
        (l("uniform"), Distribution::Uniform(-0.5, 1.75)),
        (l("normal"), Distribution::Normal(-1.0, 0.02)),
    ] {
        let d = g.fd();
        v.push((label, d, F::Random(RandomOpIr { out: g.out(&[2, 3, 2], d), distribution })));
    }
    unary!(Recip);
    for variant in [0, 1] {
        let d = g.fd();
        let db = g.bd();
        let op = UnaryOpIr { input: g.inp(&[2, 3], d), out: g.out(&[2, 3], db) };
        v.push((None, d, if variant == 0 { F::IsNan(op) } else { F::IsInf(op) }));
    }
    // Quantize / Dequantize over several schemes.
    for (i, (label, scheme)) in schemes().into_iter().enumerate() {
        let d = [DType::F32, DType::F16, DType::BF16][i % 3];
        let blocks: Vec<usize> = match scheme.block_size() {
            None => vec![1],
            Some(block) => block.num_blocks(&[2, 8, 64]),
        };
        let global = if burn_std::global_scale_dtype(&scheme).is_some() {
            Some(g.inp(&[1], DType::F32))
        } else {
            None
        };
        let name = if i == 0 { None } else { l(label) };
        v.push((
            name.clone(),
            d,
            F::Quantize(QuantizeOpIr {
                tensor: g.inp(&[2, 8, 64], d),
                qparams: QuantizationParametersIr { scales: g.inp(&blocks, DType::F32), global },
                scheme,
                out: g.out(&[2, 8, 64], DType::QFloat(scheme)),
            }),
        ));
        if i % 3 == 0 {
            v.push((
                name,
                d,
                F::Dequantize(DequantizeOpIr { input: g.inp(&[2, 8, 64], DType::QFloat(scheme)), out: g.out(&[2, 8, 64], d) }),
            ));
        }
    }
    for (i, (mode, padding_mode, align_corners)) in [
        (InterpolateModeIr::Bilinear, GridSamplePaddingModeIr::Zeros, false),
        (InterpolateModeIr::Nearest, GridSamplePaddingModeIr::Border, true),
        (InterpolateModeIr::Bicubic, GridSamplePaddingModeIr::Reflection, false),
    ]
    .into_iter()
    .enumerate()
    {
        let d = g.fd();
        let label = [None, l("nearest-border"), l("bicubic-reflection")][i].clone();
        v.push((
            label,
            d,
            F::GridSample2d(GridSample2dOpIr {
                tensor: g.inp(&[1, 3, 8, 8], d),
                grid: g.inp(&[1, 4, 4, 2], d),
                options: GridSampleOptionsIr { mode, padding_mode, align_corners },
                out: g.out(&[1, 3, 4, 4], d),
            }),
        ));
    }
    let d = g.fd();
    v.push((None, d, F::Powf(BinaryOpIr { lhs: g.inp(&[2, 3], d), rhs: g.inp(&[1, 3], d), out: g.out(&[2, 3], d) })));
    let d = g.fd();
    v.push((None, d, F::Hypot(BinaryOpIr { lhs: g.inp(&[5], d), rhs: g.inp(&[5], d), out: g.out(&[5], d) })));
    #[cfg(burn_023)]
    {
        let d = g.fd();
        v.push((None, d, F::Fmod(BinaryOpIr { lhs: g.inp(&[2, 3], d), rhs: g.inp(&[1, 3], d), out: g.out(&[2, 3], d) })));
        let d = g.fd();
        let s = g.sc(d);
        v.push((None, d, F::FmodScalar(ScalarOpIr { lhs: g.inp(&[4], d), rhs: s, out: g.out(&[4], d) })));
        let d = g.fd();
        v.push((l("rank0-negative"), d, F::FmodScalar(ScalarOpIr { lhs: g.inp(&[], d), rhs: ScalarIr::Float(-2.5), out: g.out(&[], d) })));
    }
    v
}

/// Every `IntOperationIr` variant.
pub fn int_ops(g: &mut G) -> Vec<(Option<String>, IntOperationIr)> {
    use IntOperationIr as I;
    let mut v = Vec::new();
    let d = g.idt();
    let df = g.fd();
    v.push((None, I::IntoFloat(CastOpIr { input: g.inp(&[2, 3], d), out: g.out(&[2, 3], df) })));
    macro_rules! bin {
        ($variant:ident) => {
            let d = g.idt();
            v.push((None, I::$variant(BinaryOpIr { lhs: g.inp(&[4, 2], d), rhs: g.inp(&[4, 2], d), out: g.out(&[4, 2], d) })));
        };
    }
    macro_rules! sca {
        ($variant:ident) => {
            let d = g.idt();
            let s = g.sc(d);
            v.push((None, I::$variant(ScalarOpIr { lhs: g.inp(&[3], d), rhs: s, out: g.out(&[3], d) })));
        };
    }
    bin!(BitwiseAnd);
    sca!(BitwiseAndScalar);
    bin!(BitwiseOr);
    sca!(BitwiseOrScalar);
    bin!(BitwiseXor);
    sca!(BitwiseXorScalar);
    let d = g.idt();
    v.push((None, I::BitwiseNot(UnaryOpIr { input: g.inp(&[2, 2, 2], d), out: g.out(&[2, 2, 2], d) })));
    bin!(BitwiseLeftShift);
    sca!(BitwiseLeftShiftScalar);
    bin!(BitwiseRightShift);
    sca!(BitwiseRightShiftScalar);
    let d = g.idt();
    v.push((None, I::Matmul(MatmulOpIr { lhs: g.inp(&[3, 4], d), rhs: g.inp(&[4, 2], d), out: g.out(&[3, 2], d) })));
    v
}

/// Every `BoolOperationIr` variant.
pub fn bool_ops(g: &mut G) -> Vec<(Option<String>, BoolOperationIr)> {
    use BoolOperationIr as Bo;
    let mut v = Vec::new();
    let (d, df) = (g.bd(), g.fd());
    v.push((None, Bo::IntoFloat(CastOpIr { input: g.inp(&[2, 3], d), out: g.out(&[2, 3], df) })));
    let (d, di) = (g.bd(), g.idt());
    v.push((None, Bo::IntoInt(CastOpIr { input: g.inp(&[2, 3], d), out: g.out(&[2, 3], di) })));
    let d = g.bd();
    v.push((None, Bo::Not(UnaryOpIr { input: g.inp(&[0, 5], d), out: g.out(&[0, 5], d) })));
    let d = g.bd();
    v.push((None, Bo::And(BinaryOpIr { lhs: g.inp(&[4], d), rhs: g.inp(&[4], d), out: g.out(&[4], d) })));
    let d = g.bd();
    v.push((None, Bo::Or(BinaryOpIr { lhs: g.inp(&[2, 1], d), rhs: g.inp(&[1, 2], d), out: g.out(&[2, 2], d) })));
    let d = g.bd();
    v.push((None, Bo::Xor(BinaryOpIr { lhs: g.inp(&[], d), rhs: g.inp(&[], d), out: g.out(&[], d) })));
    v
}

/// Every `ActivationOperationIr` variant.
pub fn activation_ops(g: &mut G) -> Vec<(Option<String>, ActivationOperationIr)> {
    use ActivationOperationIr as A;
    let mut v = Vec::new();
    macro_rules! unary {
        ($variant:ident) => {
            let d = g.fd();
            v.push((None, A::$variant(UnaryOpIr { input: g.inp(&[2, 8], d), out: g.out(&[2, 8], d) })));
        };
    }
    macro_rules! bin {
        ($variant:ident) => {
            let d = g.fd();
            v.push((None, A::$variant(BinaryOpIr { lhs: g.inp(&[2, 8], d), rhs: g.inp(&[2, 8], d), out: g.out(&[2, 8], d) })));
        };
    }
    macro_rules! dim {
        ($variant:ident, $axis:expr) => {
            let d = g.fd();
            v.push((None, A::$variant(DimOpIr { input: g.inp(&[3, 4, 5], d), out: g.out(&[3, 4, 5], d), axis: $axis })));
        };
    }
    unary!(Relu);
    bin!(ReluBackward);
    let d = g.fd();
    v.push((None, A::LeakyRelu(ScalarOpIr { lhs: g.inp(&[2, 8], d), rhs: ScalarIr::Float(0.01), out: g.out(&[2, 8], d) })));
    let d = g.fd();
    v.push((None, A::PRelu(BinaryOpIr { lhs: g.inp(&[2, 8], d), rhs: g.inp(&[8], d), out: g.out(&[2, 8], d) })));
    unary!(Gelu);
    bin!(GeluBackward);
    unary!(Sigmoid);
    bin!(SigmoidBackward);
    let d = g.fd();
    v.push((
        None,
        A::HardSigmoid(HardSigmoidOpIr {
            tensor: g.inp(&[2, 8], d),
            alpha: ScalarIr::Float(1.0 / 6.0),
            beta: ScalarIr::Float(0.5),
            out: g.out(&[2, 8], d),
        }),
    ));
    unary!(LogSigmoid);
    bin!(LogSigmoidBackward);
    dim!(Softmax, 2);
    dim!(LogSoftmax, 1);
    dim!(Softmin, 0);
    v
}

/// Every `ModuleOperationIr` variant.
pub fn module_ops(g: &mut G) -> Vec<(Option<String>, ModuleOperationIr)> {
    use ModuleOperationIr as M;
    let mut v: Vec<(Option<String>, ModuleOperationIr)> = Vec::new();

    let d = g.fd();
    v.push((
        None,
        M::BatchNorm(BatchNormOpIr {
            x: g.inp(&[2, 3, 4, 4], d),
            gamma: g.inp(&[3], d),
            beta: g.inp(&[3], d),
            mean: g.inp(&[3], d),
            variance: g.inp(&[3], d),
            epsilon: ScalarIr::Float(1e-5),
            out: g.out(&[2, 3, 4, 4], d),
        }),
    ));
    let (d, di) = (g.fd(), g.idt());
    v.push((None, M::Embedding(EmbeddingOpIr { weights: g.inp(&[10, 4], d), indices: g.inp(&[2, 5], di), out: g.out(&[2, 5, 4], d) })));
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        M::EmbeddingBackward(EmbeddingBackwardOpIr {
            weights: g.inp(&[10, 4], d),
            out_grad: g.inp(&[2, 5, 4], d),
            indices: g.inp(&[2, 5], di),
            out: g.out(&[10, 4], d),
        }),
    ));
    let d = g.fd();
    v.push((None, M::Linear(LinearOpIr { x: g.inp(&[2, 3, 4], d), weight: g.inp(&[4, 5], d), bias: Some(g.inp(&[5], d)), out: g.out(&[2, 3, 5], d) })));
    let d = g.fd();
    v.push((l("no-bias"), M::Linear(LinearOpIr { x: g.inp(&[6, 4], d), weight: g.inp(&[4, 5], d), bias: None, out: g.out(&[6, 5], d) })));
    let d = g.fd();
    v.push((
        None,
        M::LinearXBackward(LinearXBackwardOpIr { weight: g.inp(&[4, 5], d), output_grad: g.inp(&[6, 5], d), out: g.out(&[6, 4], d) }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::LinearWeightBackward(LinearWeightBackwardOpIr { x: g.inp(&[6, 4], d), output_grad: g.inp(&[6, 5], d), out: g.out(&[4, 5], d) }),
    ));
    let d = g.fd();
    v.push((None, M::LinearBiasBackward(LinearBiasBackwardOpIr { output_grad: g.inp(&[6, 5], d), out: g.out(&[5], d) })));

    // Conv1d: asymmetric padding.
    let c1 = Conv1dOptionsIr { stride: [2], padding: [(1, 3)], dilation: [1], groups: 1 };
    let d = g.fd();
    v.push((
        None,
        M::Conv1d(Conv1dOpIr {
            x: g.inp(&[2, 4, 16], d),
            weight: g.inp(&[8, 4, 3], d),
            bias: Some(g.inp(&[8], d)),
            options: c1.clone(),
            out: g.out(&[2, 8, 9], d),
        }),
    ));
    let d = g.fd();
    v.push((
        l("no-bias-groups"),
        M::Conv1d(Conv1dOpIr {
            x: g.inp(&[1, 4, 10], d),
            weight: g.inp(&[4, 2, 3], d),
            bias: None,
            options: Conv1dOptionsIr { stride: [1], padding: [(0, 0)], dilation: [2], groups: 2 },
            out: g.out(&[1, 4, 6], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::Conv1dXBackward(Conv1dXBackwardOpIr {
            x: g.inp(&[2, 4, 16], d),
            weight: g.inp(&[8, 4, 3], d),
            output_grad: g.inp(&[2, 8, 9], d),
            options: c1.clone(),
            out: g.out(&[2, 4, 16], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::Conv1dWeightBackward(Conv1dWeightBackwardOpIr {
            x: g.inp(&[2, 4, 16], d),
            weight: g.inp(&[8, 4, 3], d),
            output_grad: g.inp(&[2, 8, 9], d),
            options: c1,
            out: g.out(&[8, 4, 3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::Conv1dBiasBackward(Conv1dBiasBackwardOpIr {
            x: g.inp(&[2, 4, 16], d),
            bias: g.inp(&[8], d),
            output_grad: g.inp(&[2, 8, 9], d),
            out: g.out(&[8], d),
        }),
    ));

    // Conv2d: asymmetric padding.
    let c2 = Conv2dOptionsIr { stride: [1, 2], padding: [(1, 2), (0, 3)], dilation: [1, 2], groups: 1 };
    let d = g.fd();
    v.push((
        None,
        M::Conv2d(Conv2dOpIr {
            x: g.inp(&[1, 3, 8, 8], d),
            weight: g.inp(&[6, 3, 3, 3], d),
            bias: Some(g.inp(&[6], d)),
            options: c2.clone(),
            out: g.out(&[1, 6, 9, 4], d),
        }),
    ));
    let d = g.fd();
    v.push((
        l("no-bias"),
        M::Conv2d(Conv2dOpIr {
            x: g.inp(&[2, 4, 5, 5], d),
            weight: g.inp(&[4, 1, 3, 3], d),
            bias: None,
            options: Conv2dOptionsIr { stride: [1, 1], padding: [(1, 1), (1, 1)], dilation: [1, 1], groups: 4 },
            out: g.out(&[2, 4, 5, 5], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::Conv2dXBackward(Conv2dXBackwardOpIr {
            x: g.inp(&[1, 3, 8, 8], d),
            weight: g.inp(&[6, 3, 3, 3], d),
            output_grad: g.inp(&[1, 6, 9, 4], d),
            options: c2.clone(),
            out: g.out(&[1, 3, 8, 8], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::Conv2dWeightBackward(Conv2dWeightBackwardOpIr {
            x: g.inp(&[1, 3, 8, 8], d),
            weight: g.inp(&[6, 3, 3, 3], d),
            output_grad: g.inp(&[1, 6, 9, 4], d),
            options: c2,
            out: g.out(&[6, 3, 3, 3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::Conv2dBiasBackward(Conv2dBiasBackwardOpIr {
            x: g.inp(&[1, 3, 8, 8], d),
            bias: g.inp(&[6], d),
            output_grad: g.inp(&[1, 6, 9, 4], d),
            out: g.out(&[6], d),
        }),
    ));

    // Conv3d: symmetric padding only.
    let c3 = Conv3dOptionsIr { stride: [1, 2, 2], padding: [0, 1, 1], dilation: [1, 1, 2], groups: 1 };
    let d = g.fd();
    v.push((
        None,
        M::Conv3d(Conv3dOpIr {
            x: g.inp(&[1, 2, 4, 8, 8], d),
            weight: g.inp(&[4, 2, 1, 3, 3], d),
            bias: Some(g.inp(&[4], d)),
            options: c3.clone(),
            out: g.out(&[1, 4, 4, 4, 3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::Conv3dXBackward(Conv3dXBackwardOpIr {
            x: g.inp(&[1, 2, 4, 8, 8], d),
            weight: g.inp(&[4, 2, 1, 3, 3], d),
            output_grad: g.inp(&[1, 4, 4, 4, 3], d),
            options: c3.clone(),
            out: g.out(&[1, 2, 4, 8, 8], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::Conv3dWeightBackward(Conv3dWeightBackwardOpIr {
            x: g.inp(&[1, 2, 4, 8, 8], d),
            weight: g.inp(&[4, 2, 1, 3, 3], d),
            output_grad: g.inp(&[1, 4, 4, 4, 3], d),
            options: c3,
            out: g.out(&[4, 2, 1, 3, 3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::Conv3dBiasBackward(Conv3dBiasBackwardOpIr {
            x: g.inp(&[1, 2, 4, 8, 8], d),
            bias: g.inp(&[4], d),
            output_grad: g.inp(&[1, 4, 4, 4, 3], d),
            out: g.out(&[4], d),
        }),
    ));

    // Deformable conv2d.
    let dopt = DeformableConv2dOptionsIr { stride: [1, 1], padding: [1, 0], dilation: [1, 2], weight_groups: 1, offset_groups: 2 };
    let d = g.fd();
    v.push((
        None,
        M::DeformableConv2d(Box::new(DeformConv2dOpIr {
            x: g.inp(&[1, 4, 6, 6], d),
            offset: g.inp(&[1, 36, 6, 2], d),
            weight: g.inp(&[2, 4, 3, 3], d),
            mask: Some(g.inp(&[1, 18, 6, 2], d)),
            bias: Some(g.inp(&[2], d)),
            options: dopt.clone(),
            out: g.out(&[1, 2, 6, 2], d),
        })),
    ));
    let d = g.fd();
    v.push((
        l("no-mask-no-bias"),
        M::DeformableConv2d(Box::new(DeformConv2dOpIr {
            x: g.inp(&[1, 4, 6, 6], d),
            offset: g.inp(&[1, 36, 6, 2], d),
            weight: g.inp(&[2, 4, 3, 3], d),
            mask: None,
            bias: None,
            options: dopt.clone(),
            out: g.out(&[1, 2, 6, 2], d),
        })),
    ));
    let d = g.fd();
    v.push((
        None,
        M::DeformableConv2dBackward(Box::new(DeformConv2dBackwardOpIr {
            x: g.inp(&[1, 4, 6, 6], d),
            offset: g.inp(&[1, 36, 6, 2], d),
            weight: g.inp(&[2, 4, 3, 3], d),
            mask: Some(g.inp(&[1, 18, 6, 2], d)),
            bias: None,
            out_grad: g.inp(&[1, 2, 6, 2], d),
            options: dopt,
            input_grad: g.out(&[1, 4, 6, 6], d),
            offset_grad: g.out(&[1, 36, 6, 2], d),
            weight_grad: g.out(&[2, 4, 3, 3], d),
            mask_grad: Some(g.out(&[1, 18, 6, 2], d)),
            bias_grad: None,
        })),
    ));

    // Transposed convolutions.
    let t1 = ConvTranspose1dOptionsIr { stride: [2], padding: [1], padding_out: [1], dilation: [1], groups: 1 };
    let t2 = ConvTranspose2dOptionsIr { stride: [2, 1], padding: [1, 0], padding_out: [1, 0], dilation: [1, 1], groups: 2 };
    let t3 = ConvTranspose3dOptionsIr { stride: [1, 2, 2], padding: [0, 1, 1], padding_out: [0, 1, 0], dilation: [1, 1, 1], groups: 1 };
    let d = g.fd();
    v.push((
        None,
        M::ConvTranspose1d(ConvTranspose1dOpIr {
            x: g.inp(&[2, 4, 8], d),
            weight: g.inp(&[4, 3, 3], d),
            bias: Some(g.inp(&[3], d)),
            options: t1.clone(),
            out: g.out(&[2, 3, 16], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::ConvTranspose2d(ConvTranspose2dOpIr {
            x: g.inp(&[1, 4, 5, 5], d),
            weight: g.inp(&[4, 2, 3, 3], d),
            bias: None,
            options: t2.clone(),
            out: g.out(&[1, 4, 10, 7], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::ConvTranspose3d(ConvTranspose3dOpIr {
            x: g.inp(&[1, 2, 2, 4, 4], d),
            weight: g.inp(&[2, 3, 1, 3, 3], d),
            bias: Some(g.inp(&[3], d)),
            options: t3.clone(),
            out: g.out(&[1, 3, 2, 8, 7], d),
        }),
    ));

    // Pools.
    let d = g.fd();
    v.push((
        None,
        M::AvgPool1d(AvgPool1dOpIr { x: g.inp(&[2, 3, 10], d), kernel_size: 3, stride: 2, padding: 1, #[cfg(burn_023)] dilation: 1, count_include_pad: true, ceil_mode: false, out: g.out(&[2, 3, 5], d) }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::AvgPool2d(AvgPool2dOpIr {
            x: g.inp(&[1, 3, 7, 9], d),
            kernel_size: [3, 2],
            stride: [2, 2],
            padding: [1, 0],
            #[cfg(burn_023)]
            dilation: [1, 1],
            count_include_pad: false,
            ceil_mode: true,
            out: g.out(&[1, 3, 4, 5], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::AvgPool1dBackward(AvgPool1dBackwardOpIr {
            x: g.inp(&[2, 3, 10], d),
            grad: g.inp(&[2, 3, 5], d),
            kernel_size: 3,
            stride: 2,
            padding: 1,
            #[cfg(burn_023)]
            dilation: 1,
            count_include_pad: true,
            ceil_mode: false,
            out: g.out(&[2, 3, 10], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::AvgPool2dBackward(AvgPool2dBackwardOpIr {
            x: g.inp(&[1, 3, 7, 9], d),
            grad: g.inp(&[1, 3, 4, 5], d),
            kernel_size: [3, 2],
            stride: [2, 2],
            padding: [1, 0],
            #[cfg(burn_023)]
            dilation: [1, 1],
            count_include_pad: false,
            ceil_mode: true,
            out: g.out(&[1, 3, 7, 9], d),
        }),
    ));
    #[cfg(burn_023)]
    pools_023(g, &mut v);
    let d = g.fd();
    v.push((None, M::AdaptiveAvgPool1d(AdaptiveAvgPool1dOpIr { x: g.inp(&[2, 3, 10], d), output_size: 4, out: g.out(&[2, 3, 4], d) })));
    let d = g.fd();
    v.push((None, M::AdaptiveAvgPool2d(AdaptiveAvgPool2dOpIr { x: g.inp(&[1, 3, 7, 9], d), output_size: [3, 1], out: g.out(&[1, 3, 3, 1], d) })));
    let d = g.fd();
    v.push((
        None,
        M::AdaptiveAvgPool1dBackward(AdaptiveAvgPool1dBackwardOpIr { x: g.inp(&[2, 3, 10], d), grad: g.inp(&[2, 3, 4], d), out: g.out(&[2, 3, 10], d) }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::AdaptiveAvgPool2dBackward(AdaptiveAvgPool2dBackwardOpIr {
            x: g.inp(&[1, 3, 7, 9], d),
            grad: g.inp(&[1, 3, 3, 1], d),
            out: g.out(&[1, 3, 7, 9], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::AdaptiveAvgPool3d(AdaptiveAvgPool3dOpIr { x: g.inp(&[1, 2, 4, 6, 8], d), output_size: [2, 3, 1], out: g.out(&[1, 2, 2, 3, 1], d) }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::AdaptiveAvgPool3dBackward(AdaptiveAvgPool3dBackwardOpIr {
            x: g.inp(&[1, 2, 4, 6, 8], d),
            grad: g.inp(&[1, 2, 2, 3, 1], d),
            out: g.out(&[1, 2, 4, 6, 8], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::MaxPool1d(MaxPool1dOpIr { x: g.inp(&[2, 3, 10], d), kernel_size: 2, stride: 2, padding: 0, dilation: 1, ceil_mode: true, out: g.out(&[2, 3, 5], d) }),
    ));
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        M::MaxPool1dWithIndices(MaxPool1dWithIndicesOpIr {
            x: g.inp(&[2, 3, 10], d),
            kernel_size: 3,
            stride: 1,
            padding: 1,
            dilation: 2,
            ceil_mode: false,
            out: g.out(&[2, 3, 8], d),
            out_indices: g.out(&[2, 3, 8], di),
        }),
    ));
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        M::MaxPool1dWithIndicesBackward(MaxPool1dWithIndicesBackwardOpIr {
            x: g.inp(&[2, 3, 10], d),
            grad: g.inp(&[2, 3, 8], d),
            indices: g.inp(&[2, 3, 8], di),
            kernel_size: 3,
            stride: 1,
            padding: 1,
            dilation: 2,
            ceil_mode: false,
            out: g.out(&[2, 3, 10], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::MaxPool2d(MaxPool2dOpIr {
            x: g.inp(&[1, 2, 8, 6], d),
            kernel_size: [2, 3],
            stride: [2, 1],
            padding: [0, 1],
            dilation: [1, 1],
            ceil_mode: false,
            out: g.out(&[1, 2, 4, 6], d),
        }),
    ));
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        M::MaxPool2dWithIndices(MaxPool2dWithIndicesOpIr {
            x: g.inp(&[1, 2, 8, 6], d),
            kernel_size: [2, 2],
            stride: [2, 2],
            padding: [0, 0],
            dilation: [1, 1],
            ceil_mode: true,
            out: g.out(&[1, 2, 4, 3], d),
            out_indices: g.out(&[1, 2, 4, 3], di),
        }),
    ));
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        M::MaxPool2dWithIndicesBackward(MaxPool2dWithIndicesBackwardOpIr {
            x: g.inp(&[1, 2, 8, 6], d),
            grad: g.inp(&[1, 2, 4, 3], d),
            indices: g.inp(&[1, 2, 4, 3], di),
            kernel_size: [2, 2],
            stride: [2, 2],
            padding: [0, 0],
            dilation: [1, 1],
            ceil_mode: true,
            out: g.out(&[1, 2, 8, 6], d),
        }),
    ));

    // Interpolate: every mode once.
    for (i, mode) in [
        InterpolateModeIr::Nearest,
        InterpolateModeIr::NearestExact,
        InterpolateModeIr::Bilinear,
        InterpolateModeIr::Bicubic,
        InterpolateModeIr::Lanczos3,
    ]
    .into_iter()
    .enumerate()
    {
        let label = [None, l("nearest-exact"), l("bilinear"), l("bicubic"), l("lanczos3")][i].clone();
        let d = g.fd();
        v.push((
            label,
            M::Interpolate(InterpolateOpIr {
                x: g.inp(&[1, 3, 4, 4], d),
                output_size: [8, 6],
                #[cfg(not(burn_023))]
                options: InterpolateOptionsIr { mode, align_corners: i % 2 == 1 },
                #[cfg(burn_023)]
                options: interpolate_options_023(mode, i % 2 == 1, Some([8, 6])),
                out: g.out(&[1, 3, 8, 6], d),
            }),
        ));
    }
    let d = g.fd();
    v.push((
        None,
        M::InterpolateBackward(InterpolateBackwardOpIr {
            x: g.inp(&[1, 3, 4, 4], d),
            grad: g.inp(&[1, 3, 8, 6], d),
            output_size: [8, 6],
            #[cfg(not(burn_023))]
            options: InterpolateOptionsIr { mode: InterpolateModeIr::Bilinear, align_corners: true },
            #[cfg(burn_023)]
            options: interpolate_options_023(InterpolateModeIr::Bilinear, true, Some([8, 6])),
            out: g.out(&[1, 3, 4, 4], d),
        }),
    ));
    #[cfg(burn_023)]
    interpolate_023(g, &mut v);

    // Attention: options with None and Some.
    let (d, db) = (g.fd(), g.bd());
    v.push((
        None,
        M::Attention(AttentionOpIr {
            query: g.inp(&[2, 4, 16, 8], d),
            key: g.inp(&[2, 4, 16, 8], d),
            value: g.inp(&[2, 4, 16, 8], d),
            mask: Some(g.inp(&[2, 1, 16, 16], db)),
            attn_bias: None,
            options: AttentionOptionsIr { scale: None, softcap: None, is_causal: false, #[cfg(burn_023)] causal_alignment: CausalAlignment::BottomRight },
            out: g.out(&[2, 4, 16, 8], d),
        }),
    ));
    let d = g.fd();
    v.push((
        l("causal-scale-softcap-bias"),
        M::Attention(AttentionOpIr {
            query: g.inp(&[1, 2, 5, 4], d),
            key: g.inp(&[1, 2, 7, 4], d),
            value: g.inp(&[1, 2, 7, 3], d),
            mask: None,
            attn_bias: Some(g.inp(&[1, 2, 5, 7], d)),
            options: AttentionOptionsIr { scale: Some(ScalarIr::Float(0.125)), softcap: Some(ScalarIr::Float(30.0)), is_causal: true, #[cfg(burn_023)] causal_alignment: CausalAlignment::TopLeft },
            out: g.out(&[1, 2, 5, 3], d),
        }),
    ));
    #[cfg(burn_023)]
    attention_023(g, &mut v);

    // CTC loss.
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        M::CtcLoss(CtcLossOpIr {
            log_probs: g.inp(&[50, 2, 20], d),
            targets: g.inp(&[2, 30], di),
            input_lengths: g.inp(&[2], di),
            target_lengths: g.inp(&[2], di),
            blank: 0,
            out: g.out(&[2], d),
        }),
    ));
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        M::CtcLossBackward(CtcLossBackwardOpIr {
            log_probs: g.inp(&[50, 2, 20], d),
            targets: g.inp(&[2, 30], di),
            input_lengths: g.inp(&[2], di),
            target_lengths: g.inp(&[2], di),
            grad_loss: g.inp(&[2], d),
            blank: 19,
            out: g.out(&[50, 2, 20], d),
        }),
    ));

    // Layer norm.
    let d = g.fd();
    v.push((
        None,
        M::LayerNorm(LayerNormOpIr {
            input: g.inp(&[2, 5, 16], d),
            gamma: g.inp(&[16], d),
            beta: Some(g.inp(&[16], d)),
            epsilon: ScalarIr::Float(1e-6),
            out: g.out(&[2, 5, 16], d),
        }),
    ));
    let d = g.fd();
    v.push((
        l("no-beta"),
        M::LayerNorm(LayerNormOpIr {
            input: g.inp(&[3, 8], d),
            gamma: g.inp(&[8], d),
            beta: None,
            epsilon: ScalarIr::Float(1e-5),
            out: g.out(&[3, 8], d),
        }),
    ));

    // Unfold4d.
    let d = g.fd();
    v.push((
        None,
        M::Unfold4d(Unfold4dOpIr {
            x: g.inp(&[1, 2, 5, 5], d),
            kernel_size: [3, 2],
            options: Unfold4dOptionsIr { stride: [1, 2], padding: [1, 0], dilation: [1, 1] },
            out: g.out(&[1, 12, 10], d),
        }),
    ));

    // Transposed-conv backward passes.
    let d = g.fd();
    v.push((
        None,
        M::ConvTranspose1dWeightBackward(ConvTranspose1dWeightBackwardOpIr {
            x: g.inp(&[2, 4, 8], d),
            weight: g.inp(&[4, 3, 3], d),
            output_grad: g.inp(&[2, 3, 16], d),
            options: t1,
            out: g.out(&[4, 3, 3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::ConvTranspose1dBiasBackward(ConvTranspose1dBiasBackwardOpIr {
            x: g.inp(&[2, 4, 8], d),
            bias: g.inp(&[3], d),
            output_grad: g.inp(&[2, 3, 16], d),
            out: g.out(&[3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::ConvTranspose2dWeightBackward(ConvTranspose2dWeightBackwardOpIr {
            x: g.inp(&[1, 4, 5, 5], d),
            weight: g.inp(&[4, 2, 3, 3], d),
            output_grad: g.inp(&[1, 4, 10, 7], d),
            options: t2,
            out: g.out(&[4, 2, 3, 3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::ConvTranspose2dBiasBackward(ConvTranspose2dBiasBackwardOpIr {
            x: g.inp(&[1, 4, 5, 5], d),
            bias: g.inp(&[4], d),
            output_grad: g.inp(&[1, 4, 10, 7], d),
            out: g.out(&[4], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::ConvTranspose3dWeightBackward(ConvTranspose3dWeightBackwardOpIr {
            x: g.inp(&[1, 2, 2, 4, 4], d),
            weight: g.inp(&[2, 3, 1, 3, 3], d),
            output_grad: g.inp(&[1, 3, 2, 8, 7], d),
            options: t3,
            out: g.out(&[2, 3, 1, 3, 3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::ConvTranspose3dBiasBackward(ConvTranspose3dBiasBackwardOpIr {
            x: g.inp(&[1, 2, 2, 4, 4], d),
            bias: g.inp(&[3], d),
            output_grad: g.inp(&[1, 3, 2, 8, 7], d),
            out: g.out(&[3], d),
        }),
    ));
    v
}

/// Every `DistributedOperationIr` variant.
#[cfg(not(burn_023))]
pub fn distributed_ops(g: &mut G) -> Vec<(Option<String>, DistributedOperationIr)> {
    let d = g.fd();
    let d2 = g.fd();
    vec![
        (
            None,
            DistributedOperationIr::AllReduce(AllReduceOpIr {
                tensor: g.inp(&[4, 4], d),
                out: g.out(&[4, 4], d),
                op: ReduceOperation::Sum,
                device_ids: vec![DeviceIdIr { type_id: 0, index_id: 0 }, DeviceIdIr { type_id: 0, index_id: 1 }],
            }),
        ),
        (
            l("mean"),
            DistributedOperationIr::AllReduce(AllReduceOpIr {
                tensor: g.inp(&[1024], d2),
                out: g.out(&[1024], d2),
                op: ReduceOperation::Mean,
                device_ids: vec![
                    DeviceIdIr { type_id: 3, index_id: 0 },
                    DeviceIdIr { type_id: 3, index_id: 7 },
                    DeviceIdIr { type_id: 65535, index_id: 300 },
                ],
            }),
        ),
        (l("empty-devices"), DistributedOperationIr::AllReduce(AllReduceOpIr {
            tensor: g.inp(&[], d),
            out: g.out(&[], d),
            op: ReduceOperation::Sum,
            device_ids: vec![],
        })),
        (None, DistributedOperationIr::SyncCollective),
    ]
}

/// The whole tree: every leaf at least once, wrapped in its `OperationIr` category.
pub fn all_ops(g: &mut G) -> Vec<Labeled> {
    let mut v: Vec<Labeled> = Vec::new();
    for (op, k) in [(0, K::Float), (1, K::Int), (2, K::Bool)] {
        for (label, b) in base_ops(g, k) {
            v.push((
                label,
                match op {
                    0 => OperationIr::BaseFloat(b),
                    1 => OperationIr::BaseInt(b),
                    _ => OperationIr::BaseBool(b),
                },
            ));
        }
    }
    // Numeric ops: every variant for float and for int, varying the dtype per pass.
    let d = g.fd();
    for (label, n) in numeric_ops(g, d) {
        v.push((label, OperationIr::NumericFloat(d, n)));
    }
    let di = g.idt();
    for (label, n) in numeric_ops(g, di) {
        v.push((label, OperationIr::NumericInt(di, n)));
    }
    // A second numeric pass per kind with other dtypes, for a few binary ops (dtype coverage).
    for d in FLOAT_DTYPES {
        let op = NumericOperationIr::Add(BinaryOpIr { lhs: g.inp(&[2], d), rhs: g.inp(&[2], d), out: g.out(&[2], d) });
        v.push((Some(format!("dtype-{d:?}")), OperationIr::NumericFloat(d, op)));
    }
    for d in INT_DTYPES {
        let s = g.sc(d);
        let op = NumericOperationIr::MulScalar(ScalarOpIr { lhs: g.inp(&[2], d), rhs: s, out: g.out(&[2], d) });
        v.push((Some(format!("dtype-{d:?}")), OperationIr::NumericInt(d, op)));
    }
    for (label, d, f) in float_ops(g) {
        v.push((label, OperationIr::Float(d, f)));
    }
    for (label, i) in int_ops(g) {
        v.push((label, OperationIr::Int(i)));
    }
    for (label, b) in bool_ops(g) {
        v.push((label, OperationIr::Bool(b)));
    }
    for (label, m) in module_ops(g) {
        v.push((label, OperationIr::Module(m)));
    }
    for (label, a) in activation_ops(g) {
        v.push((label, OperationIr::Activation(a)));
    }
    #[cfg(not(burn_023))]
    for (label, d) in distributed_ops(g) {
        v.push((label, OperationIr::Distributed(d)));
    }

    // Init / Custom / Drop.
    let d = g.fd();
    v.push((None, OperationIr::Init(InitOperationIr { out: g.out(&[2, 3], d) })));
    let di = g.idt();
    v.push((l("int"), OperationIr::Init(InitOperationIr { out: g.inp(&[0], di) })));
    let db = g.bd();
    v.push((l("bool-rank0"), OperationIr::Init(InitOperationIr { out: g.out(&[], db) })));
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        OperationIr::Custom(CustomOpIr {
            id: "torchbridge::fused_rms_norm".to_string(),
            inputs: vec![g.inp(&[2, 8], d), g.inp(&[8], d)],
            outputs: vec![g.out(&[2, 8], d), g.out(&[2], di)],
            scalars: vec![ScalarIr::Float(1e-6), ScalarIr::Int(-1), ScalarIr::UInt(u64::MAX), ScalarIr::Bool(true)],
        }),
    ));
    v.push((
        l("no-io"),
        OperationIr::Custom(CustomOpIr { id: String::new(), inputs: vec![], outputs: vec![], scalars: vec![] }),
    ));
    let d = g.fd();
    v.push((None, OperationIr::Drop(g.inp(&[2, 3], d))));
    let db = g.bd();
    v.push((l("rank0-bool"), OperationIr::Drop(TensorIr { id: TensorId::new(u64::MAX), shape: Shape::from(Vec::<usize>::new()), status: TensorStatus::ReadWrite, dtype: db })));
    let q = schemes()[2].1;
    v.push((l("qfloat"), OperationIr::Drop(g.inp(&[4, 64], DType::QFloat(q)))));
    v
}

/// Burn 0.23.0-pre.1's `InterpolateOptionsIr` as its client builds it from
/// `InterpolateOptions::new(mode).with_align_corners(align_corners)` (mode-dependent coordinate
/// transform and rounding; default cubic options), with the given `output_size`.
#[cfg(burn_023)]
fn interpolate_options_023(mode: InterpolateModeIr, align_corners: bool, output_size: Option<[usize; 2]>) -> InterpolateOptionsIr {
    let mut options = burn_backend::ops::InterpolateOptions::new(mode.into()).with_align_corners(align_corners);
    if let Some(size) = output_size {
        options = options.with_output_size(size);
    }
    options.into()
}

/// Avg pools with a dilation (0.23 only), and every 3-D pool.
#[cfg(burn_023)]
fn pools_023(g: &mut G, v: &mut Vec<(Option<String>, ModuleOperationIr)>) {
    use ModuleOperationIr as M;
    let d = g.fd();
    v.push((
        l("dilation"),
        M::AvgPool1d(AvgPool1dOpIr {
            x: g.inp(&[2, 3, 12], d),
            kernel_size: 3,
            stride: 1,
            padding: 2,
            dilation: 2,
            count_include_pad: false,
            ceil_mode: true,
            out: g.out(&[2, 3, 12], d),
        }),
    ));
    let d = g.fd();
    v.push((
        l("dilation"),
        M::AvgPool2d(AvgPool2dOpIr {
            x: g.inp(&[1, 2, 9, 8], d),
            kernel_size: [2, 3],
            stride: [1, 2],
            padding: [0, 1],
            dilation: [3, 2],
            count_include_pad: true,
            ceil_mode: false,
            out: g.out(&[1, 2, 6, 3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        l("dilation"),
        M::AvgPool1dBackward(AvgPool1dBackwardOpIr {
            x: g.inp(&[2, 3, 12], d),
            grad: g.inp(&[2, 3, 12], d),
            kernel_size: 3,
            stride: 1,
            padding: 2,
            dilation: 2,
            count_include_pad: false,
            ceil_mode: true,
            out: g.out(&[2, 3, 12], d),
        }),
    ));
    let d = g.fd();
    v.push((
        l("dilation"),
        M::AvgPool2dBackward(AvgPool2dBackwardOpIr {
            x: g.inp(&[1, 2, 9, 8], d),
            grad: g.inp(&[1, 2, 6, 3], d),
            kernel_size: [2, 3],
            stride: [1, 2],
            padding: [0, 1],
            dilation: [3, 2],
            count_include_pad: true,
            ceil_mode: false,
            out: g.out(&[1, 2, 9, 8], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::AvgPool3d(AvgPool3dOpIr {
            x: g.inp(&[1, 2, 4, 6, 8], d),
            kernel_size: [2, 3, 3],
            stride: [2, 2, 1],
            padding: [0, 1, 1],
            dilation: [1, 1, 1],
            count_include_pad: true,
            ceil_mode: false,
            out: g.out(&[1, 2, 2, 3, 8], d),
        }),
    ));
    let d = g.fd();
    v.push((
        l("dilation-ceil"),
        M::AvgPool3d(AvgPool3dOpIr {
            x: g.inp(&[2, 1, 5, 7, 7], d),
            kernel_size: [2, 2, 3],
            stride: [2, 3, 2],
            padding: [1, 0, 1],
            dilation: [1, 2, 2],
            count_include_pad: false,
            ceil_mode: true,
            out: g.out(&[2, 1, 4, 2, 3], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::AvgPool3dBackward(AvgPool3dBackwardOpIr {
            x: g.inp(&[2, 1, 5, 7, 7], d),
            grad: g.inp(&[2, 1, 4, 2, 3], d),
            kernel_size: [2, 2, 3],
            stride: [2, 3, 2],
            padding: [1, 0, 1],
            dilation: [1, 2, 2],
            count_include_pad: false,
            ceil_mode: true,
            out: g.out(&[2, 1, 5, 7, 7], d),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::MaxPool3d(MaxPool3dOpIr {
            x: g.inp(&[1, 3, 4, 8, 8], d),
            kernel_size: [2, 2, 2],
            stride: [2, 2, 2],
            padding: [0, 0, 0],
            dilation: [1, 1, 1],
            ceil_mode: false,
            out: g.out(&[1, 3, 2, 4, 4], d),
        }),
    ));
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        M::MaxPool3dWithIndices(MaxPool3dWithIndicesOpIr {
            x: g.inp(&[2, 2, 5, 6, 7], d),
            kernel_size: [3, 2, 3],
            stride: [1, 2, 2],
            padding: [1, 0, 1],
            dilation: [1, 1, 2],
            ceil_mode: true,
            out: g.out(&[2, 2, 5, 3, 3], d),
            out_indices: g.out(&[2, 2, 5, 3, 3], di),
        }),
    ));
    let (d, di) = (g.fd(), g.idt());
    v.push((
        None,
        M::MaxPool3dWithIndicesBackward(MaxPool3dWithIndicesBackwardOpIr {
            x: g.inp(&[2, 2, 5, 6, 7], d),
            grad: g.inp(&[2, 2, 5, 3, 3], d),
            indices: g.inp(&[2, 2, 5, 3, 3], di),
            kernel_size: [3, 2, 3],
            stride: [1, 2, 2],
            padding: [1, 0, 1],
            dilation: [1, 1, 2],
            ceil_mode: true,
            out: g.out(&[2, 2, 5, 6, 7], d),
        }),
    ));
}

/// Interpolate options beyond the client's defaults (0.23 only): every coordinate transform
/// (`TfCropAndResize` with its ROI and extrapolation value), every nearest rounding mode,
/// non-default cubic options, `output_size` and `scale_factor` each `Some` and `None`.
#[cfg(burn_023)]
fn interpolate_023(g: &mut G, v: &mut Vec<(Option<String>, ModuleOperationIr)>) {
    use CoordinateTransformModeIr as T;
    use InterpolateModeIr as Mo;
    use ModuleOperationIr as M;
    use NearestRoundingModeIr as R;
    let cubic = CubicOptionsIr { a: -0.75, exclude_outside: false };
    let cases: [(&str, InterpolateOptionsIr); 8] = [
        (
            "nearest-pytorch-half-pixel-round-prefer-floor-scale",
            InterpolateOptionsIr {
                mode: Mo::Nearest,
                coordinate_transform: T::PytorchHalfPixel,
                nearest_mode: R::RoundPreferFloor,
                cubic_options: cubic,
                output_size: None,
                scale_factor: Some([2.0, 1.5]),
            },
        ),
        (
            "nearest-half-pixel-symmetric-ceil",
            InterpolateOptionsIr {
                mode: Mo::Nearest,
                coordinate_transform: T::HalfPixelSymmetric,
                nearest_mode: R::Ceil,
                cubic_options: cubic,
                output_size: Some([8, 6]),
                scale_factor: None,
            },
        ),
        (
            "nearest-exact-asymmetric-round-prefer-ceil-no-size",
            InterpolateOptionsIr {
                mode: Mo::NearestExact,
                coordinate_transform: T::Asymmetric,
                nearest_mode: R::RoundPreferCeil,
                cubic_options: cubic,
                output_size: None,
                scale_factor: None,
            },
        ),
        (
            "bilinear-tf-crop-and-resize",
            InterpolateOptionsIr {
                mode: Mo::Bilinear,
                coordinate_transform: T::TfCropAndResize { roi: [[0.125, 0.875], [-0.25, 1.0]], extrapolation_value: -1.5 },
                nearest_mode: R::RoundPreferFloor,
                cubic_options: cubic,
                output_size: Some([8, 6]),
                scale_factor: None,
            },
        ),
        (
            "nearest-tf-crop-and-resize-floor-scale",
            InterpolateOptionsIr {
                mode: Mo::Nearest,
                coordinate_transform: T::TfCropAndResize { roi: [[0.0, 1.0], [0.0, 1.0]], extrapolation_value: 0.0 },
                nearest_mode: R::Floor,
                cubic_options: cubic,
                output_size: None,
                scale_factor: Some([2.0, 1.5]),
            },
        ),
        (
            "bicubic-exclude-outside-a-minus-half",
            InterpolateOptionsIr {
                mode: Mo::Bicubic,
                coordinate_transform: T::HalfPixel,
                nearest_mode: R::RoundPreferFloor,
                cubic_options: CubicOptionsIr { a: -0.5, exclude_outside: true },
                output_size: Some([8, 6]),
                scale_factor: None,
            },
        ),
        (
            "bicubic-align-corners-scale-and-size",
            InterpolateOptionsIr {
                mode: Mo::Bicubic,
                coordinate_transform: T::AlignCorners,
                nearest_mode: R::RoundPreferFloor,
                cubic_options: CubicOptionsIr { a: -0.625, exclude_outside: false },
                output_size: Some([8, 6]),
                scale_factor: Some([2.0, 1.5]),
            },
        ),
        (
            "lanczos3-pytorch-half-pixel-scale",
            InterpolateOptionsIr {
                mode: Mo::Lanczos3,
                coordinate_transform: T::PytorchHalfPixel,
                nearest_mode: R::RoundPreferFloor,
                cubic_options: cubic,
                output_size: None,
                scale_factor: Some([2.0, 1.5]),
            },
        ),
    ];
    for (label, options) in cases {
        let d = g.fd();
        v.push((
            l(label),
            M::Interpolate(InterpolateOpIr {
                x: g.inp(&[1, 3, 4, 4], d),
                output_size: [8, 6],
                options,
                out: g.out(&[1, 3, 8, 6], d),
            }),
        ));
    }
    let d = g.fd();
    v.push((
        l("nearest-exact-tf-crop-and-resize-scale"),
        M::InterpolateBackward(InterpolateBackwardOpIr {
            x: g.inp(&[1, 3, 4, 4], d),
            grad: g.inp(&[1, 3, 8, 6], d),
            output_size: [8, 6],
            options: InterpolateOptionsIr {
                mode: Mo::NearestExact,
                coordinate_transform: T::TfCropAndResize { roi: [[0.5, 0.25], [0.1, 0.9]], extrapolation_value: 3.0e38 },
                nearest_mode: R::Ceil,
                cubic_options: CubicOptionsIr { a: 0.0, exclude_outside: true },
                output_size: None,
                scale_factor: Some([2.0, 1.5]),
            },
            out: g.out(&[1, 3, 4, 4], d),
        }),
    ));
}

/// Attention with logsumexp and its backward (0.23 only), with both causal alignments.
#[cfg(burn_023)]
fn attention_023(g: &mut G, v: &mut Vec<(Option<String>, ModuleOperationIr)>) {
    use ModuleOperationIr as M;
    let d = g.fd();
    v.push((
        None,
        M::AttentionWithLogsumexp(AttentionWithLogsumexpOpIr {
            query: g.inp(&[2, 4, 16, 8], d),
            key: g.inp(&[2, 4, 16, 8], d),
            value: g.inp(&[2, 4, 16, 8], d),
            options: AttentionOptionsIr { scale: None, softcap: None, is_causal: false, causal_alignment: CausalAlignment::BottomRight },
            out: g.out(&[2, 4, 16, 8], d),
            // Always F32, whatever the query dtype (burn-ir's builder).
            logsumexp: g.out(&[2, 4, 16], DType::F32),
        }),
    ));
    let d = g.fd();
    v.push((
        l("causal-top-left-scale-softcap"),
        M::AttentionWithLogsumexp(AttentionWithLogsumexpOpIr {
            query: g.inp(&[1, 2, 5, 4], d),
            key: g.inp(&[1, 2, 7, 4], d),
            value: g.inp(&[1, 2, 7, 3], d),
            options: AttentionOptionsIr {
                scale: Some(ScalarIr::Float(0.5)),
                softcap: Some(ScalarIr::Float(50.0)),
                is_causal: true,
                causal_alignment: CausalAlignment::TopLeft,
            },
            out: g.out(&[1, 2, 5, 3], d),
            logsumexp: g.out(&[1, 2, 5], DType::F32),
        }),
    ));
    let d = g.fd();
    v.push((
        None,
        M::AttentionBackward(Box::new(AttentionBackwardOpIr {
            query: g.inp(&[1, 2, 5, 4], d),
            key: g.inp(&[1, 2, 7, 4], d),
            value: g.inp(&[1, 2, 7, 3], d),
            out: g.inp(&[1, 2, 5, 3], d),
            logsumexp: g.inp(&[1, 2, 5], DType::F32),
            out_grad: g.inp(&[1, 2, 5, 3], d),
            options: AttentionOptionsIr { scale: None, softcap: None, is_causal: true, causal_alignment: CausalAlignment::BottomRight },
            query_grad: g.out(&[1, 2, 5, 4], d),
            key_grad: g.out(&[1, 2, 7, 4], d),
            value_grad: g.out(&[1, 2, 7, 3], d),
        })),
    ));
    let d = g.fd();
    v.push((
        l("causal-top-left-scale"),
        M::AttentionBackward(Box::new(AttentionBackwardOpIr {
            query: g.inp(&[2, 1, 3, 8], d),
            key: g.inp(&[2, 1, 6, 8], d),
            value: g.inp(&[2, 1, 6, 8], d),
            out: g.inp(&[2, 1, 3, 8], d),
            logsumexp: g.inp(&[2, 1, 3], DType::F32),
            out_grad: g.inp(&[2, 1, 3, 8], d),
            options: AttentionOptionsIr {
                scale: Some(ScalarIr::Float(0.35355339059327373)),
                softcap: None,
                is_causal: true,
                causal_alignment: CausalAlignment::TopLeft,
            },
            query_grad: g.out(&[2, 1, 3, 8], d),
            key_grad: g.out(&[2, 1, 6, 8], d),
            value_grad: g.out(&[2, 1, 6, 8], d),
        })),
    ));
}
