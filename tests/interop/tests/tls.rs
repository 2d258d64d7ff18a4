//! Burn's own client over `wss://` against a host started with `--tls-cert/--tls-key` (issue 16).
//! burn-communication's websocket client is tokio-tungstenite; this crate turns on its rustls
//! feature (Cargo.toml), and rustls-native-certs makes it trust the test CA named by
//! `SSL_CERT_FILE`. Certificates come from scripts/make-test-certs at run time. One test function:
//! the environment is set once, before any connection, with no other test thread running.

use std::path::PathBuf;
use std::process::Command;

use burn::prelude::*;
use burn::tensor::TensorData;
use torchbridge_interop::harness::{TorchbridgeHost, assert_same};

fn make_certs() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tb-interop-tls-{}", std::process::id()));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make-test-certs");
    let status = Command::new(&script).arg(&dir).status();
    assert!(
        matches!(status, Ok(s) if s.success()),
        "{} failed: {status:?}",
        script.display()
    );
    dir
}

fn tls_host(certs: &std::path::Path) -> TorchbridgeHost {
    let file = |name: &str| certs.join(name).to_string_lossy().into_owned();
    let (cert, key, ca) = (file("host.pem"), file("host.key"), file("ca.pem"));
    let host = TorchbridgeHost::spawn(&["--tls-cert", &cert, "--tls-key", &key, "--tls-ca", &ca]);
    assert!(host.address.starts_with("wss://"), "{}", host.address);
    host
}

#[test]
fn burns_client_runs_and_moves_tensors_over_wss() {
    let certs = make_certs();
    // SAFETY: the only test of this binary, before it starts any thread that reads the
    // environment (no connection has been made yet).
    unsafe { std::env::set_var("SSL_CERT_FILE", certs.join("ca.pem")) };

    let (h1, h2) = (tls_host(&certs), tls_host(&certs));
    let (d1, d2) = (h1.device(0), h2.device(0));
    let flex = Device::flex();

    // A small program, against Flex in-process.
    let x = TensorData::from([[1.0f32, -2.0, 3.5], [0.25, 4.0, -1.0]]);
    let w = TensorData::from([[0.5f32, 1.0], [-1.0, 2.0], [3.0, 0.0]]);
    let run = |d: &Device| {
        let a = Tensor::<2>::from_data(x.clone(), d);
        let b = Tensor::<2>::from_data(w.clone(), d);
        (
            a.matmul(b).exp().sum_dim(1),
            Tensor::<2>::from_data(x.clone(), d).argmax(1),
        )
    };
    let (remote, remote_arg) = run(&d1);
    let (local, local_arg) = run(&flex);
    assert_same(&remote.into_data(), &local.into_data(), 1e-5);
    assert_same(&remote_arg.into_data(), &local_arg.into_data(), 0.0);

    // Host to host: h2 downloads from h1's /data over TLS (trusting --tls-ca), and back.
    let a = Tensor::<2>::from_data(x.clone(), &d1);
    let moved = a.to_device(&d2);
    assert_same(
        &(moved.clone() * 2.0).into_data(),
        &(Tensor::<2>::from_data(x.clone(), &flex) * 2.0).into_data(),
        0.0,
    );
    let back = (moved + 1.0).to_device(&d1);
    assert_same(
        &back.into_data(),
        &(Tensor::<2>::from_data(x.clone(), &flex) + 1.0).into_data(),
        0.0,
    );
    let ints = TensorData::from([7i32, -9, i32::MAX]);
    let i = Tensor::<1, Int>::from_data(ints.clone(), &d2).to_device(&d1);
    assert_same(&i.into_data(), &ints, 0.0);

    let _ = std::fs::remove_dir_all(&certs);
}
