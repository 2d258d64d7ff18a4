//! Differential conformance of what Burn 0.23.0-pre.1 (wire protocol 6) added or changed relative
//! to 0.22.1: the Fmod leaves, avg pools with dilation, the 3-D pools and their backward leaves,
//! interpolate's coordinate transforms, nearest rounding modes and cubic options, attention's
//! causal alignment, grouped-query attention, the logsumexp forward and native attention backward,
//! bool scatter_nd / gather_nd and the native CTC gradient. Each case is one Burn program, run on
//! the device under test (`TB_TARGET`) and on Flex (Burn's reference backend) in-process, every
//! output compared.
//!
//! Only the 0.23 crate (tests/interop-0.23) builds this file: none of it exists in 0.22.1's API,
//! so unlike the other suites it is not shared with tests/interop through #[path].
//!
//! Inputs come from the harness's fixed generator (Burn's RNG streams differ between devices).

use burn::prelude::*;
use burn::tensor::activation as act;
use burn::tensor::module as m;
use burn::tensor::ops::{
    AttentionModuleOptions, AvgPoolOptions, CausalAlignment, CoordinateTransformMode,
    CubicOptions, IndexingUpdateOp, InterpolateMode, InterpolateOptions, MaxPoolOptions,
    NearestRoundingMode,
};
use burn::tensor::{Bool, TensorData};
use torchbridge_interop::harness::{check, values};
use torchbridge_interop::inputs::{ad, bools, floats, g, idx_data, ints, loss, p, t, ts};
use CausalAlignment::{BottomRight, TopLeft};
use CoordinateTransformMode::{AlignCorners, Asymmetric, HalfPixel, HalfPixelSymmetric, PytorchHalfPixel};

// ---------------------------------------------------------------------------------------------
// Inputs (the shared ones: torchbridge_interop::inputs)

/// A bool tensor of `shape` keyed by `seed`, about half true.
fn bits<const D: usize>(shape: [usize; D], seed: u64, device: &Device) -> Tensor<D, Bool> {
    let n = shape.iter().product();
    bools(values(n, seed).into_iter().map(|x| x > 0.0).collect(), shape, device)
}

/// Divisors in ±[0.5, 2): mixed signs, never near zero (where fmod's result is dominated by the
/// rounding of a huge quotient).
fn divisors<const D: usize>(shape: [usize; D], seed: u64, device: &Device) -> Tensor<D> {
    let n = shape.iter().product();
    let v = values(n, seed)
        .into_iter()
        .map(|x| x.signum() * (0.5 + 1.5 * x.abs()))
        .collect::<Vec<_>>();
    Tensor::from_data(TensorData::new(v, shape), device)
}

// ---------------------------------------------------------------------------------------------
// Option shorthands

fn mp<const N: usize>(k: [usize; N], s: [usize; N], p: [usize; N], dil: [usize; N], ceil: bool) -> MaxPoolOptions<N> {
    MaxPoolOptions::new(k).with_stride(s).with_padding(p).with_dilation(dil).with_ceil_mode(ceil)
}
fn ap<const N: usize>(k: [usize; N], s: [usize; N], p: [usize; N], dil: [usize; N], count_include_pad: bool, ceil: bool) -> AvgPoolOptions<N> {
    AvgPoolOptions::new(k)
        .with_stride(s)
        .with_padding(p)
        .with_dilation(dil)
        .with_count_include_pad(count_include_pad)
        .with_ceil_mode(ceil)
}
fn interp(mode: InterpolateMode, transform: CoordinateTransformMode) -> InterpolateOptions {
    InterpolateOptions::new(mode).with_coordinate_transform(transform)
}
fn nearest(rounding: NearestRoundingMode) -> InterpolateOptions {
    interp(InterpolateMode::Nearest, CoordinateTransformMode::Asymmetric).with_nearest_mode(rounding)
}
fn cubic(a: f32, exclude_outside: bool) -> CubicOptions {
    CubicOptions { a, exclude_outside }
}
/// A crop that reaches past the image on three sides, so the extrapolation value shows.
fn tf_crop() -> CoordinateTransformMode {
    CoordinateTransformMode::TfCropAndResize { roi: [[-0.2, 0.9], [0.1, 1.3]], extrapolation_value: 0.25 }
}
fn causal(alignment: CausalAlignment) -> AttentionModuleOptions {
    AttentionModuleOptions { scale: None, softcap: None, is_causal: true, causal_alignment: alignment }
}

// ---------------------------------------------------------------------------------------------
// The table. `name |device| (tolerance) { program }`; attributes (e.g. #[ignore]) pass through.

macro_rules! cases {
    ($($(#[$attr:meta])* $name:ident |$d:ident| ($tol:expr) $body:block)*) => {
        $(
            #[test]
            $(#[$attr])*
            fn $name() {
                check(|$d: &Device| -> Vec<TensorData> { $body }, $tol);
            }
        )*
    };
}

const TOL: f64 = 1e-4;

cases! {
// ---- fmod (0.23 sends Fmod / FmodScalar; 0.22.1 decomposed it on the client) ------------------
fmod_sign_of_dividend_and_special_values |d| (TOL) {
    // C fmod: the sign of the dividend, exact multiples give ±0, x % ±inf = x, and inf dividends,
    // zero divisors and NaNs give NaN.
    let x = floats(vec![5.3, -5.3, 5.3, -5.3, 6.0, -6.0, 0.0, 2.5, f32::INFINITY, 1.0, 3.0, -3.0, f32::NAN, 7.0], [14], d);
    let y = floats(vec![2.0, 2.0, -2.0, -2.0, 2.0, -3.0, 1.5, 0.0, 2.0, f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY, 1.0, f32::NAN], [14], d);
    vec![x.fmod(y).into_data()]
}
fmod_mixed_signs |d| (TOL) {
    vec![ts([4, 6], 1, 7.0, d).fmod(divisors([4, 6], 2, d)).into_data()]
}
fmod_scalar_positive_and_negative_divisor |d| (TOL) {
    let x = ts([3, 7], 1, 9.0, d);
    vec![x.clone().fmod_scalar(2.5).into_data(), x.clone().fmod_scalar(-1.75).into_data(), x.fmod_scalar(0.0).into_data()]
}
fmod_in_fused_chain |d| (TOL) {
    // Elementwise around the fmods, so Burn's fusion client batches them with their neighbours.
    let x = ts([3, 5], 1, 4.0, d);
    let y = (x.clone() * 2.0 + 1.0).fmod_scalar(1.5).exp() - x.clone().fmod(divisors([3, 5], 2, d)).abs();
    vec![y.into_data()]
}
grad_fmod |d| (TOL) {
    let d = ad(d);
    let x = ts([3, 5], 1, 6.0, &d).require_grad(); let y = divisors([3, 5], 2, &d).require_grad();
    let z = x.clone().fmod(y.clone()) + x.clone().fmod_scalar(-1.25) * 2.0;
    let gr = loss(z.clone(), 9).backward();
    vec![z.into_data(), g(&x, &gr), g(&y, &gr)]
}

// ---- avg pool with dilation (0.23's AvgPoolOptions::dilation) ---------------------------------
avg_pool1d_dilation |d| (TOL) {
    let x = t([2, 3, 11], 1, d);
    vec![
        m::avg_pool1d(x.clone(), ap([3], [1], [0], [2], true, false)).into_data(),
        m::avg_pool1d(x, ap([3], [2], [2], [2], false, false)).into_data(),
    ]
}
avg_pool1d_dilation_ceil |d| (TOL) {
    let x = t([1, 2, 10], 1, d);
    vec![
        m::avg_pool1d(x.clone(), ap([2], [2], [1], [3], true, true)).into_data(),
        m::avg_pool1d(x, ap([2], [2], [1], [3], false, true)).into_data(),
    ]
}
avg_pool2d_dilation_padding_include |d| (TOL) {
    vec![m::avg_pool2d(t([2, 2, 8, 9], 1, d), ap([3, 3], [2, 1], [1, 2], [2, 2], true, false)).into_data()]
}
avg_pool2d_dilation_padding_exclude_ceil |d| (TOL) {
    vec![m::avg_pool2d(t([1, 3, 9, 8], 1, d), ap([3, 2], [2, 2], [2, 1], [2, 3], false, true)).into_data()]
}
avg_pool2d_dilation_no_padding |d| (TOL) {
    vec![m::avg_pool2d(t([1, 2, 7, 8], 1, d), ap([2, 3], [1, 2], [0, 0], [3, 2], true, false)).into_data()]
}
avg_pool2d_dilation_asymmetric_padding |d| (TOL) {
    // Asymmetric padding is materialised by the client (pad + a pooled validity mask), so the
    // host sees dilated pools with zero padding, twice.
    let opts = AvgPoolOptions::new([2, 3]).with_padding_pairs([(0, 2), (1, 0)]).with_dilation([2, 1]).with_count_include_pad(false).with_ceil_mode(true).with_stride([2, 2]);
    vec![m::avg_pool2d(t([1, 2, 6, 7], 1, d), opts).into_data()]
}
grad_avg_pool1d_dilation |d| (TOL) {
    let d = ad(d); let x = p([2, 2, 11], 1, &d);
    let y = m::avg_pool1d(x.clone(), ap([3], [2], [2], [2], false, true)); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}
grad_avg_pool2d_dilation_include |d| (TOL) {
    let d = ad(d); let x = p([1, 2, 8, 7], 1, &d);
    let y = m::avg_pool2d(x.clone(), ap([3, 2], [1, 2], [2, 1], [2, 2], true, false)); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}
grad_avg_pool2d_dilation_exclude_ceil |d| (TOL) {
    let d = ad(d); let x = p([2, 1, 9, 9], 1, &d);
    let y = m::avg_pool2d(x.clone(), ap([3, 3], [2, 2], [1, 2], [2, 2], false, true)); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}

// ---- 3-D pools ------------------------------------------------------------------------------
max_pool3d_basic |d| (TOL) {
    vec![m::max_pool3d(t([2, 2, 4, 4, 6], 1, d), mp([2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], false)).into_data()]
}
max_pool3d_padding_dilation_ceil |d| (TOL) {
    vec![m::max_pool3d(t([1, 2, 6, 5, 7], 1, d), mp([2, 3, 2], [2, 1, 2], [1, 1, 1], [2, 1, 2], true)).into_data()]
}
max_pool3d_with_indices_padding |d| (TOL) {
    let (out, idx) = m::max_pool3d_with_indices(t([1, 2, 5, 5, 4], 1, d), mp([3, 3, 2], [2, 2, 1], [1, 1, 1], [1, 1, 1], false));
    vec![out.into_data(), idx_data(idx)]
}
max_pool3d_with_indices_asymmetric_padding |d| (TOL) {
    // The client pads with -inf and maps the indices back to the unpadded input.
    let opts = MaxPoolOptions::new([2, 2, 3]).with_stride([1, 2, 2]).with_padding_pairs([(1, 0), (0, 1), (2, 0)]);
    let (out, idx) = m::max_pool3d_with_indices(t([1, 1, 4, 5, 6], 1, d), opts);
    vec![out.into_data(), idx_data(idx)]
}
avg_pool3d_padding_include_and_exclude |d| (TOL) {
    let x = t([1, 2, 5, 6, 4], 1, d);
    vec![
        m::avg_pool3d(x.clone(), ap([3, 3, 2], [2, 2, 1], [1, 1, 1], [1, 1, 1], true, false)).into_data(),
        m::avg_pool3d(x, ap([3, 3, 2], [2, 2, 1], [1, 1, 1], [1, 1, 1], false, false)).into_data(),
    ]
}
avg_pool3d_dilation_ceil |d| (TOL) {
    let x = t([2, 1, 7, 6, 8], 1, d);
    vec![
        m::avg_pool3d(x.clone(), ap([2, 2, 3], [2, 2, 2], [1, 0, 1], [2, 3, 2], true, true)).into_data(),
        m::avg_pool3d(x, ap([2, 2, 3], [2, 2, 2], [1, 0, 1], [2, 3, 2], false, true)).into_data(),
    ]
}
adaptive_avg_pool3d_up_and_uneven |d| (TOL) {
    let x = t([1, 2, 3, 5, 4], 1, d);
    vec![m::adaptive_avg_pool3d(x.clone(), [5, 3, 7]).into_data(), m::adaptive_avg_pool3d(x, [2, 4, 3]).into_data()]
}
grad_max_pool3d |d| (TOL) {
    let d = ad(d); let x = p([1, 2, 5, 4, 6], 1, &d);
    let y = m::max_pool3d(x.clone(), mp([3, 2, 3], [2, 1, 2], [1, 0, 1], [1, 1, 1], false)); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}
grad_max_pool3d_with_indices_dilation_ceil |d| (TOL) {
    let d = ad(d); let x = p([2, 1, 6, 5, 6], 1, &d);
    let (y, idx) = m::max_pool3d_with_indices(x.clone(), mp([2, 2, 2], [2, 1, 2], [1, 0, 1], [2, 2, 1], true));
    let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), idx_data(idx), g(&x, &gr)]
}
grad_avg_pool3d_padding_exclude |d| (TOL) {
    let d = ad(d); let x = p([1, 2, 5, 5, 4], 1, &d);
    let y = m::avg_pool3d(x.clone(), ap([3, 3, 2], [2, 2, 1], [1, 1, 1], [1, 1, 1], false, false)); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}
grad_avg_pool3d_dilation_ceil_include |d| (TOL) {
    let d = ad(d); let x = p([1, 1, 7, 6, 7], 1, &d);
    let y = m::avg_pool3d(x.clone(), ap([2, 3, 2], [2, 2, 2], [1, 1, 0], [2, 1, 3], true, true)); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}
grad_adaptive_avg_pool3d_up |d| (TOL) {
    let d = ad(d); let x = p([1, 2, 3, 4, 2], 1, &d);
    let y = m::adaptive_avg_pool3d(x.clone(), [4, 3, 5]); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}

// ---- interpolate: nearest rounding modes ------------------------------------------------------
// Asymmetric mapping with H 3 -> 6 puts source rows on .5 (where the prefer-floor/ceil pairs
// split) and W 6 -> 8 puts columns on .25, .5 and .75 as well, so all four modes pick different
// pixels; Ceil and RoundPreferCeil run past the edge and clamp.
interpolate_nearest_round_prefer_floor |d| (TOL) {
    vec![m::interpolate(t([1, 2, 3, 6], 1, d), nearest(NearestRoundingMode::RoundPreferFloor).with_output_size([6, 8])).into_data()]
}
interpolate_nearest_round_prefer_ceil |d| (TOL) {
    vec![m::interpolate(t([1, 2, 3, 6], 1, d), nearest(NearestRoundingMode::RoundPreferCeil).with_output_size([6, 8])).into_data()]
}
interpolate_nearest_floor |d| (TOL) {
    vec![m::interpolate(t([1, 2, 3, 6], 1, d), nearest(NearestRoundingMode::Floor).with_output_size([6, 8])).into_data()]
}
interpolate_nearest_ceil |d| (TOL) {
    vec![m::interpolate(t([1, 2, 3, 6], 1, d), nearest(NearestRoundingMode::Ceil).with_output_size([6, 8])).into_data()]
}
interpolate_nearest_transforms |d| (TOL) {
    let x = t([1, 1, 4, 5], 1, d);
    let rounding = NearestRoundingMode::RoundPreferCeil;
    vec![
        m::interpolate(x.clone(), interp(InterpolateMode::Nearest, AlignCorners).with_nearest_mode(rounding).with_output_size([7, 3])).into_data(),
        m::interpolate(x.clone(), interp(InterpolateMode::Nearest, HalfPixel).with_nearest_mode(NearestRoundingMode::Floor).with_output_size([7, 3])).into_data(),
        m::interpolate(x.clone(), interp(InterpolateMode::Nearest, PytorchHalfPixel).with_nearest_mode(rounding).with_output_size([1, 8])).into_data(),
        m::interpolate(x, interp(InterpolateMode::NearestExact, HalfPixelSymmetric).with_scale_factor([1.7, 0.6])).into_data(),
    ]
}

// ---- interpolate: coordinate transforms, cubic options, crop and resize ----------------------
interpolate_bilinear_asymmetric |d| (TOL) {
    vec![m::interpolate(t([2, 1, 4, 5], 1, d), interp(InterpolateMode::Bilinear, Asymmetric).with_output_size([7, 3])).into_data()]
}
interpolate_bilinear_pytorch_half_pixel |d| (TOL) {
    // An output size of 1 is where PytorchHalfPixel differs from HalfPixel.
    let x = t([1, 2, 5, 4], 1, d);
    vec![
        m::interpolate(x.clone(), interp(InterpolateMode::Bilinear, PytorchHalfPixel).with_output_size([1, 7])).into_data(),
        m::interpolate(x, interp(InterpolateMode::Bilinear, HalfPixel).with_output_size([1, 7])).into_data(),
    ]
}
interpolate_bilinear_half_pixel_symmetric |d| (TOL) {
    // A scale whose floor(in * scale) / in differs from the scale itself, where the symmetric
    // offset is non-zero.
    vec![m::interpolate(t([1, 2, 5, 7], 1, d), interp(InterpolateMode::Bilinear, HalfPixelSymmetric).with_scale_factor([1.7, 0.6])).into_data()]
}
interpolate_bicubic_asymmetric |d| (TOL) {
    vec![m::interpolate(t([1, 2, 4, 4], 1, d), interp(InterpolateMode::Bicubic, Asymmetric).with_output_size([7, 6])).into_data()]
}
interpolate_bicubic_coefficient_and_exclude_outside |d| (TOL) {
    let x = t([1, 2, 4, 5], 1, d);
    vec![
        m::interpolate(x.clone(), interp(InterpolateMode::Bicubic, HalfPixel).with_cubic_options(cubic(-0.5, false)).with_output_size([7, 8])).into_data(),
        m::interpolate(x.clone(), interp(InterpolateMode::Bicubic, HalfPixel).with_cubic_options(cubic(-0.75, true)).with_output_size([7, 8])).into_data(),
        m::interpolate(x, interp(InterpolateMode::Bicubic, AlignCorners).with_cubic_options(cubic(-0.5, true)).with_output_size([3, 9])).into_data(),
    ]
}
interpolate_tf_crop_and_resize |d| (TOL) {
    let x = t([1, 2, 5, 6], 1, d);
    vec![
        m::interpolate(x.clone(), interp(InterpolateMode::Nearest, tf_crop()).with_nearest_mode(NearestRoundingMode::RoundPreferCeil).with_output_size([4, 5])).into_data(),
        m::interpolate(x.clone(), interp(InterpolateMode::Bilinear, tf_crop()).with_output_size([4, 5])).into_data(),
        m::interpolate(x, interp(InterpolateMode::Bicubic, tf_crop()).with_cubic_options(cubic(-0.5, true)).with_output_size([4, 5])).into_data(),
    ]
}
interpolate_lanczos3_transforms |d| (TOL) {
    let x = t([1, 1, 5, 6], 1, d);
    vec![
        m::interpolate(x.clone(), interp(InterpolateMode::Lanczos3, Asymmetric).with_output_size([8, 4])).into_data(),
        m::interpolate(x, interp(InterpolateMode::Lanczos3, AlignCorners).with_output_size([8, 4])).into_data(),
    ]
}
interpolate_scale_factor_drives_coordinates |d| (TOL) {
    // With a scale factor, scale-dependent transforms use it as given (1.7, not 8 / 5).
    let x = t([1, 1, 5, 4], 1, d);
    vec![
        m::interpolate(x.clone(), interp(InterpolateMode::Bilinear, HalfPixel).with_scale_factor([1.7, 2.3])).into_data(),
        m::interpolate(x.clone(), nearest(NearestRoundingMode::Floor).with_scale_factor([1.7, 2.3])).into_data(),
        m::interpolate(x.clone(), interp(InterpolateMode::Bicubic, PytorchHalfPixel).with_scale_factor([0.7, 1.6])).into_data(),
        m::interpolate(x, interp(InterpolateMode::Bilinear, AlignCorners).with_scale_factor([1.7, 2.3])).into_data(),
    ]
}
grad_interpolate_nearest_round_prefer_ceil |d| (TOL) {
    let d = ad(d); let x = p([1, 2, 3, 6], 1, &d);
    let y = m::interpolate(x.clone(), nearest(NearestRoundingMode::RoundPreferCeil).with_output_size([6, 8])); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}
grad_interpolate_nearest_exact_half_pixel_symmetric |d| (TOL) {
    let d = ad(d); let x = p([1, 1, 5, 7], 1, &d);
    let y = m::interpolate(x.clone(), interp(InterpolateMode::NearestExact, HalfPixelSymmetric).with_scale_factor([1.7, 0.6])); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}
grad_interpolate_bilinear_asymmetric |d| (TOL) {
    let d = ad(d); let x = p([1, 2, 4, 5], 1, &d);
    let y = m::interpolate(x.clone(), interp(InterpolateMode::Bilinear, Asymmetric).with_output_size([7, 3])); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}
grad_interpolate_bilinear_scale_factor_pytorch_half_pixel |d| (TOL) {
    let d = ad(d); let x = p([1, 1, 5, 4], 1, &d);
    let y = m::interpolate(x.clone(), interp(InterpolateMode::Bilinear, PytorchHalfPixel).with_scale_factor([1.7, 0.3])); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}
grad_interpolate_bicubic_exclude_outside |d| (TOL) {
    let d = ad(d); let x = p([1, 2, 4, 4], 1, &d);
    let y = m::interpolate(x.clone(), interp(InterpolateMode::Bicubic, HalfPixel).with_cubic_options(cubic(-0.5, true)).with_output_size([6, 7])); let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&x, &gr)]
}

// ---- attention: causal alignment, grouped-query heads ------------------------------------------
attention_causal_top_left_q_shorter |d| (TOL) {
    vec![m::attention(t([1, 2, 3, 4], 1, d), t([1, 2, 6, 4], 2, d), t([1, 2, 6, 3], 3, d), None, None, causal(TopLeft)).into_data()]
}
attention_causal_top_left_q_longer |d| (TOL) {
    vec![m::attention(t([2, 1, 6, 4], 1, d), t([2, 1, 4, 4], 2, d), t([2, 1, 4, 5], 3, d), None, None, causal(TopLeft)).into_data()]
}
attention_causal_bottom_right_fully_masked_rows |d| (TOL) {
    // With 6 queries and 4 keys, bottom-right alignment hides every key from the first two
    // queries: the contract gives those rows zero probabilities, so zero outputs.
    vec![m::attention(t([1, 2, 6, 4], 1, d), t([1, 2, 4, 4], 2, d), t([1, 2, 4, 3], 3, d), None, None, causal(BottomRight)).into_data()]
}
attention_causal_top_left_mask_bias_scale |d| (TOL) {
    let mask = bools((0..15).map(|i| i % 4 == 1).collect(), [1, 1, 3, 5], d).expand([2, 2, 3, 5]);
    let opts = AttentionModuleOptions { scale: Some(0.4), softcap: Some(3.0), ..causal(TopLeft) };
    vec![m::attention(ts([2, 2, 3, 4], 1, 2.0, d), ts([2, 2, 5, 4], 2, 2.0, d), t([2, 2, 5, 2], 3, d), Some(mask), Some(t([2, 2, 3, 5], 4, d)), opts).into_data()]
}
attention_grouped_query |d| (TOL) {
    // 4 query heads over 2 K/V heads (and multi-query: 4 over 1).
    vec![
        m::attention(t([2, 4, 3, 4], 1, d), t([2, 2, 5, 4], 2, d), t([2, 2, 5, 3], 3, d), None, None, causal(TopLeft)).into_data(),
        m::attention(t([1, 4, 5, 4], 1, d), t([1, 1, 3, 4], 2, d), t([1, 1, 3, 3], 3, d), None, None, causal(BottomRight)).into_data(),
    ]
}
grad_attention_causal_top_left |d| (TOL) {
    let d = ad(d); let (q, k, v) = (p([1, 2, 3, 4], 1, &d), p([1, 2, 5, 4], 2, &d), p([1, 2, 5, 3], 3, &d));
    let y = m::attention(q.clone(), k.clone(), v.clone(), None, None, causal(TopLeft));
    let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&q, &gr), g(&k, &gr), g(&v, &gr)]
}
grad_attention_causal_bottom_right |d| (TOL) {
    let d = ad(d); let (q, k, v) = (p([2, 1, 3, 4], 1, &d), p([2, 1, 5, 4], 2, &d), p([2, 1, 5, 2], 3, &d));
    let y = m::attention(q.clone(), k.clone(), v.clone(), None, None, causal(BottomRight));
    let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&q, &gr), g(&k, &gr), g(&v, &gr)]
}
grad_attention_causal_fully_masked_rows |d| (TOL) {
    // Rows with every key hidden: zero output, and no gradient flows through them.
    let d = ad(d); let (q, k, v) = (p([1, 1, 5, 4], 1, &d), p([1, 1, 3, 4], 2, &d), p([1, 1, 3, 3], 3, &d));
    let y = m::attention(q.clone(), k.clone(), v.clone(), None, None, causal(BottomRight));
    let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&q, &gr), g(&k, &gr), g(&v, &gr)]
}
grad_attention_grouped_query_softcap |d| (TOL) {
    let d = ad(d);
    let (q, k, v) = (ts([1, 4, 3, 4], 1, 2.0, &d).require_grad(), ts([1, 2, 4, 4], 2, 2.0, &d).require_grad(), p([1, 2, 4, 3], 3, &d));
    let opts = AttentionModuleOptions { scale: Some(0.6), softcap: Some(2.0), ..causal(TopLeft) };
    let y = m::attention(q.clone(), k.clone(), v.clone(), None, None, opts);
    let gr = loss(y.clone(), 9).backward();
    vec![y.into_data(), g(&q, &gr), g(&k, &gr), g(&v, &gr)]
}

// ---- bool scatter_nd / gather_nd ------------------------------------------------------------
bool_gather_nd |d| (0.0) {
    let x = bits([3, 4, 2], 1, d);
    let rows: Tensor<2, Bool> = x.clone().gather_nd(ints(vec![0, 1, 2, 3, 1, 0, 2, 0], [4, 2], d));
    let elems: Tensor<1, Bool> = x.clone().gather_nd(ints(vec![0, 1, 1, 2, 3, 0, 1, 2, 1], [3, 3], d));
    let batched: Tensor<4, Bool> = x.gather_nd(ints(vec![2, 0, 1, 2], [2, 2, 1], d));
    vec![rows.into_data(), elems.into_data(), batched.into_data()]
}
bool_scatter_nd_assign |d| (0.0) {
    let x = bits([4, 3, 2], 1, d);
    let rows = x.clone().scatter_nd(ints(vec![0, 2, 3], [3, 1], d), bits([3, 3, 2], 2, d), IndexingUpdateOp::Assign);
    let elems = x.scatter_nd(ints(vec![0, 0, 1, 3, 2, 0, 1, 1, 1], [3, 3], d), bools(vec![true, false, true], [3], d), IndexingUpdateOp::Assign);
    vec![rows.into_data(), elems.into_data()]
}
bool_scatter_nd_reductions |d| (0.0) {
    // On bools Add and Max are logical or, Mul and Min logical and.
    let x = bits([4, 5], 1, d);
    let (idx, vals) = (ints(vec![3, 0, 2], [3, 1], d), bits([3, 5], 2, d));
    vec![
        x.clone().scatter_nd(idx.clone(), vals.clone(), IndexingUpdateOp::Add).into_data(),
        x.clone().scatter_nd(idx.clone(), vals.clone(), IndexingUpdateOp::Mul).into_data(),
        x.clone().scatter_nd(idx.clone(), vals.clone(), IndexingUpdateOp::Min).into_data(),
        x.scatter_nd(idx, vals, IndexingUpdateOp::Max).into_data(),
    ]
}

// ---- CTC loss (0.23 sends CtcLossBackward for the gradient) ------------------------------------
// 1e-3: the loss is a log-space sum over every alignment, accumulated in a different order by each
// implementation.
//
// Gradients are taken through a log_softmax. CtcLossBackward's contract (Burn's own default,
// PyTorch's kernel) is the gradient against the logits under a log_softmax, `exp(log_probs)` more
// than the true gradient against `log_probs`, while Flex, which has no native backward,
// differentiates the decomposed forward exactly. The two agree once a log_softmax sits in between;
// with `log_probs` itself as the leaf they differ on every host, Burn's own server included. The
// leaf's own values are compared with Flex's default in `router::ctc_loss_backward_*`.
ctc_loss_blank_middle_varied_lengths |d| (1e-3) {
    // Blank 2 of 5 classes; a repeated label, an empty target and a short input.
    let log_probs = act::log_softmax(ts([7, 3, 5], 1, 2.0, d), 2);
    let targets = ints(vec![1, 3, 3, 4, 0, 1, 0, 0, 4, 4, 4, 4], [3, 4], d);
    let loss = m::ctc_loss(log_probs, targets, ints(vec![7, 5, 3], [3], d), ints(vec![4, 2, 0], [3], d), 2);
    vec![loss.into_data()]
}
grad_ctc_loss_blank_last |d| (1e-3) {
    let d = ad(d); let x = ts([8, 2, 4], 1, 2.0, &d).require_grad();
    let log_probs = act::log_softmax(x.clone(), 2);
    let targets = ints(vec![1, 1, 0, 2, 0, 2, 2, 0], [2, 4], &d);
    let l = m::ctc_loss(log_probs, targets, ints(vec![8, 6], [2], &d), ints(vec![4, 3], [2], &d), 3);
    let gr = loss(l.clone(), 9).backward();
    vec![l.into_data(), g(&x, &gr)]
}
}

// ---------------------------------------------------------------------------------------------
// Leaves the dispatch API never exposes on their own: attention's logsumexp forward and native
// backward (what autodiff emits for attention without mask or bias) and CtcLossBackward. Burn's
// router client driven through the backend traits, run on the device under test and on Flex
// (whose trait defaults compose them from tensor ops).

mod router {
    use burn_backend::ops::{AttentionModuleOptions, CausalAlignment};
    use burn_backend::tensor::{FloatTensor, IntTensor};
    use burn_backend::{Backend, TensorData, TensorMetadata};
    use burn_flex::Flex;
    use torchbridge_interop::harness::{Router, check_backend, values};

    fn f<B: Backend>(shape: &[usize], seed: u64, device: &B::Device) -> FloatTensor<B> {
        let n = shape.iter().product();
        B::float_from_data(TensorData::new(values(n, seed), shape.to_vec()), device)
    }

    fn iv<B: Backend>(data: Vec<i64>, shape: &[usize], device: &B::Device) -> IntTensor<B> {
        B::int_from_data(TensorData::new(data, shape.to_vec()), device)
    }

    fn rf<B: Backend>(t: FloatTensor<B>) -> TensorData {
        burn_std::future::block_on(B::float_into_data(t)).expect("reading a float tensor")
    }

    fn opts(alignment: CausalAlignment, softcap: Option<f64>) -> AttentionModuleOptions {
        AttentionModuleOptions { scale: None, softcap, is_causal: true, causal_alignment: alignment }
    }

    /// Forward and backward for one shape and option set: out, logsumexp, and the three grads.
    fn forward_backward<B: Backend>(
        d: &B::Device,
        q: [usize; 4],
        k: [usize; 4],
        v: [usize; 4],
        options: AttentionModuleOptions,
    ) -> Vec<TensorData> {
        let (q, k, v) = (f::<B>(&q, 1, d), f::<B>(&k, 2, d), f::<B>(&v, 3, d));
        let (out, lse) = B::attention_with_logsumexp(q.clone(), k.clone(), v.clone(), options);
        let out_grad = f::<B>(&out.shape(), 4, d);
        let grads = B::attention_backward(q, k, v, out.clone(), lse.clone(), out_grad, options);
        vec![
            rf::<B>(out),
            rf::<B>(lse),
            rf::<B>(grads.query_grad),
            rf::<B>(grads.key_grad),
            rf::<B>(grads.value_grad),
        ]
    }

    fn top_left<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        forward_backward::<B>(d, [1, 2, 3, 4], [1, 2, 5, 4], [1, 2, 5, 3], opts(CausalAlignment::TopLeft, None))
    }

    fn bottom_right_softcap<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        forward_backward::<B>(d, [2, 1, 3, 4], [2, 1, 6, 4], [2, 1, 6, 2], opts(CausalAlignment::BottomRight, Some(1.5)))
    }

    fn grouped_query<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        forward_backward::<B>(d, [1, 4, 4, 4], [1, 2, 4, 4], [1, 2, 4, 3], opts(CausalAlignment::TopLeft, None))
    }

    /// Log-probabilities `[T, N, C]`, normalised over C as CTC expects.
    fn log_probs<B: Backend>(shape: [usize; 3], seed: u64, d: &B::Device) -> FloatTensor<B> {
        let x = B::float_mul_scalar(f::<B>(&shape, seed, d), 2.0.into());
        let lse = B::float_log(B::float_sum_dim(B::float_exp(x.clone()), 2));
        B::float_sub(x, lse)
    }

    /// Loss and gradient for one CTC problem, with a per-sample upstream gradient.
    fn ctc<B: Backend>(
        d: &B::Device,
        shape: [usize; 3],
        targets: (Vec<i64>, usize),
        input_lengths: Vec<i64>,
        target_lengths: Vec<i64>,
        blank: usize,
    ) -> Vec<TensorData> {
        let n = shape[1];
        let lp = log_probs::<B>(shape, 1, d);
        let targets = iv::<B>(targets.0, &[n, targets.1], d);
        let (il, tl) = (iv::<B>(input_lengths, &[n], d), iv::<B>(target_lengths, &[n], d));
        let loss = B::ctc_loss(lp.clone(), targets.clone(), il.clone(), tl.clone(), blank);
        let grad = B::ctc_loss_backward(lp, targets, il, tl, f::<B>(&[n], 2, d), blank);
        vec![rf::<B>(loss), rf::<B>(grad)]
    }

    fn ctc_varied_lengths<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        // Blank in the middle, a repeated label, an empty target, frames past an input's length.
        ctc::<B>(d, [7, 3, 5], (vec![1, 3, 3, 4, 0, 1, 0, 0, 4, 4, 4, 4], 4), vec![7, 5, 3], vec![4, 2, 0], 2)
    }

    fn ctc_unreachable_sample<B: Backend>(d: &B::Device) -> Vec<TensorData> {
        // The second sample needs 5 frames (a blank between the repeats) and has 4: infinite loss,
        // whose gradient the contract zeroes rather than leaving NaN.
        ctc::<B>(d, [5, 2, 3], (vec![0, 1, 0, 1, 1, 1], 3), vec![5, 4], vec![2, 3], 2)
    }

    #[test]
    fn ctc_loss_backward_varied_lengths() {
        // See the CTC cases above for the tolerance.
        check_backend(ctc_varied_lengths::<Router>, ctc_varied_lengths::<Flex>, 1e-3);
    }

    #[test]
    fn ctc_loss_backward_unreachable_sample() {
        check_backend(ctc_unreachable_sample::<Router>, ctc_unreachable_sample::<Flex>, 1e-3);
    }

    #[test]
    fn attention_logsumexp_backward_top_left() {
        check_backend(top_left::<Router>, top_left::<Flex>, super::TOL);
    }

    #[test]
    fn attention_logsumexp_backward_bottom_right_softcap() {
        check_backend(bottom_right_softcap::<Router>, bottom_right_softcap::<Flex>, super::TOL);
    }

    #[test]
    fn attention_logsumexp_backward_grouped_query() {
        check_backend(grouped_query::<Router>, grouped_query::<Flex>, super::TOL);
    }
}
