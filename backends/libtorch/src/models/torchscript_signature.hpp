// How torchscript.cpp learns a module's signature (torchscript_signature.cpp).
#pragma once

#include <torch/script.h>

#include "torchbridge/libtorch/torchscript.hpp"

namespace tb::backend::libtorch::detail {

// forward's calling convention as a custom op sees it, or why a custom op cannot call it.
Result<TorchScriptSignature> signature_of(torch::jit::Module& module);

}  // namespace tb::backend::libtorch::detail
