//! Marks the sources shared with tests/interop (through #[path]) as built against Burn
//! 0.23.0-pre.1: `#[cfg(burn_023)]` selects the 0.23 API where it differs from 0.22.1.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(burn_023)");
    println!("cargo::rustc-cfg=burn_023");
}
