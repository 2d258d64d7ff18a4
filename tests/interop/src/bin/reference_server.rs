//! Burn's own remote server, built from the pinned crates, hosting Burn's reference CPU backend
//! (Flex): the side-by-side baseline for the conformance suite, the benchmarks and the C++ client.
//!
//! `reference_server [--port N] [--devices N] [--exit-on-stdin-eof]` prints one line,
//! `reference server on ws://127.0.0.1:PORT (...)`, then serves until killed (or stdin closes). The
//! parenthesis names Flex's features and the server's thread counts, which benchmarks record.
//!
//! Built by three crates from this one file: the interop crates (Flex with its `std` feature only)
//! and bench/reference-flex (`reference_server_flex`: Flex with its default features, `simd` and
//! `rayon`).

use burn_flex::{Flex, FlexDevice};
use burn_remote::server::{BackendServer, WebSocketTransport};
use std::io::Read;

fn main() {
    let mut port = 0u16;
    let mut devices = 1usize;
    let mut exit_on_eof = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().and_then(|p| p.parse().ok()).expect("--port N"),
            "--devices" => devices = args.next().and_then(|p| p.parse().ok()).expect("--devices N"),
            "--exit-on-stdin-eof" => exit_on_eof = true,
            other => panic!("unknown argument {other}"),
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    println!(
        "reference server on ws://{} ({})",
        listener.local_addr().unwrap(),
        describe_threads()
    );
    let server = BackendServer::<Flex>::new(vec![FlexDevice::default(); devices]);
    let serving = server.serve_async(WebSocketTransport::from_listener(listener));
    if exit_on_eof {
        std::thread::spawn(|| {
            let mut sink = [0u8; 256];
            while std::io::stdin().read(&mut sink).map(|n| n > 0).unwrap_or(false) {}
            std::process::exit(0);
        });
    }
    if let Err(e) = rt.block_on(serving) {
        eprintln!("reference server stopped: {e:?}");
        std::process::exit(1);
    }
}

/// Flex's features and the threads that do the work: tokio's workers (the runtime above, default
/// one per CPU) and, where Flex has `rayon`, rayon's global pool (default one per CPU).
fn describe_threads() -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let from_env = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(cpus)
    };
    if env!("CARGO_PKG_NAME") == "torchbridge-reference-flex" {
        format!(
            "flex=std,simd,rayon tokio_workers={} rayon_threads={}",
            from_env("TOKIO_WORKER_THREADS"),
            from_env("RAYON_NUM_THREADS")
        )
    } else {
        format!("flex=std tokio_workers={} rayon_threads=0", from_env("TOKIO_WORKER_THREADS"))
    }
}
