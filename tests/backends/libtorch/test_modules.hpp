// Small TorchScript modules built with LibTorch's C++ API (no Python), for the unit tests and, via
// tb_make_test_modules, for the interop suite and the example. Their math is simple enough to be
// redone in Burn by the Rust tests: keep the two in step (tests/interop/tests/custom_ops.rs).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/script.h>

namespace tb::test {

inline torch::jit::Module make_module(const std::string& class_name, const std::string& source) {
  torch::jit::Module m(class_name);
  m.define(source);
  return m;
}

// name -> module. The .pt files are named `<name>.pt`.
inline std::vector<std::pair<std::string, torch::jit::Module>> test_modules() {
  std::vector<std::pair<std::string, torch::jit::Module>> out;

  // A linear layer x[.., 3] -> [.., 2] with fixed, exactly representable weights.
  torch::jit::Module affine("Affine");
  affine.register_parameter(
      "weight", torch::tensor({1.0f, -1.0f, 0.5f, 2.0f, -2.0f, 0.25f}).reshape({3, 2}), false);
  affine.register_parameter("bias", torch::tensor({0.5f, -1.0f}), false);
  affine.define(R"(
def forward(self, x):
    return torch.matmul(x, self.weight) + self.bias
)");
  out.emplace_back("affine", affine);

  // Scalars after the tensor; the second has a default.
  out.emplace_back("scale", make_module("Scale", R"(
def forward(self, x, factor: float, shift: float = 0.0):
    return x * factor + shift
)"));

  // Two inputs, a tuple of two outputs of different dtypes.
  out.emplace_back("sum_and_argmax", make_module("SumAndArgmax", R"(
def forward(self, a, b):
    s = a + b
    return s, torch.argmax(s, dim=-1)
)"));

  // Every input through one List[Tensor] parameter.
  out.emplace_back("concat", make_module("Concat", R"(
def forward(self, xs: List[Tensor]):
    return torch.cat(xs, 0)
)"));

  // A list of outputs, its length known only at run time.
  out.emplace_back("halves", make_module("Halves", R"(
def forward(self, x):
    return [x * 0.5, x * 0.25]
)"));

  // Always raises (an assert: the C++ compiler has no resolver for exception classes).
  out.emplace_back("fails", make_module("Fails", R"(
def forward(self, x):
    assert x.numel() < 0, "fails on purpose"
    return x
)"));

  // Assigns a module attribute: calls must be serialized.
  torch::jit::Module counter("Counter");
  counter.register_attribute("calls", c10::IntType::get(), 0);
  counter.define(R"(
def forward(self, x):
    self.calls = self.calls + 1
    return x + self.calls
)");
  out.emplace_back("counter", counter);

  // Writes to its input: the host must hand it a copy.
  out.emplace_back("inplace", make_module("InPlace", R"(
def forward(self, x):
    x.add_(1.0)
    return x * 2.0
)"));

  // Cannot be served: returns an int, takes a str.
  out.emplace_back("returns_int", make_module("ReturnsInt", R"(
def forward(self, x) -> int:
    return x.dim()
)"));
  out.emplace_back("takes_str", make_module("TakesStr", R"(
def forward(self, x, mode: str):
    return x
)"));
  return out;
}

// Writes every test module as `<dir>/<name>.pt`; returns the paths.
inline std::vector<std::string> write_test_modules(const std::string& dir) {
  std::vector<std::string> paths;
  for (auto& [name, module] : test_modules()) {
    paths.push_back(dir + "/" + name + ".pt");
    module.save(paths.back());
  }
  return paths;
}

}  // namespace tb::test
