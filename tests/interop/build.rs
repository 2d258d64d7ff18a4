//! Declares `cfg(burn_023)`, which this crate never sets: the sources here are shared with
//! tests/interop-0.23 (Burn 0.23.0-pre.1), whose build.rs sets it to select the 0.23 API.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(burn_023)");
}
