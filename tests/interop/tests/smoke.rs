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

/// Run by tests/interop/two_versions.sh, which starts one host and runs this file from both Burn
/// versions' crates against it at once (`TB_HOST_ADDRESS`, `TB_PEER_PROTOCOL`): this client keeps
/// its session open, waits until the other version's client has a session open on the same host
/// too, and computes while both are open, so the two versions provably share the host.
#[test]
#[ignore = "needs a host shared with another Burn version's client: tests/interop/two_versions.sh"]
fn shares_one_host_with_the_other_burn_version() {
    let peer: u16 = std::env::var("TB_PEER_PROTOCOL")
        .expect("TB_PEER_PROTOCOL: the other client's wire protocol")
        .parse()
        .expect("TB_PEER_PROTOCOL is a number");
    let host = TorchbridgeHost::shared();
    let device = host.device(0);
    let a = Tensor::<2>::from_data([[1.0f32, 2.0], [3.0, 4.0]], &device);
    assert_same(&a.clone().into_data(), &TensorData::from([[1.0f32, 2.0], [3.0, 4.0]]), 0.0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while host.open_sessions(peer) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no protocol {peer} session opened on {} within 120 s",
            host.address
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let b = a.clone().matmul(a).exp().sum_dim(1);
    assert_same(
        &b.into_data(),
        &Tensor::<2>::from_data([[7.0f32, 10.0], [15.0, 22.0]], &torchbridge_interop::harness::reference())
            .exp()
            .sum_dim(1)
            .into_data(),
        1e-5,
    );
    // Keep this session open until the peer has seen it: a peer still waiting must find it.
    std::thread::sleep(std::time::Duration::from_secs(2));
}
