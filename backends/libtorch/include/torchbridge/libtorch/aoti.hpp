// AOTInductor packages (.pt2, made by torch.export and torch._inductor.aoti_compile_and_package)
// served as custom ops, beside TorchScript modules (torchscript.hpp). A Burn program calls one as
// `OperationIr::Custom` with the model's name as the op id:
// - the op's input tensors are the exported program's tensor inputs, flattened in order (args,
//   then kwargs); each must have the shape (within any dynamic dimension's range) and dtype the
//   model was exported with: the host turns on AOTInductor's own input checks for every call, so a
//   wrong input is an error naming the model, never a read out of bounds;
// - scalars are not taken: torch.export fixed non-tensor arguments when the model was exported;
// - the outputs are the exported program's results, flattened.
// A package is compiled code for one device type and CPU instruction set: loading it checks both.
// It is served for inference only: the training contract's ops (NAME::parameters, ...) answer with
// an error that says so. Packages need LibTorch 2.8 or later (aoti_supported()); on an older build
// loading one is an error at start-up. docs/libtorch.md is the user-facing account.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/result.hpp"

namespace tb::backend::libtorch {

// One tensor input as the package's generated input checks test it.
struct AotiInput {
  std::string name;               // the package's name for it ("arg2_1")
  std::string dtype;              // "float32", "int64", ...
  std::vector<std::string> dims;  // one per dimension: "4", or a dynamic range "2..64"
};

struct AotiSignature {
  int inputs = 0;  // tensors the op passes, in the exported program's flattened order
  std::vector<AotiInput> input_checks;  // one per input
  int outputs = 0;                      // tensors it returns
  std::vector<std::string> constants;   // weights and buffers, by their names in the module
  std::string device_type;              // what the package was compiled for: "cpu", "cuda"
  std::string cpu_isa;                  // the instruction sets its CPU kernels use ("AVX512 ...")
  std::string schema;                   // "forward(2 tensors) -> 2 tensors"

  // A multi-line, human-readable account: what a client must declare.
  std::string describe() const;
};

struct AotiOp {
  AotiSignature signature;
  CustomOpHandler handler;  // served as NAME
  // NAME::parameters, ::functional, ::backward, ::spec: each an error naming the op.
  std::vector<std::pair<std::string, CustomOpHandler>> training;
  // Bytes of constants (weights, buffers) the copy on one device holds.
  std::uint64_t weight_bytes = 0;
};

// Whether this build can load AOTInductor packages.
bool aoti_supported();

// Whether `path` names an AOTInductor package (by its .pt2 extension).
bool is_aoti_package(const std::string& path);

// Loads the package once per distinct device in `devices` (Backend::device_name() spellings).
// A package for another device type or instruction set, or one this build cannot load, is an
// error here, not at the first call.
Result<AotiOp> load_aoti_op(const std::string& name, const std::string& path,
                            const std::vector<std::string>& devices);

// The signature of the package at `path`, loaded on the device it was compiled for.
Result<AotiSignature> describe_aoti(const std::string& path);

}  // namespace tb::backend::libtorch
