//! Harness for the Burn 0.23.0-pre.1 interop suite: tests/interop's harness, built against the
//! 0.23 crates (`cfg(burn_023)`, set by build.rs, selects the places where their API differs).

#[path = "../../interop/src/harness.rs"]
pub mod harness;
#[path = "../../interop/src/inputs.rs"]
pub mod inputs;
