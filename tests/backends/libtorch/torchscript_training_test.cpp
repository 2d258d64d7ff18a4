// The training contract of hosted TorchScript modules (torchscript.hpp): NAME::parameters,
// NAME::functional, NAME::backward and NAME::spec. Gradients are checked against LibTorch's
// autograd on the module itself (loaded separately, its own parameters set to require grad) and
// against central finite differences.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <torch/csrc/autograd/autograd.h>

#include "backends/libtorch/op_test_util.hpp"
#include "backends/libtorch/test_modules.hpp"
#include "torchbridge/libtorch/torchscript.hpp"

namespace tb::test {
namespace {

using backend::libtorch::add_torchscript_op;
using backend::libtorch::CustomOpCall;
using backend::libtorch::CustomOpRegistry;
using backend::libtorch::encode_spec;
using ::testing::HasSubstr;

std::string module_path(const std::string& name) {
  return test_module_path(name);
}

// The registry with one module served, and direct calls of its ops.
class Training : public ::testing::Test {
 protected:
  void serve(const std::string& name) {
    auto sig = add_torchscript_op(registry_, name + "=" + module_path(name), {"cpu"});
    ASSERT_TRUE(sig) << sig.error().what();
    sig_ = sig.value();
  }
  Result<std::vector<at::Tensor>> call(const std::string& id, std::vector<at::Tensor> inputs,
                                       std::vector<ir::ScalarIr> scalars = {},
                                       std::vector<ir::TensorIr> outputs = {}) {
    const auto handler = registry_.find(id);
    if (!handler) return make_error(ErrorCode::kNotFound, "no op {}", id);
    op_ = ir::CustomOpIr{id, {}, std::move(outputs), std::move(scalars)};
    return (*handler)(CustomOpCall{op_, std::move(inputs), at::Device(at::kCPU)});
  }
  std::vector<at::Tensor> ok_call(const std::string& id, std::vector<at::Tensor> inputs,
                                  std::vector<ir::ScalarIr> scalars = {}) {
    auto r = call(id, std::move(inputs), std::move(scalars));
    EXPECT_TRUE(r) << r.error().what();
    return r ? r.value() : std::vector<at::Tensor>{};
  }
  std::vector<at::Tensor> parameters(const std::string& name) {
    return ok_call(name + "::parameters", {});
  }
  static std::vector<at::Tensor> cat(std::vector<at::Tensor> a, const std::vector<at::Tensor>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  CustomOpRegistry registry_;
  backend::libtorch::TorchScriptSignature sig_;
  ir::CustomOpIr op_;
};

// LibTorch's own autograd on the module: its unique parameters (by tensor) in named_parameters
// order, and the gradients of (float inputs..., parameters...).
struct Reference {
  std::vector<std::string> names;
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> grads;
};

Reference reference(const std::string& name, const std::vector<at::Tensor>& inputs,
                    const std::vector<at::Tensor>& grad_outputs) {
  torch::jit::Module m = torch::jit::load(module_path(name));
  m.eval();
  Reference ref;
  std::vector<at::Tensor> leaves;
  std::vector<c10::IValue> args;
  for (const auto& x : inputs) {
    auto leaf = x.detach().clone().requires_grad_(x.is_floating_point());
    if (x.is_floating_point()) leaves.push_back(leaf);
    args.emplace_back(leaf);
  }
  std::set<const c10::TensorImpl*> seen;
  for (const auto& p : m.named_parameters(/*recurse=*/true)) {
    if (!seen.insert(p.value.unsafeGetTensorImpl()).second) continue;
    ref.names.push_back(p.name);
    p.value.requires_grad_(true);
    leaves.push_back(p.value);
  }
  c10::IValue out = m.forward(args);
  if (out.isTensor()) {
    ref.outputs.push_back(out.toTensor());
  } else {
    for (const auto& e : out.toTupleRef().elements()) ref.outputs.push_back(e.toTensor());
  }
  ref.grads = torch::autograd::grad(ref.outputs, leaves, grad_outputs, false, false, true);
  for (auto& o : ref.outputs) o = o.detach();
  return ref;
}

void expect_close(const at::Tensor& actual, const at::Tensor& expected, double tol,
                  const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what;
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const double err = (actual - expected).abs().max().item<double>();
  EXPECT_LE(err, tol) << what << ": max abs error " << err;
}

TEST_F(Training, ParametersAreTheModulesFloatParametersInStateDictOrder) {
  serve("mlp");
  std::vector<std::string> names;
  for (const auto& p : sig_.parameters) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  const auto params = parameters("mlp");
  ASSERT_EQ(params.size(), 4u);
  torch::jit::Module m = torch::jit::load(module_path("mlp"));
  EXPECT_TRUE(at::equal(params[0], m.attr("fc1").toModule().attr("weight").toTensor()));
  EXPECT_TRUE(at::equal(params[3], m.attr("fc2").toModule().attr("bias").toTensor()));
  // Copies: writing to one leaves the hosted module as it was.
  const auto x = at::rand({2, 3});
  const auto before = ok_call("mlp", {x}).at(0);
  params[0].fill_(7);
  EXPECT_TRUE(at::equal(ok_call("mlp", {x}).at(0), before));
  EXPECT_FALSE(params[0].requires_grad());
}

TEST_F(Training, TiedWeightsAreOneParameterAndBuffersAreNone) {
  serve("tied");
  EXPECT_EQ(sig_.parameters.size(), 2u);
  EXPECT_EQ(sig_.parameters[0].name, "enc.weight");
  serve("normed");
  ASSERT_EQ(sig_.parameters.size(), 1u);
  EXPECT_EQ(sig_.parameters[0].name, "scale");
  EXPECT_EQ(sig_.parameters[0].shape, (std::vector<int64_t>{3}));
}

TEST_F(Training, FunctionalUsesTheGivenParametersAndLeavesTheModuleAlone) {
  serve("mlp");
  const auto x = at::rand({5, 3}) - 0.5;
  const auto params = parameters("mlp");
  const auto own = ok_call("mlp", {x}).at(0);
  EXPECT_TRUE(at::allclose(ok_call("mlp::functional", cat({x}, params)).at(0), own));

  std::vector<at::Tensor> other;
  for (const auto& p : params) other.push_back(p * -1.5 + 0.25);
  const auto y = ok_call("mlp::functional", cat({x}, other)).at(0);
  // By hand: fc2(tanh(fc1(x))) with the other parameters.
  const auto h = at::tanh(at::matmul(x, other[0].t()) + other[1]);
  const auto expected = at::matmul(h, other[2].t()) + other[3];
  expect_close(y, expected, 1e-6, "functional");
  EXPECT_TRUE(at::equal(ok_call("mlp", {x}).at(0), own));
}

TEST_F(Training, BackwardMatchesLibTorchAutogradOnTheModule) {
  for (const std::string name : {"mlp", "tied", "normed", "cnn", "affine"}) {
    SCOPED_TRACE(name);
    serve(name);
    const auto x = name == "cnn" ? at::rand({2, 1, 4, 4}) - 0.5 : at::rand({4, 3}) - 0.5;
    const auto params = parameters(name);
    const auto y = ok_call(name, {x}).at(0);
    const auto gy = at::rand(y.sizes()) - 0.5;
    const auto grads = ok_call(name + "::backward", cat(cat({x}, params), {gy}));
    const Reference ref = reference(name, {x}, {gy});
    std::vector<std::string> names;
    for (const auto& p : sig_.parameters) names.push_back(p.name);
    EXPECT_EQ(names, ref.names);
    ASSERT_EQ(grads.size(), 1 + params.size());
    ASSERT_EQ(ref.grads.size(), grads.size());
    for (std::size_t i = 0; i < grads.size(); ++i) {
      expect_close(grads[i], ref.grads[i], 1e-6, "gradient " + std::to_string(i));
    }
  }
}

TEST_F(Training, BackwardMatchesFiniteDifferences) {
  serve("mlp");
  at::manual_seed(3);
  const auto x = at::rand({2, 3}, at::kDouble).to(at::kFloat) - 0.5;
  const auto params = parameters("mlp");
  const auto gy = at::rand({2, 2}) - 0.5;
  const auto grads = ok_call("mlp::backward", cat(cat({x}, params), {gy}));
  // d<gy, f(x, p)>/dv for every element v of x and of each parameter, by central differences.
  const auto objective = [&](const std::vector<at::Tensor>& inputs) {
    return (ok_call("mlp::functional", inputs).at(0).to(at::kDouble) * gy.to(at::kDouble))
        .sum()
        .item<double>();
  };
  const double eps = 1e-2;
  double worst = 0;
  std::vector<at::Tensor> all = cat({x}, params);
  for (std::size_t t = 0; t < all.size(); ++t) {
    for (int64_t e = 0; e < all[t].numel(); ++e) {
      auto plus = all;
      auto minus = all;
      plus[t] = all[t].clone();
      minus[t] = all[t].clone();
      plus[t].view(-1)[e] += eps;
      minus[t].view(-1)[e] -= eps;
      const double fd = (objective(plus) - objective(minus)) / (2 * eps);
      worst = std::max(worst, std::abs(fd - grads[t].view(-1)[e].item<double>()));
    }
  }
  EXPECT_LT(worst, 1e-4);  // 8.7e-6 measured (f32, eps 1e-2)
}

TEST_F(Training, IntInputsGetZeroGradientsAndIntOutputsAreIgnored) {
  serve("sum_and_argmax");
  const auto a = at::rand({2, 3});
  const auto b = at::rand({2, 3});
  const auto gs = at::rand({2, 3});
  const auto g_argmax = at::ones({2}, at::kLong);
  const auto grads = ok_call("sum_and_argmax::backward", {a, b, gs, g_argmax});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_TRUE(at::equal(grads[0], gs));
  EXPECT_TRUE(at::equal(grads[1], gs));

  serve("scale");  // scalars ride along as in forward
  const auto x = at::rand({3});
  const auto gx = ok_call("scale::backward", {x, at::ones({3})}, {ir::ScalarIr::f(2.5)});
  EXPECT_TRUE(at::allclose(gx.at(0), at::full({3}, 2.5)));
}

TEST_F(Training, WrongArityShapeOrDtypeIsAClearError) {
  serve("mlp");
  const auto x = at::rand({2, 3});
  auto params = parameters("mlp");
  auto r = call("mlp::functional", {x, params[0]});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("then 4 parameter(s): the op passes 2 tensor(s)"));
  auto swapped = params;
  std::swap(swapped[0], swapped[2]);
  r = call("mlp::functional", cat({x}, swapped));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("parameter 0 (fc1.weight) must be [4, 3] Float"));
  params[1] = params[1].to(at::kDouble);
  r = call("mlp::backward", cat(cat({x}, params), {at::ones({2, 2})}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("fc1.bias) must be [4] Float, the op passes [4] Double"));
  params[1] = params[1].to(at::kFloat);
  r = call("mlp::backward", cat(cat({x}, params), {at::ones({2, 5})}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("gradient 0 has shape [2, 5], forward's output 0"));
  r = call("mlp::parameters", {x});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("takes no inputs"));
  // The module's own error, through the copy, names the module.
  r = call("mlp::functional", cat({at::rand({2, 7})}, params));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("mlp.pt raised"));
}

TEST_F(Training, SpecDescribesParametersAndOutputsAndAsksForRoom) {
  serve("mlp");
  const auto i64 = [](std::uint64_t c) { return out(1, {c}, DTypeKind::I64); };
  // Without inputs: the parameters only, then K = -1. L counts itself: 3 header values,
  // 4 + 3 + 4 + 3 for the parameters, 1 for K.
  auto spec = call("mlp::spec", {}, {}, {i64(64)});
  ASSERT_TRUE(spec) << spec.error().what();
  auto v = spec.value().at(0);
  ASSERT_EQ(v.sizes(), (std::vector<int64_t>{64}));
  std::vector<int64_t> head(v.data_ptr<int64_t>(), v.data_ptr<int64_t>() + 19);
  EXPECT_EQ(head,
            (std::vector<int64_t>{18, 1, 4, 1, 2, 4, 3, 1, 1, 4, 1, 2, 2, 4, 1, 1, 2, -1, 0}));
  // With forward's inputs: the outputs too.
  spec = call("mlp::spec", {at::rand({5, 3})}, {}, {i64(32)});
  ASSERT_TRUE(spec) << spec.error().what();
  v = spec.value().at(0);
  EXPECT_EQ(v[0].item<int64_t>(), 22);
  EXPECT_EQ(v[17].item<int64_t>(), 1);                                              // K
  EXPECT_TRUE(at::equal(v.slice(0, 18, 22), at::tensor({1, 2, 5, 2}, at::kLong)));  // f32 [5, 2]
  // Too little room: only L.
  spec = call("mlp::spec", {}, {}, {i64(4)});
  ASSERT_TRUE(spec);
  EXPECT_TRUE(at::equal(spec.value().at(0), at::tensor({18, 0, 0, 0}, at::kLong)));
  EXPECT_EQ(encode_spec({}, nullptr), (std::vector<int64_t>{4, 1, 0, -1}));
  auto bad = call("mlp::spec", {}, {}, {out(1, {4})});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().what(), HasSubstr("declared I64 with shape [C]"));
}

TEST_F(Training, AttributesForwardAssignsStayOnTheCallsCopy) {
  serve("counter");
  EXPECT_TRUE(sig_.parameters.empty());
  const auto x = at::zeros({1});
  // Each functional call counts on its own copy, from the module's count, which stays 0.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ok_call("counter::functional", {x}).at(0).item<float>(), 1);
  EXPECT_EQ(ok_call("counter", {x}).at(0).item<float>(), 1);
  EXPECT_EQ(ok_call("counter", {x}).at(0).item<float>(), 2);
  EXPECT_EQ(ok_call("counter::functional", {x}).at(0).item<float>(), 3);
}

TEST_F(Training, ConcurrentSessionsTrainingOneModuleDoNotInterfere) {
  serve("mlp");
  const auto base = parameters("mlp");
  constexpr int kThreads = 6;
  constexpr int kSteps = 15;
  // Each thread takes SGD steps from its own scaled copy of the parameters; the same steps taken
  // alone must give the same parameters, bit for bit.
  const auto train = [&](int t) {
    std::vector<at::Tensor> p;
    for (const auto& b : base) p.push_back(b * (1 + 0.1 * t));
    const auto x = at::linspace(-1, 1, 12).reshape({4, 3}) * (t + 1);
    for (int s = 0; s < kSteps; ++s) {
      const auto y = ok_call("mlp::functional", cat({x}, p)).at(0);
      const auto g = ok_call("mlp::backward", cat(cat({x}, p), {y}));  // loss = |y|^2 / 2
      for (std::size_t i = 0; i < p.size(); ++i) p[i] = p[i] - 0.05 * g.at(i + 1);
    }
    return p;
  };
  std::vector<std::vector<at::Tensor>> alone;
  for (int t = 0; t < kThreads; ++t) alone.push_back(train(t));
  std::vector<std::vector<at::Tensor>> together(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { together[t] = train(t); });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (std::size_t i = 0; i < base.size(); ++i) {
      EXPECT_TRUE(at::equal(alone[t][i], together[t][i])) << "thread " << t << " param " << i;
    }
  }
  // Training moved the parameters; the hosted module did not move.
  EXPECT_FALSE(at::equal(alone[0][0], base[0]));
  EXPECT_TRUE(at::equal(parameters("mlp")[0], base[0]));
}

// Through the executor, as a Burn client's custom ops arrive: declared outputs are checked.
class TrainingOps : public OpTest {};

TEST_F(TrainingOps, ParametersFunctionalAndBackwardRunAsCustomOps) {
  auto sig = add_torchscript_op(*registry, "affine=" + module_path("affine"), {"cpu"});
  ASSERT_TRUE(sig) << sig.error().what();
  const auto make = [](const std::string& id, std::vector<TensorIr> in, std::vector<TensorIr> o) {
    return make_op<OpKind::Custom_Op>(CustomOpIr{id, std::move(in), std::move(o), {}});
  };
  run(make("affine::parameters", {}, {out(1, {3, 2}), out(2, {2})}));
  EXPECT_EQ(get(tir(2, {2})), (std::vector<double>{0.5, -1}));
  const auto x = tir(3, {1, 3});
  put(x, {1, 2, 3});
  run(make("affine::functional", {x, tir(1, {3, 2}), tir(2, {2})}, {out(4, {1, 2})}));
  EXPECT_EQ(get(tir(4, {1, 2})), (std::vector<double>{-3.5, 2.75}));
  const auto gy = tir(5, {1, 2});
  put(gy, {1, 0});
  run(make("affine::backward", {x, tir(1, {3, 2}), tir(2, {2}), gy},
           {out(6, {1, 3}), out(7, {3, 2}), out(8, {2})}));
  EXPECT_EQ(get(tir(6, {1, 3})), (std::vector<double>{1, 0.5, -2}));  // row 0 of W^T
  EXPECT_EQ(get(tir(7, {3, 2})), (std::vector<double>{1, 0, 2, 0, 3, 0}));
  EXPECT_EQ(get(tir(8, {2})), (std::vector<double>{1, 0}));
  EXPECT_THAT(
      run_error(make("affine::backward", {x, tir(1, {3, 2}), tir(2, {2}), gy}, {out(9, {1, 3})})),
      HasSubstr("returned 3 output(s), the op declares 1"));
}

}  // namespace
}  // namespace tb::test
