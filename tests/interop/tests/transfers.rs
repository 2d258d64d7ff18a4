//! `Tensor::to_device` between remote devices with Burn's own client: two devices of one host (the
//! same-host rendezvous, ExposeTensorLocal / RegisterTensorLocal) and two hosts (ExposeTensorRemote
//! / RegisterTensorRemote over `/data`), for float, int and bool tensors, both directions. The
//! moved tensors are read back and used in further ops on the target.

use burn::prelude::*;
use burn::tensor::TensorData;
use torchbridge_interop::harness::{TorchbridgeHost, assert_same};

/// Moves float, int and bool tensors from `from` to `to` and checks what arrives.
fn move_all(from: &Device, to: &Device) {
    let floats = TensorData::from([[1.0f32, -2.5, 3.25], [4.0, 1e-7, -6.0e10]]);
    let a = Tensor::<2>::from_data(floats.clone(), from);
    // The source keeps a reference (ReadOnly on the source), so both sides go on using it.
    let moved = a.clone().to_device(to);
    assert_same(&moved.clone().into_data(), &floats, 0.0);
    assert_same(
        &(moved * 2.0).into_data(),
        &Tensor::<2>::from_data(floats.clone(), &Device::flex())
            .mul_scalar(2.0)
            .into_data(),
        0.0,
    );
    assert_same(&a.into_data(), &floats, 0.0);

    // The host announces Flex's I32 ints, so the extremes are i32's (Burn's client converts).
    let ints = TensorData::from([[7i32, -2], [i32::MAX, i32::MIN]]);
    let i = Tensor::<2, Int>::from_data(ints.clone(), from).to_device(to);
    assert_same(&i.into_data(), &ints, 0.0);
    let small = Tensor::<1, Int>::from_data(TensorData::from([1i32, -3, 70000]), from)
        .to_device(to)
        .add_scalar(1);
    assert_eq!(small.into_data().iter::<i64>().collect::<Vec<_>>(), vec![2, -2, 70001]);

    let bools = TensorData::from([true, false, false, true]);
    let b = Tensor::<1, Bool>::from_data(bools.clone(), from).to_device(to);
    assert_same(&b.clone().into_data(), &bools, 0.0);
    assert_eq!(
        b.bool_not().into_data().iter::<bool>().collect::<Vec<_>>(),
        vec![false, true, true, false]
    );
}

#[test]
fn tensors_move_between_two_devices_of_one_host() {
    let host = TorchbridgeHost::spawn(&["--device", "cpu", "--device", "cpu"]);
    let (d0, d1) = (host.device(0), host.device(1));
    move_all(&d0, &d1);
    move_all(&d1, &d0);
}

#[test]
fn tensors_move_between_two_hosts() {
    let (h1, h2) = (TorchbridgeHost::spawn(&[]), TorchbridgeHost::spawn(&[]));
    let (d1, d2) = (h1.device(0), h2.device(0));
    move_all(&d1, &d2);
    move_all(&d2, &d1);
}

#[test]
fn a_tensor_makes_a_round_trip_through_three_devices() {
    let host = TorchbridgeHost::spawn(&["--device", "cpu", "--device", "cpu"]);
    let other = TorchbridgeHost::spawn(&[]);
    let data = TensorData::from([0.5f32, 1.5, -2.0]);
    let t = Tensor::<1>::from_data(data.clone(), &host.device(0))
        .to_device(&host.device(1))
        .to_device(&other.device(0))
        .to_device(&host.device(0));
    assert_same(&t.into_data(), &data, 0.0);
}
