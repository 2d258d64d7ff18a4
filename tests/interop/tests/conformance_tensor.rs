//! Differential conformance suite for Burn's tensor API (Base, Numeric, Float, Int and Bool
//! families): each case is one Burn program, run on the device under test (`TB_TARGET`: our host by
//! default, or Burn's own remote server on Flex) and on Flex in-process, every output compared.
//! One #[test] per case, so the op counts and the pass/fail tally are per case
//! (scripts/conformance). Edge cases follow Burn's own backend test suite: empty and length-1
//! tensors, broadcasting, negative dims and steps, dtype corners, integer rounding, ties.

use burn::prelude::*;
use burn::tensor::{
    DType, Distribution, FloatDType, IndexingUpdateOp, IntDType, TensorData, s,
};
use burn::tensor::kind::Basic;
use torchbridge_interop::harness::{HostProcess, check, device_under_test, reference};

/// `cases! { name, tolerance, |d| [outputs...]; ... }`: one #[test] per case, running the
/// program through `check`. The body is either a list of tensors (each read back with
/// `into_data`) or a block returning an array of tensors of one type or of `TensorData`.
/// Attributes (`#[ignore = "why"]`) go before the name.
macro_rules! cases {
    () => {};
    ($(#[$meta:meta])* $name:ident, $tol:expr, |$d:ident| [ $($out:expr),+ $(,)? ]; $($rest:tt)*) => {
        $(#[$meta])*
        #[test]
        fn $name() {
            check(|$d: &Device| vec![$($out.into_data()),+], $tol);
        }
        cases!($($rest)*);
    };
    ($(#[$meta:meta])* $name:ident, $tol:expr, |$d:ident| $body:block; $($rest:tt)*) => {
        $(#[$meta])*
        #[test]
        fn $name() {
            check(|$d: &Device| Outputs::outputs($body), $tol);
        }
        cases!($($rest)*);
    };
}

/// What a block-bodied case returns.
trait Outputs {
    fn outputs(self) -> Vec<TensorData>;
}

impl<const N: usize> Outputs for [TensorData; N] {
    fn outputs(self) -> Vec<TensorData> {
        self.into()
    }
}

impl<const N: usize, const D: usize, K: Basic> Outputs for [Tensor<D, K>; N] {
    fn outputs(self) -> Vec<TensorData> {
        self.into_iter().map(|t| t.into_data()).collect()
    }
}

// ---- Inputs: deterministic, with zeros, negatives and repeats. -----------------------------------

fn numel<const D: usize>(shape: [usize; D]) -> usize {
    shape.iter().product()
}

/// Floats in [-2.75, 2.75] in steps of 0.25, zero included, scrambled.
fn ft<const D: usize>(d: &Device, shape: [usize; D]) -> Tensor<D> {
    let v: Vec<f32> = (0..numel(shape)).map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.25).collect();
    Tensor::from_data(TensorData::new(v, shape), d)
}

/// Strictly positive floats (for log, sqrt, powf).
fn pos<const D: usize>(d: &Device, shape: [usize; D]) -> Tensor<D> {
    let v: Vec<f32> = (0..numel(shape)).map(|i| 0.125 + (i * 13 % 17) as f32 * 0.375).collect();
    Tensor::from_data(TensorData::new(v, shape), d)
}

/// Floats in (-1, 1) (for asin, acos, atanh).
fn unit<const D: usize>(d: &Device, shape: [usize; D]) -> Tensor<D> {
    let v: Vec<f32> = (0..numel(shape)).map(|i| ((i * 7 % 19) as f32 - 9.0) / 10.0).collect();
    Tensor::from_data(TensorData::new(v, shape), d)
}

/// Integers in [-6, 6], zero included.
fn it<const D: usize>(d: &Device, shape: [usize; D]) -> Tensor<D, Int> {
    let v: Vec<i64> = (0..numel(shape)).map(|i| (i * 5 % 13) as i64 - 6).collect();
    Tensor::from_data(TensorData::new(v, shape), d)
}

/// Non-zero integers (divisors), both signs.
fn nz<const D: usize>(d: &Device, shape: [usize; D]) -> Tensor<D, Int> {
    let v: Vec<i64> = (0..numel(shape))
        .map(|i| {
            let x = (i * 3 % 7) as i64 - 3;
            if x == 0 { 4 } else { x }
        })
        .collect();
    Tensor::from_data(TensorData::new(v, shape), d)
}

fn bt<const D: usize>(d: &Device, shape: [usize; D]) -> Tensor<D, Bool> {
    let v: Vec<bool> = (0..numel(shape)).map(|i| i % 3 != 1).collect();
    Tensor::from_data(TensorData::new(v, shape), d)
}

fn bt2<const D: usize>(d: &Device, shape: [usize; D]) -> Tensor<D, Bool> {
    let v: Vec<bool> = (0..numel(shape)).map(|i| i % 2 == 0).collect();
    Tensor::from_data(TensorData::new(v, shape), d)
}

/// Index results compared by value: Flex (the in-process judge) returns argmax/sort/topk indices as
/// I64 whatever the IR declares (the input's dtype, I32 on a default device); torchbridge returns
/// the declared dtype, as Burn's client expects.
fn idx<const D: usize>(indices: Tensor<D, Int>) -> TensorData {
    indices.into_data().convert::<i64>()
}

fn fempty(d: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(Vec::<f32>::new(), [0, 3]), d)
}

fn iempty(d: &Device) -> Tensor<2, Int> {
    Tensor::from_data(TensorData::new(Vec::<i64>::new(), [0, 3]), d)
}

fn f1(d: &Device, x: f32) -> Tensor<1> {
    Tensor::from_data(TensorData::new(vec![x], [1]), d)
}

fn fvec(d: &Device, v: &[f32]) -> Tensor<1> {
    Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), d)
}

fn ivec(d: &Device, v: &[i64]) -> Tensor<1, Int> {
    Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), d)
}

fn imat<const R: usize, const C: usize>(d: &Device, v: [[i64; C]; R]) -> Tensor<2, Int> {
    Tensor::from_data(TensorData::from(v), d)
}

fn fmat<const R: usize, const C: usize>(d: &Device, v: [[f32; C]; R]) -> Tensor<2> {
    Tensor::from_data(TensorData::from(v), d)
}

/// Special float values.
fn special(d: &Device) -> Tensor<1> {
    fvec(d, &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.0, -1.5])
}

// ---- Base (float) --------------------------------------------------------------------------------

cases! {
    base_float_reshape, 0.0, |d| [ft(d, [2, 3, 4]).reshape([4, 6])];
    base_float_reshape_inferred_dim, 0.0, |d| [ft(d, [2, 3, 4]).reshape([-1, 4])];
    base_float_reshape_to_len1, 0.0, |d| [f1(d, 2.5).reshape([1, 1, 1])];
    #[ignore = "Burn's own shape check (burn-tensor check.rs, Reshape) rejects [0, 3] -> [3, 0] on every device"]
    base_float_reshape_empty, 0.0, |d| [fempty(d).reshape([3, 0])];
    base_float_flatten, 0.0, |d| [ft(d, [2, 3, 4]).flatten::<2>(1, 2)];
    base_float_squeeze_unsqueeze, 0.0, |d| [
        ft(d, [2, 1, 3]).squeeze_dim::<2>(1),
        ft(d, [2, 3]).unsqueeze_dim::<3>(1),
        ft(d, [2, 3]).unsqueeze::<4>()
    ];
    base_float_swap_dims, 0.0, |d| [ft(d, [2, 3, 4]).swap_dims(0, 2)];
    base_float_swap_dims_negative, 0.0, |d| [ft(d, [2, 3, 4]).swap_dims(-1, -2)];
    base_float_transpose_then_add, 0.0, |d| [ft(d, [3, 2]).transpose() + ft(d, [2, 3])];
    base_float_permute, 0.0, |d| [ft(d, [2, 3, 4]).permute([2, 0, 1])];
    base_float_permute_negative, 0.0, |d| [ft(d, [2, 3, 4]).permute([-1, 0, -2])];
    base_float_movedim, 0.0, |d| [ft(d, [2, 3, 4]).movedim(0, 2)];
    base_float_flip, 0.0, |d| [ft(d, [2, 3, 4]).flip([0, 2])];
    base_float_flip_negative, 0.0, |d| [ft(d, [2, 3]).flip([-1])];
    base_float_flip_empty, 0.0, |d| [fempty(d).flip([0, 1])];
    base_float_expand, 0.0, |d| [ft(d, [1, 3]).expand([4, 3])];
    base_float_expand_new_dims, 0.0, |d| [ft(d, [3]).expand([2, 4, 3])];
    base_float_expand_inferred, 0.0, |d| [ft(d, [2, 1]).expand([-1, 5])];
    base_float_unfold, 0.0, |d| [ft(d, [2, 7]).unfold::<3, _>(1, 3, 2)];
    base_float_unfold_dim0, 0.0, |d| [ft(d, [5, 2]).unfold::<3, _>(0, 2, 1)];
    base_float_slice, 0.0, |d| [ft(d, [4, 5]).slice([1..3, 0..4])];
    base_float_slice_macro_negative_index, 0.0, |d| [ft(d, [4, 5]).slice(s![-2.., ..-1])];
    base_float_slice_step, 0.0, |d| [ft(d, [4, 7]).slice(s![.., 0..7;2])];
    base_float_slice_negative_step, 0.0, |d| [ft(d, [4, 5]).slice(s![..;-1, ..])];
    base_float_slice_negative_step_range, 0.0, |d| [ft(d, [6, 3]).slice(s![1..5;-2, 1..])];
    base_float_slice_single_index, 0.0, |d| [ft(d, [4, 5]).slice(s![-1, 2])];
    base_float_slice_empty_range, 0.0, |d| [ft(d, [4, 5]).slice(s![2..2, ..])];
    base_float_slice_dim, 0.0, |d| [ft(d, [4, 5]).slice_dim(1, 1..4)];
    base_float_narrow, 0.0, |d| [ft(d, [4, 5]).narrow(1, 2, 3)];
    base_float_chunk, 0.0, |d| {
        let mut parts = ft(d, [5, 2]).chunk(3, 0);
        let last = parts.pop().unwrap();
        [parts.pop().unwrap(), last]
    };
    base_float_split, 0.0, |d| {
        let parts = ft(d, [2, 7]).split(3, 1);
        [parts[0].clone(), parts[1].clone(), parts[2].clone()]
    };
    base_float_split_with_sizes, 0.0, |d| {
        // Burn drops zero-sized parts: [1, 0, 5] gives two tensors.
        let parts = ft(d, [6, 2]).split_with_sizes(vec![1, 0, 5], 0);
        assert_eq!(parts.len(), 2);
        [parts[0].clone(), parts[1].clone()]
    };
    base_float_select_dim, 0.0, |d| [ft(d, [3, 4]).select_dim::<1>(0, 1)];
    base_float_slice_assign, 0.0, |d| [ft(d, [4, 5]).slice_assign([1..3, 2..4], ft(d, [2, 2]) * 10.0)];
    base_float_slice_assign_step, 0.0, |d| [
        ft(d, [4, 6]).slice_assign(s![.., 0..6;2], pos(d, [4, 3]))
    ];
    base_float_slice_assign_negative_step, 0.0, |d| [
        ft(d, [4, 3]).slice_assign(s![..;-1, ..], pos(d, [4, 3]))
    ];
    base_float_slice_fill, 0.0, |d| [ft(d, [4, 5]).slice_fill(s![1..3, ..], -7.5)];
    base_float_select, 0.0, |d| [ft(d, [4, 3]).select(0, ivec(d, &[3, 0, 0, 2]))];
    base_float_select_dim1_negative, 0.0, |d| [ft(d, [2, 4]).select(-1, ivec(d, &[1, 3]))];
    base_float_select_empty_indices, 0.0, |d| [ft(d, [4, 3]).select(0, ivec(d, &[]))];
    base_float_select_assign_add, 0.0, |d| [
        ft(d, [4, 3]).select_assign(0, ivec(d, &[1, 3, 1]), pos(d, [3, 3]), IndexingUpdateOp::Add)
    ];
    base_float_mask_where, 0.0, |d| [ft(d, [3, 4]).mask_where(bt(d, [3, 4]), pos(d, [3, 4]))];
    base_float_mask_fill, 0.0, |d| [ft(d, [3, 4]).mask_fill(bt(d, [3, 4]), 9.5)];
    base_float_mask_fill_nan, 0.0, |d| [ft(d, [2, 3]).mask_fill(bt2(d, [2, 3]), f32::NAN)];
    base_float_gather, 0.0, |d| [ft(d, [3, 4]).gather(1, imat(d, [[0, 3], [2, 2], [1, 0]]))];
    base_float_gather_dim0, 0.0, |d| [ft(d, [3, 2]).gather(0, imat(d, [[2, 0], [1, 1]]))];
    base_float_scatter_add, 0.0, |d| [
        ft(d, [3, 4]).scatter(1, imat(d, [[0, 0], [3, 1], [2, 2]]), pos(d, [3, 2]), IndexingUpdateOp::Add)
    ];
    base_float_scatter_add_dim0, 0.0, |d| [
        Tensor::<2>::zeros([3, 2], d).scatter(0, imat(d, [[2, 0], [2, 2]]), pos(d, [2, 2]), IndexingUpdateOp::Add)
    ];
    base_float_gather_nd, 0.0, |d| [
        ft(d, [3, 4, 2]).gather_nd::<2, 2>(imat(d, [[0, 1], [2, 3], [1, 0]]))
    ];
    base_float_scatter_nd_add, 0.0, |d| [
        ft(d, [3, 4]).scatter_nd::<2, 1>(imat(d, [[0, 1], [2, 3], [0, 1]]), fvec(d, &[1.0, 2.0, 4.0]), IndexingUpdateOp::Add)
    ];
    base_float_equal, 0.0, |d| [ft(d, [3, 4]).equal(ft(d, [3, 4]).flip([1]))];
    base_float_equal_elem, 0.0, |d| [ft(d, [3, 4]).equal_elem(0.5)];
    base_float_not_equal, 0.0, |d| [ft(d, [3, 4]).not_equal(ft(d, [3, 4]).flip([0]))];
    base_float_not_equal_elem, 0.0, |d| [ft(d, [3, 4]).not_equal_elem(-1.0)];
    base_float_equal_nan, 0.0, |d| [special(d).equal(special(d)), special(d).not_equal(special(d))];
    base_float_repeat_dim, 0.0, |d| [ft(d, [2, 3]).repeat_dim(0, 3)];
    base_float_repeat, 0.0, |d| [ft(d, [2, 3]).repeat(&[2, 3])];
    base_float_repeat_zero, 0.0, |d| [ft(d, [2, 3]).repeat_dim(1, 0)];
    base_float_cat, 0.0, |d| [Tensor::cat(vec![ft(d, [2, 3]), pos(d, [1, 3])], 0)];
    base_float_cat_dim1, 0.0, |d| [Tensor::cat(vec![ft(d, [2, 3]), pos(d, [2, 1]), ft(d, [2, 2])], 1)];
    base_float_cat_negative_dim, 0.0, |d| [Tensor::cat(vec![ft(d, [2, 3]), pos(d, [2, 2])], -1)];
    base_float_cat_with_empty, 0.0, |d| [Tensor::cat(vec![fempty(d), ft(d, [2, 3])], 0)];
    base_float_stack, 0.0, |d| [Tensor::stack::<3>(vec![ft(d, [2, 3]), pos(d, [2, 3])], 1)];
    base_float_zeros_ones_full, 0.0, |d| [
        Tensor::<2>::zeros([2, 3], d),
        Tensor::<2>::ones([3, 1], d),
        Tensor::<2>::full([2, 2], -3.5, d)
    ];
    base_float_like, 0.0, |d| [ft(d, [2, 3]).zeros_like(), ft(d, [2, 3]).ones_like(), ft(d, [2, 3]).full_like(7.0)];
    base_float_zeros_empty_shape, 0.0, |d| [Tensor::<2>::zeros([0, 4], d), Tensor::<2>::ones([3, 0], d)];
    base_float_all_any, 0.0, |d| [ft(d, [3, 4]).all(), ft(d, [3, 4]).any(), pos(d, [2, 2]).all(), Tensor::<2>::zeros([2, 2], d).any()];
    base_float_all_any_dim, 0.0, |d| [ft(d, [3, 4]).all_dim(1), ft(d, [3, 4]).any_dim(0), ft(d, [3, 4]).any_dim(-1)];
    base_float_all_any_empty, 0.0, |d| [fempty(d).all(), fempty(d).any()];
    base_float_roll, 0.0, |d| [ft(d, [3, 4]).roll(&[1, -1], &[0, 1]), ft(d, [5]).roll_dim(2, 0)];
    base_float_mask_select, 0.0, |d| [ft(d, [3, 4]).mask_select(bt(d, [3, 4]))];
    base_float_take, 0.0, |d| [ft(d, [3, 4]).take::<2, 3>(1, imat(d, [[0, 3], [1, 1]]))];
    base_float_iter_dim, 0.0, |d| {
        let rows: Vec<Tensor<2>> = ft(d, [3, 2]).iter_dim(0).collect();
        [rows[0].clone(), rows[2].clone()]
    };
}

// ---- Base (int and bool): the same leaves under BaseInt and BaseBool ----------------------------

cases! {
    base_int_reshape_permute_flip, 0.0, |d| [
        it(d, [2, 3, 4]).reshape([6, 4]),
        it(d, [2, 3, 4]).permute([1, 2, 0]),
        it(d, [2, 3, 4]).flip([-1]),
        it(d, [2, 3, 4]).swap_dims(0, 1)
    ];
    base_int_expand_unfold, 0.0, |d| [it(d, [1, 4]).expand([3, 4]), it(d, [2, 6]).unfold::<3, _>(1, 2, 2)];
    base_int_slice, 0.0, |d| [it(d, [4, 5]).slice(s![1..;2, ..;-1])];
    base_int_slice_assign, 0.0, |d| [it(d, [4, 5]).slice_assign(s![0..2, 1..3], nz(d, [2, 2]))];
    base_int_select, 0.0, |d| [it(d, [4, 3]).select(1, ivec(d, &[2, 2, 0]))];
    base_int_select_assign, 0.0, |d| [
        it(d, [4, 3]).select_assign(0, ivec(d, &[0, 0]), nz(d, [2, 3]), IndexingUpdateOp::Add)
    ];
    base_int_mask_where_fill, 0.0, |d| [
        it(d, [3, 4]).mask_where(bt(d, [3, 4]), nz(d, [3, 4])),
        it(d, [3, 4]).mask_fill(bt2(d, [3, 4]), -100)
    ];
    base_int_gather_scatter, 0.0, |d| [
        it(d, [3, 4]).gather(1, imat(d, [[3, 3], [0, 1], [2, 0]])),
        it(d, [3, 4]).scatter(1, imat(d, [[3, 3], [0, 1], [2, 0]]), nz(d, [3, 2]), IndexingUpdateOp::Add)
    ];
    base_int_gather_scatter_nd, 0.0, |d| [
        it(d, [3, 4]).gather_nd::<2, 1>(imat(d, [[2, 1], [0, 3]])),
        it(d, [3, 4]).scatter_nd::<2, 1>(imat(d, [[2, 1], [0, 3]]), ivec(d, &[10, 20]), IndexingUpdateOp::Add)
    ];
    base_int_equal, 0.0, |d| [
        it(d, [3, 4]).equal(nz(d, [3, 4])),
        it(d, [3, 4]).equal_elem(2),
        it(d, [3, 4]).not_equal(nz(d, [3, 4])),
        it(d, [3, 4]).not_equal_elem(0)
    ];
    base_int_repeat_cat, 0.0, |d| [
        it(d, [2, 3]).repeat_dim(1, 2),
        Tensor::cat(vec![it(d, [2, 3]), iempty(d), nz(d, [1, 3])], 0)
    ];
    base_int_stack, 0.0, |d| [Tensor::stack::<3>(vec![it(d, [2, 2]), nz(d, [2, 2])], 0)];
    base_int_zeros_ones_full, 0.0, |d| [
        Tensor::<2, Int>::zeros([2, 3], d),
        Tensor::<2, Int>::ones([2, 3], d),
        Tensor::<2, Int>::full([1, 3], -9, d)
    ];
    base_int_all_any, 0.0, |d| [
        it(d, [3, 4]).all(), it(d, [3, 4]).any(), nz(d, [3, 4]).all(),
        it(d, [3, 4]).all_dim(0), it(d, [3, 4]).any_dim(1)
    ];
    base_int_arange, 0.0, |d| [
        Tensor::<1, Int>::arange(-3..5, d),
        Tensor::<1, Int>::arange_step(0..10, 3, d),
        Tensor::<1, Int>::arange(2..2, d)
    ];
    base_bool_reshape_permute_flip, 0.0, |d| [
        bt(d, [2, 3, 4]).reshape([4, 6]),
        bt(d, [2, 3, 4]).permute([2, 1, 0]),
        bt(d, [2, 3, 4]).flip([0]),
        bt(d, [2, 3, 4]).swap_dims(-1, 0)
    ];
    base_bool_expand_unfold, 0.0, |d| [bt(d, [3, 1]).expand([3, 4]), bt(d, [7]).unfold::<2, _>(0, 3, 2)];
    base_bool_slice, 0.0, |d| [bt(d, [4, 5]).slice(s![.., ..;-2])];
    base_bool_slice_assign, 0.0, |d| [bt(d, [4, 5]).slice_assign(s![1..3, ..], bt2(d, [2, 5]))];
    #[ignore = "Flex (the in-process judge) returns bool select results as U8 data although the IR declares Bool(Native); torchbridge returns Bool(Native)"]
    base_bool_select, 0.0, |d| [bt(d, [4, 3]).select(0, ivec(d, &[3, 1]))];
    base_bool_select_assign, 0.0, |d| [
        bt(d, [4, 3]).select_assign(0, ivec(d, &[2, 0]), bt2(d, [2, 3]), IndexingUpdateOp::Add)
    ];
    base_bool_mask_where_fill, 0.0, |d| [
        bt(d, [3, 4]).mask_where(bt2(d, [3, 4]), bt2(d, [3, 4]).bool_not()),
        bt(d, [3, 4]).mask_fill(bt2(d, [3, 4]), true)
    ];
    #[ignore = "Flex (the in-process judge) returns bool gather/scatter results as U8 data although the IR declares Bool(Native); torchbridge returns Bool(Native)"]
    base_bool_gather_scatter, 0.0, |d| [
        bt(d, [3, 4]).gather(1, imat(d, [[1, 2], [0, 0], [3, 1]])),
        bt(d, [3, 4]).scatter(1, imat(d, [[1, 2], [0, 0], [3, 1]]), bt2(d, [3, 2]), IndexingUpdateOp::Add)
    ];
    #[ignore = "Burn 0.22's tensor API panics for bool gather_nd/scatter_nd (burn-tensor bridge/ops/bool.rs) before anything reaches a host"]
    base_bool_gather_scatter_nd, 0.0, |d| [
        bt(d, [3, 4]).gather_nd::<2, 1>(imat(d, [[2, 1], [0, 3]])),
        bt(d, [3, 4]).scatter_nd::<2, 1>(imat(d, [[2, 1], [1, 1]]), Tensor::<1, Bool>::from_data([true, false], d), IndexingUpdateOp::Assign)
    ];
    base_bool_equal, 0.0, |d| [
        bt(d, [3, 4]).equal(bt2(d, [3, 4])),
        bt(d, [3, 4]).equal_elem(true),
        bt(d, [3, 4]).not_equal(bt2(d, [3, 4])),
        bt(d, [3, 4]).not_equal_elem(true)
    ];
    base_bool_repeat_cat_stack, 0.0, |d| [
        bt(d, [2, 3]).repeat(&[2, 1]),
        Tensor::cat(vec![bt(d, [2, 3]), bt2(d, [2, 3])], 1),
        Tensor::stack::<3>(vec![bt(d, [2, 3]), bt2(d, [2, 3])], 2)
    ];
    base_bool_zeros_ones_full, 0.0, |d| [
        Tensor::<2, Bool>::zeros([2, 3], d),
        Tensor::<2, Bool>::ones([2, 3], d),
        Tensor::<2, Bool>::full([2, 3], true, d)
    ];
    base_bool_all_any, 0.0, |d| [
        bt(d, [3, 4]).all(), bt(d, [3, 4]).any(), bt(d, [3, 4]).all_dim(1), bt(d, [3, 4]).any_dim(-2)
    ];
}

// ---- Casts and dtype corners ---------------------------------------------------------------------

cases! {
    cast_float_to_f16_bf16_f64, 1e-2, |d| [
        ft(d, [2, 3]).cast(DType::F16),
        ft(d, [2, 3]).cast(DType::BF16),
        ft(d, [2, 3]).cast(DType::F64)
    ];
    cast_f64_back_to_f32, 0.0, |d| [ft(d, [2, 3]).cast(FloatDType::F64).cast(FloatDType::F32)];
    f16_arithmetic, 1e-2, |d| {
        let a = ft(d, [3, 4]).cast(DType::F16);
        let b = pos(d, [3, 4]).cast(DType::F16);
        [a.clone() + b.clone(), a.clone() * b.clone(), a.clone().exp(), a.sum_dim(1), b.log()]
    };
    bf16_arithmetic, 2e-2, |d| {
        let a = ft(d, [3, 4]).cast(DType::BF16);
        let b = pos(d, [3, 4]).cast(DType::BF16);
        [a.clone() - b.clone(), a.clone() / b.clone(), a.clone().matmul(b.transpose()), a.max_dim(0)]
    };
    f64_arithmetic, 1e-12, |d| {
        let a = Tensor::<2>::from_data(TensorData::new((0..12).map(|i| i as f64 * 0.1 - 0.55).collect::<Vec<f64>>(), [3, 4]), (d, DType::F64));
        [a.clone() * 3.0 + 1.0, a.clone().sin(), a.clone().matmul(a.clone().transpose()), a.sum_dim(1)]
    };
    f16_from_data, 0.0, |d| [
        Tensor::<1>::from_data(TensorData::new(vec![burn::tensor::f16::from_f32(1.5), burn::tensor::f16::from_f32(-2.0)], [2]), (d, DType::F16))
    ];
    cast_float_to_int_dtypes, 0.0, |d| [
        (ft(d, [2, 3]) * 2.0).cast(IntDType::I32),
        (ft(d, [2, 3]) * 2.0).cast(IntDType::I16),
        (ft(d, [2, 3]) * 2.0).cast(IntDType::I8),
        pos(d, [2, 3]).cast(IntDType::U8)
    ];
    cast_int_to_int_dtypes, 0.0, |d| [
        it(d, [2, 3]).cast(IntDType::I32),
        it(d, [2, 3]).cast(IntDType::I8),
        it(d, [2, 3]).cast(IntDType::I16),
        it(d, [2, 3]).abs().cast(IntDType::U8),
        it(d, [2, 3]).abs().cast(IntDType::U32),
        it(d, [2, 3]).cast(IntDType::I32).cast(IntDType::I64)
    ];
    i32_arithmetic, 0.0, |d| {
        let a = it(d, [3, 4]).cast(IntDType::I32);
        let b = nz(d, [3, 4]).cast(IntDType::I32);
        [a.clone() + b.clone(), a.clone() * b.clone(), a.clone().div(b.clone()), a.clone().sum_dim(1), a.greater(b).int()]
    };
    u8_arithmetic, 0.0, |d| {
        let a = it(d, [3, 4]).abs().cast(IntDType::U8);
        let b = nz(d, [3, 4]).abs().cast(IntDType::U8);
        [a.clone() + b.clone(), a.clone().div(b.clone()), a.clone().remainder(b), a.max_dim(1)]
    };
    i8_arithmetic, 0.0, |d| {
        let a = it(d, [3, 4]).cast(IntDType::I8);
        let b = nz(d, [3, 4]).cast(IntDType::I8);
        [a.clone() - b.clone(), a.clone().remainder(b.clone()), a.clone().abs(), a.lower_equal(b).int()]
    };
    cast_int_to_float_dtype, 1e-3, |d| [it(d, [2, 3]).cast(FloatDType::F16), it(d, [2, 3]).float()];
    cast_bool_to_int_and_float, 0.0, |d| [bt(d, [2, 3]).int(), bt(d, [2, 3]).float()];
}

// ---- Numeric (float) -----------------------------------------------------------------------------

cases! {
    numeric_float_add, 0.0, |d| [ft(d, [3, 4]) + pos(d, [3, 4])];
    numeric_float_add_broadcast, 0.0, |d| [ft(d, [3, 4]) + pos(d, [1, 4]), ft(d, [3, 1]) + pos(d, [1, 4])];
    numeric_float_add_broadcast_rank3, 0.0, |d| [ft(d, [2, 1, 4]) + pos(d, [1, 3, 1])];
    numeric_float_add_empty, 0.0, |d| [fempty(d) + fempty(d)];
    numeric_float_add_scalar, 0.0, |d| [ft(d, [3, 4]) + 1.25, ft(d, [3, 4]).add_scalar(-0.5)];
    numeric_float_sub, 0.0, |d| [ft(d, [3, 4]) - pos(d, [3, 4]), ft(d, [3, 4]) - pos(d, [3, 1])];
    numeric_float_sub_scalar, 0.0, |d| [ft(d, [3, 4]) - 2.0];
    numeric_float_div, 1e-6, |d| [ft(d, [3, 4]) / pos(d, [3, 4]), ft(d, [3, 4]) / pos(d, [1, 4])];
    numeric_float_div_by_zero, 0.0, |d| [fvec(d, &[1.0, -1.0, 0.0]) / fvec(d, &[0.0, 0.0, 0.0])];
    numeric_float_div_scalar, 1e-6, |d| [ft(d, [3, 4]) / 3.0, ft(d, [3, 4]).div_scalar(-0.5)];
    numeric_float_rem, 1e-6, |d| [
        fvec(d, &[5.5, -5.5, 5.5, -5.5, 3.0]).remainder(fvec(d, &[2.0, 2.0, -2.0, -2.0, 1.5]))
    ];
    numeric_float_rem_scalar, 1e-6, |d| [
        fvec(d, &[5.5, -5.5, 0.0, -0.25]).remainder_scalar(2.0),
        fvec(d, &[5.5, -5.5, 0.0, -0.25]).remainder_scalar(-2.0)
    ];
    numeric_float_fmod, 1e-6, |d| [
        fvec(d, &[5.5, -5.5, 5.5, -5.5]).fmod(fvec(d, &[2.0, 2.0, -2.0, -2.0])),
        fvec(d, &[5.5, -5.5]).fmod_scalar(2.0)
    ];
    numeric_float_mul, 0.0, |d| [ft(d, [3, 4]) * pos(d, [3, 4]), ft(d, [3, 4]) * pos(d, [1, 4])];
    numeric_float_mul_scalar, 0.0, |d| [ft(d, [3, 4]) * -2.5];
    numeric_float_abs_neg_sign, 0.0, |d| [ft(d, [3, 4]).abs(), -ft(d, [3, 4]), ft(d, [3, 4]).sign()];
    numeric_float_sign_special, 0.0, |d| [special(d).sign(), special(d).abs(), special(d).neg()];
    numeric_float_full, 0.0, |d| [Tensor::<3>::full([2, 1, 3], 0.75, d)];
    numeric_float_mean_sum, 1e-6, |d| [ft(d, [3, 4]).mean(), ft(d, [3, 4]).sum()];
    numeric_float_mean_sum_dim, 1e-6, |d| [ft(d, [3, 4]).mean_dim(1), ft(d, [3, 4]).sum_dim(0), ft(d, [2, 3, 4]).sum_dim(-1)];
    numeric_float_sum_dims, 1e-6, |d| [ft(d, [2, 3, 4]).sum_dims(&[0, 2]), ft(d, [2, 3, 4]).mean_dims(&[1, 2])];
    numeric_float_sum_dims_squeeze, 1e-6, |d| [ft(d, [2, 3, 4]).sum_dims_squeeze::<1, _>(&[0, 2])];
    numeric_float_sum_empty, 0.0, |d| [fempty(d).sum(), fempty(d).sum_dim(0)];
    numeric_float_prod, 1e-5, |d| [pos(d, [2, 3]).prod(), ft(d, [3, 4]).prod_dim(1), ft(d, [3, 4]).prod_dims(&[0, 1])];
    numeric_float_compare, 0.0, |d| [
        ft(d, [3, 4]).greater(ft(d, [3, 4]).flip([1])),
        ft(d, [3, 4]).greater_equal(ft(d, [3, 4]).flip([1])),
        ft(d, [3, 4]).lower(ft(d, [3, 4]).flip([1])),
        ft(d, [3, 4]).lower_equal(ft(d, [3, 4]).flip([1]))
    ];
    numeric_float_compare_elem, 0.0, |d| [
        ft(d, [3, 4]).greater_elem(0.5),
        ft(d, [3, 4]).greater_equal_elem(0.5),
        ft(d, [3, 4]).lower_elem(-0.25),
        ft(d, [3, 4]).lower_equal_elem(-0.25)
    ];
    numeric_float_compare_nan, 0.0, |d| [special(d).greater_elem(0.0), special(d).lower_equal(special(d))];
    numeric_float_argmax_argmin, 0.0, |d| [ft(d, [3, 4]).argmax(1), ft(d, [3, 4]).argmin(0), ft(d, [3, 4]).argmax(-1)];
    numeric_float_argmax_ties, 0.0, |d| [
        fmat(d, [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]]).argmax(1),
        fmat(d, [[1.0, 0.0, 0.0, 0.0], [2.0, 2.0, 2.0, 2.0]]).argmin(1)
    ];
    numeric_float_max_min, 0.0, |d| [ft(d, [3, 4]).max(), ft(d, [3, 4]).min(), ft(d, [3, 4]).max_abs()];
    numeric_float_max_min_dim, 0.0, |d| [
        ft(d, [3, 4]).max_dim(1), ft(d, [3, 4]).min_dim(0), ft(d, [3, 4]).max_abs_dim(1),
        ft(d, [2, 3, 4]).max_dims(&[0, 2]), ft(d, [2, 3, 4]).min_dims(&[1])
    ];
    numeric_float_max_min_dim_with_indices, 0.0, |d| {
        let (v, i) = ft(d, [3, 4]).max_dim_with_indices(1);
        let (w, j) = ft(d, [3, 4]).min_dim_with_indices(0);
        [v.into_data(), i.into_data(), w.into_data(), j.into_data()]
    };
    numeric_float_max_with_ties_indices, 0.0, |d| {
        let (v, i) = fmat(d, [[5.0, 5.0, 1.0], [0.0, 2.0, 2.0]]).max_dim_with_indices(1);
        [v.into_data(), i.into_data()]
    };
    numeric_float_max_min_pair, 0.0, |d| [ft(d, [3, 4]).max_pair(pos(d, [3, 4])), ft(d, [3, 4]).min_pair(pos(d, [3, 4]) - 1.0)];
    numeric_float_topk, 0.0, |d| [ft(d, [3, 5]).topk(2, 1), ft(d, [3, 5]).argtopk(3, 1), ft(d, [4, 2]).topk(1, 0)];
    numeric_float_topk_with_indices, 0.0, |d| {
        let (v, i) = ft(d, [3, 5]).topk_with_indices(3, 1);
        [v.into_data(), i.into_data()]
    };
    numeric_float_clamp, 0.0, |d| [ft(d, [3, 4]).clamp(-1.0, 1.5), ft(d, [3, 4]).clamp_min(0.0), ft(d, [3, 4]).clamp_max(-0.5)];
    numeric_float_powi, 1e-5, |d| [
        ft(d, [3, 4]).powi(Tensor::<2, Int>::from_data([[0i64, 1, 2, 3]; 3], d).float()),
        ft(d, [3, 4]).powi_scalar(3),
        ft(d, [3, 4]).powi_scalar(0),
        pos(d, [2, 2]).powi_scalar(-2)
    ];
    numeric_float_square, 1e-6, |d| [ft(d, [3, 4]).square()];
    numeric_float_cumsum, 1e-5, |d| [ft(d, [3, 4]).cumsum(1), ft(d, [3, 4]).cumsum(0), ft(d, [2, 3, 2]).cumsum(-2)];
    numeric_float_cumprod, 1e-5, |d| [ft(d, [3, 4]).cumprod(1), pos(d, [4, 2]).cumprod(0)];
    numeric_float_cummin_cummax, 0.0, |d| [ft(d, [3, 4]).cummin(1), ft(d, [3, 4]).cummax(0)];
    numeric_float_cumsum_empty, 0.0, |d| [fempty(d).cumsum(1)];
    numeric_float_sort, 0.0, |d| [ft(d, [3, 5]).sort(1), ft(d, [3, 5]).sort_descending(0), ft(d, [3, 5]).sort(-1)];
    numeric_float_sort_with_indices, 0.0, |d| {
        let (v, i) = ft(d, [3, 5]).sort_with_indices(1);
        let (w, j) = ft(d, [3, 5]).sort_descending_with_indices(1);
        [v.into_data(), i.into_data(), w.into_data(), j.into_data()]
    };
    numeric_float_sort_stable, 0.0, |d| {
        let x = fmat(d, [[2.0, 1.0, 2.0, 1.0, 2.0, 0.0, 1.0]]);
        let (v, i) = x.clone().sort_with_indices(1);
        [v.into_data(), i.into_data(), x.clone().argsort(1).into_data(), x.argsort_descending(1).into_data()]
    };
    numeric_float_argsort, 0.0, |d| [ft(d, [3, 5]).argsort(1), ft(d, [3, 5]).argsort_descending(0)];
    numeric_float_pad_constant, 0.0, |d| [ft(d, [2, 3]).pad((1, 2, 0, 1), 0.5)];
    numeric_float_pad_reflect_edge, 0.0, |d| [
        ft(d, [3, 4]).pad((2, 1, 1, 2), burn::tensor::ops::PadMode::Reflect),
        ft(d, [3, 4]).pad((2, 1, 1, 2), burn::tensor::ops::PadMode::Edge)
    ];
    numeric_float_matmul_dot, 1e-5, |d| [fvec(d, &[1.0, 2.0, -3.0]).dot(fvec(d, &[0.5, 0.25, 2.0]))];
    numeric_float_triu_tril, 0.0, |d| [ft(d, [4, 4]).triu(1), ft(d, [4, 4]).tril(-1), ft(d, [3, 5]).triu(0)];
    numeric_float_eye, 0.0, |d| [Tensor::<2>::eye(3, d)];
    numeric_float_one_hot, 0.0, |d| [ivec(d, &[0, 2, 1, 2]).one_hot::<2>(3)];
    numeric_float_bool_mask, 0.0, |d| [ft(d, [3, 4]).bool()];
    numeric_float_var_mean, 1e-5, |d| [
        ft(d, [3, 4]).var(1), ft(d, [3, 4]).var_bias(0),
        ft(d, [3, 4]).var_mean(1).0, ft(d, [3, 4]).var_mean(1).1
    ];
    numeric_float_median, 0.0, |d| [ft(d, [3, 5]).median(1)];
}

// ---- Numeric (int): Burn's integer semantics ------------------------------------------------------

cases! {
    numeric_int_add_sub_mul, 0.0, |d| [
        it(d, [3, 4]) + nz(d, [3, 4]),
        it(d, [3, 4]) - nz(d, [1, 4]),
        it(d, [3, 4]) * nz(d, [3, 1])
    ];
    numeric_int_scalar_ops, 0.0, |d| [it(d, [3, 4]) + 3, it(d, [3, 4]) - 7, it(d, [3, 4]) * -2];
    numeric_int_div_negative_rounding, 0.0, |d| [
        ivec(d, &[7, -7, 7, -7, 0, 6, -6, 1]).div(ivec(d, &[2, 2, -2, -2, 3, 4, 4, -3]))
    ];
    numeric_int_div_scalar_negative, 0.0, |d| [
        ivec(d, &[7, -7, 0, -1, 5]).div_scalar(2),
        ivec(d, &[7, -7, 0, -1, 5]).div_scalar(-2)
    ];
    numeric_int_rem_negative, 0.0, |d| [
        ivec(d, &[7, -7, 7, -7, 0, 6]).remainder(ivec(d, &[3, 3, -3, -3, 5, 4]))
    ];
    numeric_int_rem_scalar_negative, 0.0, |d| [
        ivec(d, &[7, -7, 0, -1, 5]).remainder_scalar(3),
        ivec(d, &[7, -7, 0, -1, 5]).remainder_scalar(-3)
    ];
    numeric_int_abs_neg_sign, 0.0, |d| [it(d, [3, 4]).abs(), -it(d, [3, 4]), it(d, [3, 4]).sign()];
    numeric_int_full, 0.0, |d| [Tensor::<2, Int>::full([2, 2], 42, d)];
    numeric_int_mean_sum, 0.0, |d| [it(d, [3, 4]).sum(), it(d, [3, 4]).mean(), nz(d, [3, 4]).mean_dim(1)];
    numeric_int_sum_dims, 0.0, |d| [it(d, [3, 4]).sum_dim(1), it(d, [2, 3, 4]).sum_dims(&[0, 1])];
    numeric_int_prod, 0.0, |d| [nz(d, [2, 3]).prod(), it(d, [3, 4]).prod_dim(0)];
    numeric_int_compare, 0.0, |d| [
        it(d, [3, 4]).greater(nz(d, [3, 4])),
        it(d, [3, 4]).greater_equal(nz(d, [3, 4])),
        it(d, [3, 4]).lower(nz(d, [3, 4])),
        it(d, [3, 4]).lower_equal(nz(d, [3, 4]))
    ];
    numeric_int_compare_elem, 0.0, |d| [
        it(d, [3, 4]).greater_elem(0),
        it(d, [3, 4]).greater_equal_elem(2),
        it(d, [3, 4]).lower_elem(-1),
        it(d, [3, 4]).lower_equal_elem(3)
    ];
    numeric_int_argmax_argmin, 0.0, |d| { [idx(it(d, [3, 4]).argmax(1)), idx(it(d, [3, 4]).argmin(0))] };
    numeric_int_argmax_ties, 0.0, |d| {
        [idx(imat(d, [[4, 4, 1], [0, 0, 0]]).argmax(1)), idx(imat(d, [[4, 1, 1], [0, 0, 0]]).argmin(1))]
    };
    numeric_int_max_min, 0.0, |d| [
        it(d, [3, 4]).max(), it(d, [3, 4]).min(), it(d, [3, 4]).max_abs(),
        it(d, [3, 4]).max_dim(0), it(d, [3, 4]).min_dim(1), it(d, [3, 4]).max_abs_dim(1)
    ];
    numeric_int_max_min_with_indices, 0.0, |d| {
        let (v, i) = it(d, [3, 4]).max_dim_with_indices(1);
        let (w, j) = it(d, [3, 4]).min_dim_with_indices(0);
        [v.into_data(), idx(i), w.into_data(), idx(j)]
    };
    numeric_int_topk, 0.0, |d| {
        let (v, i) = it(d, [3, 5]).topk_with_indices(2, 1);
        [it(d, [3, 5]).topk(3, 1).into_data(), idx(it(d, [3, 5]).argtopk(2, 0)), v.into_data(), idx(i)]
    };
    numeric_int_clamp, 0.0, |d| [it(d, [3, 4]).clamp(-2, 3), it(d, [3, 4]).clamp_min(1), it(d, [3, 4]).clamp_max(-1)];
    numeric_int_powi, 0.0, |d| [
        it(d, [3, 4]).powi(imat(d, [[0, 1, 2, 3], [1, 2, 3, 0], [2, 2, 2, 2]])),
        it(d, [3, 4]).powi_scalar(3),
        it(d, [3, 4]).powi_scalar(0)
    ];
    numeric_int_cumulative, 0.0, |d| [
        it(d, [3, 4]).cumsum(1), nz(d, [3, 4]).cumprod(0), it(d, [3, 4]).cummin(1), it(d, [3, 4]).cummax(1)
    ];
    numeric_int_sort, 0.0, |d| {
        let (v, i) = it(d, [3, 5]).sort_with_indices(1);
        [it(d, [3, 5]).sort(0).into_data(), it(d, [3, 5]).sort_descending(1).into_data(),
         v.into_data(), idx(i), idx(it(d, [3, 5]).argsort(1))]
    };
    numeric_int_sort_stable, 0.0, |d| {
        let x = imat(d, [[3, 1, 3, 1, 2, 1, 3]]);
        let (v, i) = x.clone().sort_descending_with_indices(1);
        [v.into_data(), idx(i), idx(x.argsort(1))]
    };
    numeric_int_pad, 0.0, |d| [it(d, [2, 3]).pad((1, 1, 2, 0), 9)];
    numeric_int_matmul, 0.0, |d| [it(d, [3, 4]).matmul(nz(d, [4, 2])), it(d, [2, 3, 4]).matmul(nz(d, [2, 4, 3]))];
    numeric_int_one_hot, 0.0, |d| [ivec(d, &[3, 0, 1]).one_hot::<2>(4)];
    numeric_int_square_triu, 0.0, |d| [it(d, [3, 4]).square(), it(d, [3, 3]).triu(0), it(d, [3, 3]).tril(0)];
    numeric_int_empty, 0.0, |d| [iempty(d) + iempty(d), iempty(d).sum(), iempty(d).sum_dim(0)];
}

// ---- Float -----------------------------------------------------------------------------------------

cases! {
    float_exp_log, 1e-6, |d| [ft(d, [3, 4]).exp(), pos(d, [3, 4]).log(), pos(d, [3, 4]).log1p()];
    float_log_special, 0.0, |d| [special(d).log(), fvec(d, &[0.0, -1.0, 1.0]).log1p()];
    float_exp_special, 0.0, |d| [special(d).exp()];
    float_erf, 1e-6, |d| [ft(d, [3, 4]).erf(), special(d).erf()];
    float_sqrt, 1e-6, |d| [pos(d, [3, 4]).sqrt(), fvec(d, &[-1.0, 0.0, 4.0]).sqrt()];
    float_powf_scalar, 1e-5, |d| [pos(d, [3, 4]).powf_scalar(1.5), ft(d, [3, 4]).powf_scalar(2.0), pos(d, [3, 4]).powf_scalar(-0.5)];
    float_powf_scalar_negative_base, 1e-6, |d| [fvec(d, &[-2.0, -0.5, 0.0]).powf_scalar(0.5), fvec(d, &[-2.0, -0.5]).powf_scalar(3.0)];
    float_powf, 1e-5, |d| [pos(d, [3, 4]).powf(ft(d, [3, 4])), pos(d, [3, 4]).powf(ft(d, [1, 4]))];
    float_trig, 1e-6, |d| [ft(d, [3, 4]).cos(), ft(d, [3, 4]).sin(), ft(d, [3, 4]).tan()];
    float_hyperbolic, 1e-6, |d| [ft(d, [3, 4]).cosh(), ft(d, [3, 4]).sinh(), ft(d, [3, 4]).tanh()];
    float_inverse_trig, 1e-6, |d| [unit(d, [3, 4]).acos(), unit(d, [3, 4]).asin(), ft(d, [3, 4]).atan()];
    float_inverse_hyperbolic, 1e-6, |d| [(pos(d, [3, 4]) + 1.0).acosh(), ft(d, [3, 4]).asinh(), unit(d, [3, 4]).atanh()];
    float_inverse_trig_out_of_domain, 0.0, |d| [fvec(d, &[2.0, -2.0]).asin(), fvec(d, &[0.5]).acosh(), fvec(d, &[1.0, -1.0]).atanh()];
    float_atan2, 1e-6, |d| [
        ft(d, [3, 4]).atan2(ft(d, [3, 4]).flip([1])),
        fvec(d, &[0.0, 0.0, -0.0, 1.0, -1.0]).atan2(fvec(d, &[0.0, -1.0, -1.0, 0.0, 0.0]))
    ];
    float_round_half_even, 0.0, |d| [fvec(d, &[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6]).round()];
    float_floor_ceil_trunc, 0.0, |d| [
        fvec(d, &[1.7, -1.7, 0.5, -0.5, 3.0, -0.0]).floor(),
        fvec(d, &[1.7, -1.7, 0.5, -0.5, 3.0, -0.0]).ceil(),
        fvec(d, &[1.7, -1.7, 0.5, -0.5, 3.0, -0.0]).trunc()
    ];
    float_into_int_truncates, 0.0, |d| [fvec(d, &[1.7, -1.7, 0.5, -0.5, 3.0, -3.999]).int()];
    float_matmul, 1e-5, |d| [ft(d, [3, 4]).matmul(pos(d, [4, 2]))];
    float_matmul_batched, 1e-5, |d| [ft(d, [2, 3, 4]).matmul(pos(d, [2, 4, 5]))];
    float_matmul_broadcast, 1e-5, |d| [ft(d, [2, 3, 4]).matmul(pos(d, [1, 4, 2])), ft(d, [1, 3, 4]).matmul(pos(d, [3, 4, 2]))];
    float_matmul_vector_like, 1e-5, |d| [ft(d, [1, 4]).matmul(pos(d, [4, 1])), ft(d, [3, 1]).matmul(pos(d, [1, 3]))];
    float_matmul_empty_inner, 0.0, |d| [Tensor::<2>::zeros([2, 0], d).matmul(Tensor::<2>::zeros([0, 3], d))];
    float_matmul_4d, 1e-5, |d| [ft(d, [2, 2, 3, 4]).matmul(pos(d, [2, 2, 4, 3]))];
    float_cross, 1e-5, |d| [ft(d, [4, 3]).cross(pos(d, [4, 3]), 1), ft(d, [3, 2]).cross(pos(d, [3, 2]), 0)];
    float_cross_broadcast, 1e-5, |d| [ft(d, [4, 3]).cross(pos(d, [1, 3]), -1)];
    float_recip, 1e-6, |d| [pos(d, [3, 4]).recip(), fvec(d, &[0.0, -0.0, -2.0]).recip()];
    float_is_nan_is_inf, 0.0, |d| [special(d).is_nan(), special(d).is_inf(), special(d).is_finite()];
    float_contains_nan, 0.0, |d| [special(d).contains_nan(), ft(d, [2, 2]).contains_nan()];
    float_hypot, 1e-6, |d| [ft(d, [3, 4]).hypot(pos(d, [3, 4])), fvec(d, &[3.0, -5.0]).hypot(fvec(d, &[4.0, 12.0]))];
    float_deg_rad, 1e-6, |d| [ft(d, [2, 3]).deg2rad(), ft(d, [2, 3]).rad2deg()];
    float_is_close, 0.0, |d| [ft(d, [3, 4]).is_close(ft(d, [3, 4]) + 1e-7, None, None), ft(d, [3, 4]).is_close(pos(d, [3, 4]), Some(0.1), Some(0.5))];
    float_cov, 1e-5, |d| [ft(d, [3, 5]).cov(1, 1)];
    float_grid_sample_2d, 1e-5, |d| [
        ft(d, [1, 1, 3, 4]).grid_sample_2d(
            Tensor::<4>::from_data([[[[-1.0f32, -1.0], [0.0, 0.0], [0.5, -0.25]], [[1.0, 1.0], [0.9, -0.6], [-0.3, 0.7]]]], d),
            burn::tensor::ops::InterpolateMode::Bilinear)
    ];
    float_detach_then_op, 1e-6, |d| [ft(d, [2, 3]).detach().exp()];
    float_into_scalar_round_trip, 0.0, |d| {
        let s: f32 = ft(d, [2, 3]).sum().into_scalar();
        [Tensor::<1>::from_data([s], d)]
    };
}

// ---- Int -------------------------------------------------------------------------------------------

cases! {
    int_into_float, 0.0, |d| [it(d, [3, 4]).float(), iempty(d).float()];
    int_bitwise, 0.0, |d| [
        it(d, [3, 4]).bitwise_and(nz(d, [3, 4])),
        it(d, [3, 4]).bitwise_or(nz(d, [3, 4])),
        it(d, [3, 4]).bitwise_xor(nz(d, [3, 4])),
        it(d, [3, 4]).bitwise_not()
    ];
    int_bitwise_scalar, 0.0, |d| [
        it(d, [3, 4]).bitwise_and_scalar(5),
        it(d, [3, 4]).bitwise_or_scalar(-8),
        it(d, [3, 4]).bitwise_xor_scalar(3)
    ];
    int_shifts, 0.0, |d| [
        it(d, [3, 4]).bitwise_left_shift(it(d, [3, 4]).abs().clamp_max(5)),
        it(d, [3, 4]).bitwise_right_shift(it(d, [3, 4]).abs().clamp_max(3))
    ];
    int_shifts_scalar, 0.0, |d| [it(d, [3, 4]).bitwise_left_shift_scalar(2), it(d, [3, 4]).bitwise_right_shift_scalar(1)];
    int_matmul_i32, 0.0, |d| [it(d, [3, 4]).cast(IntDType::I32).matmul(nz(d, [4, 3]).cast(IntDType::I32))];
    #[ignore = "i64 extremes do not fit the default I32 int dtype: Burn's client panics converting the data (burn-std cast) before anything reaches a host"]
    int_i64_extremes, 0.0, |d| [
        ivec(d, &[i64::MAX, i64::MIN, 0]).abs().sign(),
        ivec(d, &[i64::MAX, i64::MIN + 1, -5]).max_dim(0)
    ];
}

// ---- Bool ------------------------------------------------------------------------------------------

cases! {
    bool_into_float_int, 0.0, |d| [bt(d, [3, 4]).float(), bt(d, [3, 4]).int()];
    bool_not, 0.0, |d| [bt(d, [3, 4]).bool_not()];
    bool_and_or_xor, 0.0, |d| [
        bt(d, [3, 4]).bool_and(bt2(d, [3, 4])),
        bt(d, [3, 4]).bool_or(bt2(d, [3, 4])),
        bt(d, [3, 4]).bool_xor(bt2(d, [3, 4]))
    ];
    bool_ops_broadcast, 0.0, |d| [bt(d, [3, 4]).bool_and(bt2(d, [1, 4])), bt(d, [3, 1]).bool_or(bt2(d, [1, 4]))];
    bool_argwhere_nonzero, 0.0, |d| {
        let nz: Vec<Tensor<1, Int>> = bt(d, [3, 4]).nonzero();
        [bt(d, [3, 4]).argwhere().into_data(), nz[0].clone().into_data(), nz[1].clone().into_data()]
    };
    bool_empty, 0.0, |d| [Tensor::<2, Bool>::from_data(TensorData::new(Vec::<bool>::new(), [0, 2]), d).bool_not()];
}

// ---- Linear algebra and composite programs ---------------------------------------------------------

cases! {
    composite_outer_and_trace, 1e-5, |d| [
        fvec(d, &[1.0, 2.0, 3.0]).unsqueeze_dim::<2>(1) * fvec(d, &[0.5, -1.0]).unsqueeze_dim::<2>(0),
        (ft(d, [3, 3]) * Tensor::<2>::eye(3, d)).sum()
    ];
    composite_vector_norms, 1e-5, |d| [
        ft(d, [3, 4]).powf_scalar(2.0).sum_dim(1).sqrt(),
        ft(d, [3, 4]).abs().sum_dim(0),
        ft(d, [3, 4]).abs().max_dim(1)
    ];
    composite_cosine_similarity, 1e-5, |d| {
        let (a, b) = (ft(d, [3, 4]), pos(d, [3, 4]));
        let dot = (a.clone() * b.clone()).sum_dim(1);
        let na = a.powf_scalar(2.0).sum_dim(1).sqrt();
        let nb = b.powf_scalar(2.0).sum_dim(1).sqrt();
        [dot / (na * nb).clamp_min(1e-8)]
    };
    composite_softmax_by_hand, 1e-5, |d| {
        let x = ft(d, [3, 4]);
        let e = (x.clone() - x.max_dim(1)).exp();
        [e.clone() / e.sum_dim(1)]
    };
    composite_normalize_rows, 1e-5, |d| {
        let x = ft(d, [4, 5]);
        let (var, mean) = x.clone().var_mean(1);
        [(x - mean) / (var + 1e-5).sqrt()]
    };
    composite_where_select_chain, 0.0, |d| {
        let x = ft(d, [4, 4]);
        let m = x.clone().greater_elem(0.0);
        [x.clone().mask_where(m.clone(), x.clone() * 2.0).select(0, ivec(d, &[3, 1])), m.int().sum_dim(1).float()]
    };
    composite_long_chain_int_float, 1e-5, |d| {
        let i = it(d, [3, 4]);
        let f = i.clone().float() * 0.5 + ft(d, [3, 4]);
        [(f.clone().floor().int() + i).float().sum_dim(1), f.argmax(1).float()]
    };
    composite_rank1_len1, 1e-6, |d| [
        f1(d, 3.0).exp(), f1(d, -2.0).abs().sum(), f1(d, 0.5).matmul_like_broadcast(d),
        f1(d, 1.0).cat_with(&[2.0, 3.0], d)
    ];
}

/// Tiny helpers used by the composite cases above.
trait RankOneExt {
    fn matmul_like_broadcast(self, d: &Device) -> Tensor<2>;
    fn cat_with(self, rest: &[f32], d: &Device) -> Tensor<1>;
}

impl RankOneExt for Tensor<1> {
    fn matmul_like_broadcast(self, d: &Device) -> Tensor<2> {
        self.unsqueeze::<2>().matmul(fvec(d, &[1.0, 2.0, 3.0]).unsqueeze())
    }
    fn cat_with(self, rest: &[f32], d: &Device) -> Tensor<1> {
        Tensor::cat(vec![self, fvec(d, rest)], 0)
    }
}

// ---- Random and uninitialised tensors: shapes, dtypes and ranges only ------------------------------

/// Runs `program` on the device under test and on Flex; checks shapes and dtypes agree and every
/// value lies in [lo, hi].
fn check_random<const D: usize, K>(program: impl Fn(&Device) -> Tensor<D, K>, lo: f64, hi: f64)
where
    K: Basic,
{
    let ours = program(&device_under_test()).into_data();
    let theirs = program(&reference()).into_data();
    assert_eq!(ours.dtype(), theirs.dtype(), "dtype differs");
    assert_eq!(ours.shape(), theirs.shape(), "shape differs");
    if lo <= hi {
        for (i, v) in ours.iter::<f64>().enumerate() {
            assert!(v >= lo && v <= hi, "value {i} = {v} outside [{lo}, {hi}]");
        }
    }
}

#[test]
fn random_float_uniform() {
    check_random(|d| Tensor::<2>::random([40, 50], Distribution::Uniform(-2.0, 3.0), d), -2.0, 3.0);
}

#[test]
fn random_float_default_and_bernoulli() {
    check_random(|d| Tensor::<2>::random([30, 30], Distribution::Default, d), 0.0, 1.0);
    check_random(|d| Tensor::<2>::random([30, 30], Distribution::Bernoulli(0.3), d), 0.0, 1.0);
}

#[test]
fn random_float_normal_moments() {
    let x = Tensor::<1>::random([20000], Distribution::Normal(1.0, 2.0), &device_under_test());
    let mean: f32 = x.clone().mean().into_scalar();
    let var: f32 = x.var(0).into_scalar();
    assert!((mean - 1.0).abs() < 0.1, "mean {mean}");
    assert!((var - 4.0).abs() < 0.3, "variance {var}");
}

#[test]
fn random_float_like_and_f64() {
    check_random(|d| ft(d, [3, 7]).random_like(Distribution::Uniform(5.0, 6.0)), 5.0, 6.0);
    check_random(
        |d| Tensor::<2>::random([4, 4], Distribution::Uniform(0.0, 1.0), (d, DType::F64)),
        0.0,
        1.0,
    );
}

#[test]
fn random_int_uniform() {
    check_random(|d| Tensor::<2, Int>::random([50, 20], Distribution::Uniform(-3.0, 7.0), d), -3.0, 7.0);
}

#[test]
fn random_seeded_is_reproducible_on_the_device() {
    // Its own host: on the shared one, other tests draw between the seed and the draw (this
    // failed in CI that way, one run in many).
    let host = HostProcess::own_target();
    let d = host.device(0);
    d.seed(1234);
    let a = Tensor::<1>::random([64], Distribution::Default, &d).into_data();
    d.seed(1234);
    let b = Tensor::<1>::random([64], Distribution::Default, &d).into_data();
    assert_eq!(a.as_bytes(), b.as_bytes(), "the same seed gave different values");
}

#[test]
fn empty_float_int_bool_have_shape_and_dtype() {
    check_random(|d| Tensor::<2>::empty([3, 5], d), 1.0, 0.0);
    check_random(|d| Tensor::<3, Int>::empty([2, 0, 4], d), 1.0, 0.0);
    check_random(|d| Tensor::<2, Bool>::empty([2, 2], d), 1.0, 0.0);
}
