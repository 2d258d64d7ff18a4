//! See tests/ (the interop suite) and src/bin/ (golden vectors).
fn main() {
    println!("torchbridge interop crate: run `cargo test` (with TORCHBRIDGE_BIN set) for the suite");
}
