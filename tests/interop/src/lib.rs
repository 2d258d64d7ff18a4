//! Harness for the interop suite: real Burn programs, built from the pinned registry crates, run
//! against a torchbridge host and against Burn's own backends in the same run.

pub mod harness;
pub mod inputs;
