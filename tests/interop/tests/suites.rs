//! Every interop suite of the Burn 0.22.1 crate, one module per file of this folder, in one test
//! binary: Burn's generic backend code is compiled and linked once instead of once per suite.
//! CTest runs one suite per test with a `<suite>::` filter (cmake/InteropCrate.cmake reads the
//! `mod` lines below), and tests/interop-0.23/tests/suites.rs builds the shared ones for 0.23.

// conformance_tensor's deepest tensor expressions need more than the default 128.
#![recursion_limit = "512"]

#[path = "aoti_models.rs"]
mod aoti_models;
#[path = "conformance_nn.rs"]
mod conformance_nn;
#[path = "conformance_router.rs"]
mod conformance_router;
#[path = "conformance_tensor.rs"]
mod conformance_tensor;
#[path = "custom_ops.rs"]
mod custom_ops;
#[path = "federation.rs"]
mod federation;
#[path = "model_repository.rs"]
mod model_repository;
#[path = "smoke.rs"]
mod smoke;
#[path = "tls.rs"]
mod tls;
#[path = "torch_module.rs"]
mod torch_module;
#[path = "training_contract.rs"]
mod training_contract;
#[path = "transfers.rs"]
mod transfers;
