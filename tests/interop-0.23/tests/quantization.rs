//! Quantized tensors end to end through Burn 0.23.0-pre.1's own client, which (unlike 0.22.1's)
//! can quantize: each case runs on the device under test (`TB_TARGET`: our host, or Burn 0.23's own
//! server on Flex) and on Flex in-process, and compares the quantized data byte for byte (0.23's
//! client rejects any but the canonical layout, so a wrong length would hang the read) and the
//! dequantized values. Covers what the 0.23 router emits for quantized tensors: Quantize,
//! Dequantize, quantized data registered and read, the layout ops (reshape, swap_dims, permute,
//! flip, slice, select, gather, expand) on QFloat tensors, and the mixed matmul.

use burn::prelude::*;
use burn::tensor::quantization::{
    Calibration, QuantScheme, QuantStore, QuantValue, ScaleDtype, compute_q_params, compute_range,
};
use burn::tensor::{DType, Int, TensorData};
use torchbridge_interop::harness::{check, reference};

/// The schemes Burn's own quantization tests use: per-tensor and per-block, 8/4/2-bit integers,
/// packed in u32 words or stored natively.
fn schemes() -> Vec<(&'static str, QuantScheme)> {
    let base = QuantScheme::default();
    vec![
        ("q8s-tensor-native", base.with_value(QuantValue::Q8S).with_store(QuantStore::Native)),
        ("q8s-tensor-packed", base.with_value(QuantValue::Q8S)),
        ("q8f-tensor-packed", base.with_value(QuantValue::Q8F)),
        (
            "q8s-block32",
            base.with_value(QuantValue::Q8S).per_block([32], ScaleDtype::F32),
        ),
        (
            "q4s-block16",
            base.with_value(QuantValue::Q4S).per_block([16], ScaleDtype::F32),
        ),
        (
            "q2s-block8",
            base.with_value(QuantValue::Q2S).per_block([8], ScaleDtype::F32),
        ),
    ]
}

/// Floats in [-2, 2), some exact zeros, scrambled: a [4, 32] matrix (block sizes divide 32).
fn input(d: &Device) -> Tensor<2> {
    let v: Vec<f32> =
        (0..128).map(|i| if i % 11 == 0 { 0.0 } else { ((i * 37 % 64) as f32 - 32.0) / 16.0 }).collect();
    Tensor::from_data(TensorData::new(v, [4, 32]), d)
}

/// Quantizes with the scheme's own min-max calibration, as `quantize_dynamic` does, but through
/// the explicit q-params path too, so both Quantize forms reach the host.
fn quantize(d: &Device, scheme: &QuantScheme, explicit: bool) -> Tensor<2> {
    let x = input(d);
    if explicit {
        let range = compute_range(scheme, &x, &Calibration::MinMax);
        x.quantize(scheme, compute_q_params(scheme, range))
    } else {
        x.quantize_dynamic(scheme)
    }
}

#[test]
fn quantized_data_reads_back_in_the_canonical_layout() {
    for (name, scheme) in schemes() {
        eprintln!("scheme {name}");
        check(|d| vec![quantize(d, &scheme, false).into_data()], 0.0);
        check(|d| vec![quantize(d, &scheme, true).into_data()], 0.0);
    }
}

#[test]
fn dequantize_matches_flex() {
    for (name, scheme) in schemes() {
        eprintln!("scheme {name}");
        check(|d| vec![quantize(d, &scheme, false).dequantize().into_data()], 1e-6);
    }
}

#[test]
fn quantized_data_registered_by_the_client_round_trips() {
    // The client registers Flex's quantized bytes as they are (q_from_data), then reads them back
    // and dequantizes them on the device.
    for (name, scheme) in schemes() {
        eprintln!("scheme {name}");
        let data = quantize(&reference(), &scheme, false).into_data();
        assert!(matches!(data.dtype(), DType::QFloat(_)), "{name}: Flex returned {:?}", data.dtype());
        check(
            |d| {
                let q = Tensor::<2>::from_data(data.clone(), d);
                vec![q.clone().into_data(), q.dequantize().into_data()]
            },
            1e-6,
        );
    }
}

#[test]
fn layout_ops_on_quantized_tensors() {
    // Per-tensor schemes: a block scale cannot follow every layout change (Burn's own backends
    // require whole blocks), so these run on the per-tensor ones.
    for (name, scheme) in schemes().into_iter().filter(|(n, _)| n.contains("tensor")) {
        eprintln!("scheme {name}");
        check(
            |d| {
                let q = quantize(d, &scheme, false);
                let idx = Tensor::<1, Int>::from_data(TensorData::from([3i64, 0, 2]), d);
                let gidx = Tensor::<2, Int>::from_data(
                    TensorData::new((0..128).map(|i| (i * 7 % 32) as i64).collect::<Vec<_>>(), [4, 32]),
                    d,
                );
                vec![
                    q.clone().reshape([8, 16]).dequantize().into_data(),
                    q.clone().swap_dims(0, 1).dequantize().into_data(),
                    q.clone().permute([1, 0]).dequantize().into_data(),
                    q.clone().flip([1]).dequantize().into_data(),
                    q.clone().slice([1..3, 4..20]).dequantize().into_data(),
                    q.clone().select(0, idx).dequantize().into_data(),
                    q.clone().gather(1, gidx).dequantize().into_data(),
                    q.clone().reshape([1, 4, 32]).expand([2, 4, 32]).dequantize().into_data(),
                ]
            },
            1e-6,
        );
    }
}

#[test]
fn matmul_with_a_quantized_operand() {
    for (name, scheme) in schemes() {
        eprintln!("scheme {name}");
        check(
            |d| {
                let w = quantize(d, &scheme, false); // [4, 32]
                let x = input(d).swap_dims(0, 1).reshape([32, 4]).div_scalar(2.0);
                vec![x.matmul(w).dequantize().into_data()]
            },
            1e-4,
        );
    }
}
