//! tests/interop/tests/conformance_tensor.rs, built against Burn 0.23.0-pre.1 (`cfg(burn_023)`): the shared file
//! names the harness `torchbridge_interop`, which is this crate under that name.

// The shared file's own #![recursion_limit] only counts at a crate root: repeat it here.
#![recursion_limit = "512"]

extern crate torchbridge_interop_023 as torchbridge_interop;

#[path = "../../interop/tests/conformance_tensor.rs"]
#[allow(unused_attributes)]
mod conformance_tensor;
