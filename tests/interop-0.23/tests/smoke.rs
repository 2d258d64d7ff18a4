//! tests/interop/tests/smoke.rs, built against Burn 0.23.0-pre.1 (`cfg(burn_023)`): the shared file
//! names the harness `torchbridge_interop`, which is this crate under that name.

extern crate torchbridge_interop_023 as torchbridge_interop;

#[path = "../../interop/tests/smoke.rs"]
mod smoke;
