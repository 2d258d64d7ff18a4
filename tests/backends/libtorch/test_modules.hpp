// Small TorchScript modules built with LibTorch's C++ API (no Python), for the unit tests and, via
// tb_make_test_modules, for the interop suite and the example. Their math is simple enough to be
// redone in Burn by the Rust tests: keep the two in step (tests/interop/tests/custom_ops.rs).
#pragma once

#include <unistd.h>

#include <filesystem>
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

  // The training contract's modules (torchscript_training_test.cpp). Weights are smooth,
  // deterministic and not symmetric, so a swapped parameter changes every result.
  const auto weights = [](std::vector<int64_t> shape, double phase) {
    const int64_t n = c10::multiply_integers(shape);
    return (torch::arange(n, torch::kFloat) * 0.37 + phase).sin().mul(0.5).reshape(shape);
  };
  const auto linear = [&](const std::string& cls, int64_t in, int64_t out_dim, double phase) {
    torch::jit::Module m(cls);
    m.register_parameter("weight", weights({out_dim, in}, phase), false);
    m.register_parameter("bias", weights({out_dim}, phase + 1), false);
    m.define(R"(
def forward(self, x):
    return torch.matmul(x, self.weight.t()) + self.bias
)");
    return m;
  };

  // Parameters in submodules: fc1.weight, fc1.bias, fc2.weight, fc2.bias.
  torch::jit::Module mlp("Mlp");
  mlp.register_module("fc1", linear("MlpFc1", 3, 4, 0.1));
  mlp.register_module("fc2", linear("MlpFc2", 4, 2, 0.7));
  mlp.define(R"(
def forward(self, x):
    return self.fc2.forward(torch.tanh(self.fc1.forward(x)))
)");
  out.emplace_back("mlp", mlp);

  // One submodule used twice (tied weights): its two parameters count once.
  torch::jit::Module tied("Tied");
  auto shared = linear("TiedLinear", 3, 3, 0.3);
  tied.register_module("enc", shared);
  tied.register_module("dec", shared);
  tied.define(R"(
def forward(self, x):
    return self.dec.forward(torch.sigmoid(self.enc.forward(x)))
)");
  out.emplace_back("tied", tied);

  // A buffer and an int attribute beside the one parameter: both stay the module's own.
  torch::jit::Module normed("Normed");
  normed.register_buffer("mean", torch::tensor({0.5f, -0.25f, 1.0f}));
  normed.register_parameter("scale", torch::tensor({2.0f, -1.0f, 0.5f}), false);
  normed.register_attribute("power", c10::IntType::get(), 2);
  normed.define(R"(
def forward(self, x):
    return ((x - self.mean) * self.scale) ** self.power
)");
  out.emplace_back("normed", normed);

  // A small CNN: conv 1->2 channels, relu, a linear head over [N, 2*4*4].
  torch::jit::Module cnn("Cnn");
  cnn.register_parameter("conv_weight", weights({2, 1, 3, 3}, 0.2), false);
  cnn.register_parameter("conv_bias", weights({2}, 0.9), false);
  cnn.register_parameter("head_weight", weights({3, 32}, 1.3), false);
  cnn.register_parameter("head_bias", weights({3}, 2.1), false);
  cnn.define(R"(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.conv_weight, self.conv_bias, [1, 1], [1, 1]))
    return torch.matmul(y.flatten(1), self.head_weight.t()) + self.head_bias
)");
  out.emplace_back("cnn", cnn);

  // Two versions of one model (the model repository's tests): same signature, told apart by
  // their answers. A weight makes each hold memory the host counts.
  for (const int k : {1, 2}) {
    torch::jit::Module plus(k == 1 ? "PlusOne" : "PlusTwo");
    plus.register_buffer("k", torch::full({16}, static_cast<float>(k)));
    plus.define(R"(
def forward(self, x):
    return x + self.k[0]
)");
    out.emplace_back(k == 1 ? "plus_one" : "plus_two", plus);
  }

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

// For unit tests: every test module, written once per test binary into a private temporary
// folder; the path of `<name>.pt` there.
inline std::string test_module_path(const std::string& name) {
  static const std::string dir = [] {
    auto d =
        std::filesystem::temp_directory_path() / ("tb_test_modules_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    write_test_modules(d.string());
    return d.string();
  }();
  return dir + "/" + name + ".pt";
}

}  // namespace tb::test
