//! The smallest end-to-end checks: a Burn program's tensors go to the host and come back.

use burn::prelude::*;
use burn::tensor::TensorData;
use torchbridge_interop::harness::{TorchbridgeHost, assert_same, check};

#[test]
fn data_round_trips_through_the_host() {
    let device = TorchbridgeHost::shared().device(0);
    let data = TensorData::from([[1.0f32, -2.5, 3.25], [4.0, 5.0, 6.0]]);
    let tensor = Tensor::<2>::from_data(data.clone(), &device);
    assert_same(&tensor.into_data(), &data, 0.0);
}

#[test]
fn int_and_bool_data_round_trip() {
    let device = TorchbridgeHost::shared().device(0);
    // The host announces Flex's I32 ints (Burn's client converts the data to them).
    let ints = TensorData::from([[1i32, -2], [3, i32::MAX]]);
    let t = Tensor::<2, Int>::from_data(ints.clone(), &device);
    assert_same(&t.into_data(), &ints, 0.0);
    let bools = TensorData::from([true, false, true]);
    let b = Tensor::<1, Bool>::from_data(bools.clone(), &device);
    assert_same(&b.into_data(), &bools, 0.0);
}

#[test]
fn elementwise_arithmetic_matches_burn() {
    check(
        |device| {
            let a = Tensor::<2>::from_data([[1.0f32, 2.0], [3.0, 4.0]], device);
            let b = Tensor::<2>::from_data([[0.5f32, -1.0], [2.0, 8.0]], device);
            vec![(a.clone() + b.clone()).into_data(), (a * b).exp().into_data()]
        },
        1e-6,
    );
}
