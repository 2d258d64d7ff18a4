//! Every interop suite of the Burn 0.23.0-pre.1 crate in one test binary, as in tests/interop:
//! the shared suites are tests/interop's files built with `cfg(burn_023)`, which name the harness
//! `torchbridge_interop` (this crate under that name); quantization and conformance_v6 exist only
//! in 0.23's API. CTest runs one suite per test with a `<suite>::` filter.

// conformance_tensor's deepest tensor expressions need more than the default 128.
#![recursion_limit = "512"]

extern crate torchbridge_interop_023 as torchbridge_interop;

#[path = "../../interop/tests/aoti_models.rs"]
mod aoti_models;
#[path = "../../interop/tests/conformance_nn.rs"]
mod conformance_nn;
#[path = "../../interop/tests/conformance_router.rs"]
mod conformance_router;
#[path = "../../interop/tests/conformance_tensor.rs"]
mod conformance_tensor;
#[path = "conformance_v6.rs"]
mod conformance_v6;
#[path = "../../interop/tests/custom_ops.rs"]
mod custom_ops;
#[path = "../../interop/tests/model_repository.rs"]
mod model_repository;
#[path = "quantization.rs"]
mod quantization;
#[path = "../../interop/tests/federation.rs"]
mod federation;
#[path = "../../interop/tests/smoke.rs"]
mod smoke;
#[path = "../../interop/tests/torch_module.rs"]
mod torch_module;
#[path = "../../interop/tests/training_contract.rs"]
mod training_contract;
#[path = "../../interop/tests/transfers.rs"]
mod transfers;
