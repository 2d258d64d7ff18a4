// AOTInductor packages (.pt2) as custom ops. Built against a LibTorch that loads them
// (scripts/torch-env, the default build), the packages are made at test time by
// tests/models/make_aoti_models.py with Python torch from the same wheel (CTest fixture
// aoti_models, folder in TB_AOTI_MODELS), and the outputs must equal what the model returns when
// run eagerly in torch. Built against an older LibTorch, every entry point must refuse a .pt2 with
// an error naming the LibTorch.
#include "torchbridge/libtorch/aoti.hpp"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "torchbridge/libtorch/models.hpp"

namespace tb::test {
namespace {

using backend::libtorch::add_model_op;
using backend::libtorch::aoti_supported;
using backend::libtorch::CustomOpCall;
using backend::libtorch::describe_model;
using backend::libtorch::is_aoti_package;
using backend::libtorch::load_aoti_op;
using ::testing::HasSubstr;

TEST(AotiPackage, IsRecognisedByItsExtension) {
  EXPECT_TRUE(is_aoti_package("model.pt2"));
  EXPECT_TRUE(is_aoti_package("/a/b.c/model.pt2"));
  EXPECT_FALSE(is_aoti_package("model.pt"));
  EXPECT_FALSE(is_aoti_package("pt2"));
  EXPECT_FALSE(is_aoti_package("model.pt2.bak"));
}

// The packages' folder; empty when the build has no Python torch to make them.
std::string models_dir() {
  const char* dir = std::getenv("TB_AOTI_MODELS");
  return dir == nullptr ? std::string() : std::string(dir);
}

// A build on a LibTorch without AOTInductor's package loader (Debian's 1.13).
TEST(AotiPackage, OlderLibTorchRefusesPackagesNamingItsVersion) {
  if (aoti_supported()) GTEST_SKIP() << "this LibTorch loads packages (the tests below)";
  const std::string want =
      "AOTInductor packages (.pt2) need LibTorch 2.8 or later; this "
      "torchbridge is built on LibTorch " +
      backend::libtorch::torch_version();
  backend::libtorch::CustomOpRegistry registry;
  auto added = add_model_op(registry, "m=/no/such/model.pt2", {"cpu"});
  ASSERT_FALSE(added);
  EXPECT_THAT(added.error().what(), HasSubstr("/no/such/model.pt2: " + want));
  EXPECT_EQ(registry.find("m"), nullptr);
  auto described = describe_model("/no/such/model.pt2");
  ASSERT_FALSE(described);
  EXPECT_THAT(described.error().what(), HasSubstr(want));
}

// NAME.expected (make_aoti_models.py): the inputs and the eager outputs.
struct Expected {
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> outputs;
};

Expected expected(const std::string& name) {
  std::ifstream in(models_dir() + "/" + name + ".expected");
  EXPECT_TRUE(in) << "no " << name << ".expected in " << models_dir();
  Expected e;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string kind, dtype;
    int rank = 0;
    words >> kind >> dtype >> rank;
    std::vector<int64_t> shape(rank);
    for (auto& d : shape) words >> d;
    std::vector<double> values;
    for (double v; words >> v;) values.push_back(v);
    const at::ScalarType type = dtype == "float32" ? at::kFloat : at::kLong;
    EXPECT_TRUE(dtype == "float32" || dtype == "int64") << dtype;
    auto t = at::tensor(values, at::kDouble).to(type).reshape(shape);
    (kind == "in" ? e.inputs : e.outputs).push_back(t);
  }
  return e;
}

std::string package(const std::string& name) {
  return models_dir() + "/" + name + ".pt2";
}

// Every test below needs a LibTorch that loads packages and the packages themselves.
void require_packages() {
  if (!aoti_supported()) GTEST_SKIP() << "this LibTorch cannot load packages (the test above)";
  if (models_dir().empty()) {
    GTEST_SKIP() << "no TB_AOTI_MODELS: the build has no Python torch to make packages (TB_PYTHON; "
                    "scripts/build sets it)";
  }
}

class Aoti : public OpTest {
 protected:
  void SetUp() override { require_packages(); }
  void serve(const std::string& name) {
    auto model = add_model_op(*registry, name + "=" + package(name), {"cpu"});
    ASSERT_TRUE(model) << model.error().what();
    EXPECT_EQ(model.value().format, "AOTInductor");
  }
  // `name` called directly, as a session's executor calls a handler.
  Result<std::vector<at::Tensor>> call(const std::string& name, std::vector<at::Tensor> inputs,
                                       std::vector<ScalarIr> scalars = {}) {
    const CustomOpIr op{name, {}, {}, std::move(scalars)};
    const auto handler = registry->find(name);
    EXPECT_NE(handler, nullptr) << name;
    if (handler == nullptr) return make_error(ErrorCode::kNotFound, "no {}", name);
    return (*handler)(CustomOpCall{op, std::move(inputs), at::Device(at::kCPU)});
  }
  void expect_outputs(const std::vector<at::Tensor>& actual, const std::vector<at::Tensor>& want) {
    ASSERT_EQ(actual.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(actual[i].scalar_type(), want[i].scalar_type()) << "output " << i;
      EXPECT_EQ(actual[i].sizes(), want[i].sizes()) << "output " << i;
      EXPECT_TRUE(at::allclose(actual[i].to(at::kDouble), want[i].to(at::kDouble), 1e-5, 1e-6))
          << "output " << i << ":\n"
          << actual[i] << "\nexpected\n"
          << want[i];
    }
  }
};

TEST_F(Aoti, PackagesMatchTheEagerModel) {
  ASSERT_TRUE(aoti_supported());
  for (const std::string name : {"mlp", "scaled", "lookup"}) {
    SCOPED_TRACE(name);
    serve(name);
    const Expected e = expected(name);
    auto out = call(name, e.inputs);
    ASSERT_TRUE(out) << out.error().what();
    expect_outputs(out.value(), e.outputs);
  }
}

TEST_F(Aoti, ThroughTheExecutorWithDeclaredOutputs) {
  serve("mlp");
  const Expected e = expected("mlp");
  const auto x = tir(1, {2, 4});
  const auto y = tir(2, {2, 3});
  put(x, std::vector<double>(e.inputs[0].data_ptr<float>(), e.inputs[0].data_ptr<float>() + 8));
  put(y, std::vector<double>(e.inputs[1].data_ptr<float>(), e.inputs[1].data_ptr<float>() + 6));
  run(make_op<OpKind::Custom_Op>(CustomOpIr{"mlp", {x, y}, {out(3, {2, 3}), out(4, {2})}, {}}));
  const auto want0 = e.outputs[0].to(at::kDouble).contiguous();
  const auto want1 = e.outputs[1].to(at::kDouble).contiguous();
  expect_near(get(tir(3, {2, 3})),
              std::vector<double>(want0.data_ptr<double>(), want0.data_ptr<double>() + 6));
  expect_near(get(tir(4, {2})),
              std::vector<double>(want1.data_ptr<double>(), want1.data_ptr<double>() + 2));
  // A declaration that disagrees with the package's output is the host's usual error.
  EXPECT_THAT(run_error(make_op<OpKind::Custom_Op>(
                  CustomOpIr{"mlp", {x, y}, {out(5, {2, 2}), out(6, {2})}, {}})),
              HasSubstr("output 0 has shape [2, 3], the op declares [2, 2]"));
}

TEST_F(Aoti, DynamicDimensionsTakeAnySizeInTheirRange) {
  serve("scaled");
  for (const int64_t batch : {2, 3, 64}) {
    const auto x = at::linspace(-3, 3, batch * 3).reshape({batch, 3});
    auto out = call("scaled", {x});
    ASSERT_TRUE(out) << batch << ": " << out.error().what();
    const auto want = at::tanh(x) * at::tensor({2.0f, -1.0f, 0.5f}) + 1.0;
    expect_outputs(out.value(), {want});
  }
}

// Without the host's input checks these calls would have the compiled kernels read and write out
// of bounds; each must be an error naming the model, and the package must keep working after.
TEST_F(Aoti, WrongInputsAreErrorsNotOutOfBoundsReads) {
  serve("mlp");
  serve("scaled");
  const Expected e = expected("mlp");
  const auto too_big = call("mlp", {at::ones({3, 4}), at::ones({3, 3})});
  ASSERT_FALSE(too_big);
  EXPECT_THAT(too_big.error().what(), HasSubstr("mlp.pt2 raised"));
  EXPECT_THAT(too_big.error().what(), HasSubstr("unmatched dim value at 0"));
  const auto wrong_dtype = call("mlp", {e.inputs[0].to(at::kDouble), e.inputs[1]});
  ASSERT_FALSE(wrong_dtype);
  EXPECT_THAT(wrong_dtype.error().what(), HasSubstr("unmatched dtype"));
  const auto wrong_rank = call("mlp", {at::ones({8}), e.inputs[1]});
  ASSERT_FALSE(wrong_rank);
  // A lower rank whose dims match as far as they go: the package's own checks would read
  // sizes()[1] past the end of a rank-1 tensor's sizes. The host refuses it first.
  const auto short_rank = call("mlp", {at::ones({2}), e.inputs[1]});
  ASSERT_FALSE(short_rank);
  EXPECT_THAT(short_rank.error().what(),
              HasSubstr("input 0 has rank 1, the package takes float32 [2, 4]"));
  const auto long_rank = call("scaled", {at::ones({4, 3, 1})});
  ASSERT_FALSE(long_rank);
  EXPECT_THAT(long_rank.error().what(),
              HasSubstr("input 0 has rank 3, the package takes float32 [2..64, 3]"));
  for (const int64_t batch : {1, 65}) {
    const auto out_of_range = call("scaled", {at::ones({batch, 3})});
    ASSERT_FALSE(out_of_range) << batch;
    EXPECT_THAT(out_of_range.error().what(), HasSubstr("scaled.pt2 raised"));
  }
  const auto arity = call("mlp", {e.inputs[0]});
  ASSERT_FALSE(arity);
  EXPECT_THAT(
      arity.error().what(),
      HasSubstr("forward(2 tensors) -> 2 tensors takes 2 tensor input(s), the op passes 1"));
  const auto scalars = call("mlp", e.inputs, {ScalarIr::f(1.0)});
  ASSERT_FALSE(scalars);
  EXPECT_THAT(scalars.error().what(), HasSubstr("takes no scalars"));
  // Non-contiguous inputs are made contiguous, not refused.
  const auto transposed = e.inputs[0].t().contiguous().t();
  auto ok_after = call("mlp", {transposed, e.inputs[1]});
  ASSERT_TRUE(ok_after) << ok_after.error().what();
  expect_outputs(ok_after.value(), e.outputs);
}

TEST_F(Aoti, InputsAreNeverWrittenThrough) {
  serve("scaled");
  const auto x = at::linspace(-1, 1, 6).reshape({2, 3});
  const auto before = x.clone();
  ASSERT_TRUE(call("scaled", {x}));
  EXPECT_TRUE(at::equal(x, before));
}

TEST_F(Aoti, TheTrainingContractSaysThePackageIsInferenceOnly) {
  serve("mlp");
  for (const std::string suffix : {"::parameters", "::functional", "::backward", "::spec"}) {
    const auto r = call("mlp" + suffix, {});
    ASSERT_FALSE(r) << suffix;
    EXPECT_THAT(r.error().what(), HasSubstr("custom op mlp" + suffix + ": "));
    EXPECT_THAT(r.error().what(), HasSubstr("served for inference only"));
  }
}

TEST_F(Aoti, ConcurrentCallsAgree) {
  serve("mlp");
  const Expected e = expected("mlp");
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto out = call("mlp", e.inputs);
        if (!out || !at::allclose(out.value()[0], e.outputs[0], 1e-5, 1e-6)) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(AotiPackage, DescribeNamesInputsOutputsAndConstants) {
  require_packages();
  if (IsSkipped()) return;
  auto text = describe_model(package("mlp"));
  ASSERT_TRUE(text) << text.error().what();
  EXPECT_THAT(text.value(), HasSubstr("forward(2 tensors) -> 2 tensors"));
  EXPECT_THAT(text.value(), HasSubstr("in order: float32 [2, 4], float32 [2, 3]"));
  EXPECT_THAT(text.value(), HasSubstr("AOTInductor package, compiled for cpu"));
  EXPECT_THAT(text.value(), HasSubstr("inference only"));
  auto lookup = load_aoti_op("lookup", package("lookup"), {"cpu"});
  ASSERT_TRUE(lookup) << lookup.error().what();
  EXPECT_EQ(lookup.value().signature.inputs, 1);
  EXPECT_EQ(lookup.value().signature.outputs, 2);
  EXPECT_EQ(lookup.value().signature.device_type, "cpu");
  ASSERT_EQ(lookup.value().signature.input_checks.size(), 1u);
  EXPECT_EQ(lookup.value().signature.input_checks[0].dtype, "int64");
  auto scaled = describe_model(package("scaled"));
  ASSERT_TRUE(scaled) << scaled.error().what();
  EXPECT_THAT(scaled.value(), HasSubstr("in order: float32 [2..64, 3]"));
}

TEST(AotiPackage, LoadFailuresAreClearErrors) {
  require_packages();
  if (IsSkipped()) return;
  backend::libtorch::CustomOpRegistry registry;
  auto missing = add_model_op(registry, "m=/no/such/model.pt2", {"cpu"});
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().what(),
              HasSubstr("cannot open AOTInductor package /no/such/model.pt2"));
  const std::string garbage = ::testing::TempDir() + "/garbage.pt2";
  std::ofstream(garbage) << "not a zip archive";
  auto bad = add_model_op(registry, "m=" + garbage, {"cpu"});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().what(), HasSubstr("cannot read AOTInductor package " + garbage));
  // A CPU package on a CUDA device is refused before anything is loaded, CUDA or not.
  auto cuda = load_aoti_op("m", package("mlp"), {"cuda:0"});
  ASSERT_FALSE(cuda);
  EXPECT_THAT(cuda.error().what(), HasSubstr("was compiled for cpu, not for device cuda:0"));
  EXPECT_EQ(registry.find("m"), nullptr);
}

}  // namespace
}  // namespace tb::test
