// TorchScript modules as custom ops: loading, the calling convention, and every error a client or
// an operator can cause. The modules are built in C++ (test_modules.hpp), saved and loaded back.
#include "torchbridge/libtorch/torchscript.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "backends/libtorch/test_modules.hpp"

namespace tb::test {
namespace {

using backend::libtorch::add_torchscript_op;
using backend::libtorch::CustomOpCall;
using backend::libtorch::describe_torchscript;
using backend::libtorch::load_torchscript_op;
using ::testing::HasSubstr;

// The modules, written once per test binary into a private temporary folder.
std::string module_path(const std::string& name) {
  return test_module_path(name);
}

class TorchScript : public OpTest {
 protected:
  void serve(const std::string& name) {
    auto sig = add_torchscript_op(*registry, name + "=" + module_path(name), {"cpu"});
    ASSERT_TRUE(sig) << sig.error().what();
  }
  // Runs the custom op `id` on `inputs` declaring `outputs`.
  OperationIr call(const std::string& id, std::vector<TensorIr> inputs,
                   std::vector<TensorIr> outputs, std::vector<ScalarIr> scalars = {}) {
    return make_op<OpKind::Custom_Op>(
        CustomOpIr{id, std::move(inputs), std::move(outputs), std::move(scalars)});
  }
};

TEST_F(TorchScript, ModuleWithParametersComputesItsForward) {
  serve("affine");
  const auto x = tir(1, {2, 3});
  put(x, {1, 2, 3, -1, 0, 4});
  run(call("affine", {x}, {out(2, {2, 2})}));
  // x @ [[1, -1], [0.5, 2], [-2, 0.25]] + [0.5, -1]
  EXPECT_EQ(get(tir(2, {2, 2})), (std::vector<double>{-3.5, 2.75, -8.5, 1}));
}

TEST_F(TorchScript, ScalarsFillTheScalarParametersAndDefaultsTheRest) {
  serve("scale");
  const auto x = tir(1, {3});
  put(x, {1, 2, 3});
  run(call("scale", {x}, {out(2, {3})}, {ScalarIr::f(2.5)}));
  EXPECT_EQ(get(tir(2, {3})), (std::vector<double>{2.5, 5, 7.5}));
  // An int scalar for a float parameter converts as Burn's elem::<f64>() would.
  run(call("scale", {x}, {out(3, {3})}, {ScalarIr::i(-1), ScalarIr::f(0.5)}));
  EXPECT_EQ(get(tir(3, {3})), (std::vector<double>{-0.5, -1.5, -2.5}));
  EXPECT_THAT(run_error(call("scale", {x}, {out(4, {3})})),
              HasSubstr("custom op \"scale\": forward(Tensor x, float factor, float shift="));
  EXPECT_THAT(run_error(call("scale", {x}, {out(5, {3})},
                             {ScalarIr::f(1), ScalarIr::f(2), ScalarIr::f(3)})),
              HasSubstr("takes 1 to 2 scalar(s), the op passes 3"));
}

TEST_F(TorchScript, TupleReturnsFillOneOutputEach) {
  serve("sum_and_argmax");
  const auto a = tir(1, {2, 2});
  const auto b = tir(2, {2, 2});
  put(a, {1, 5, 3, 0});
  put(b, {1, 0, 0, 4});
  run(call("sum_and_argmax", {a, b}, {out(3, {2, 2}), out(4, {2}, DTypeKind::I64)}));
  EXPECT_EQ(get(tir(3, {2, 2})), (std::vector<double>{2, 5, 3, 4}));
  EXPECT_EQ(get(tir(4, {2}, DTypeKind::I64)), (std::vector<double>{1, 1}));
}

TEST_F(TorchScript, AListParameterTakesEveryInputAndAListReturnFillsTheOutputs) {
  serve("concat");
  serve("halves");
  const auto a = tir(1, {1, 2});
  const auto b = tir(2, {2, 2});
  put(a, {1, 2});
  put(b, {3, 4, 5, 6});
  run(call("concat", {a, b}, {out(3, {3, 2})}));
  EXPECT_EQ(get(tir(3, {3, 2})), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  run(call("halves", {a}, {out(4, {1, 2}), out(5, {1, 2})}));
  EXPECT_EQ(get(tir(4, {1, 2})), (std::vector<double>{0.5, 1}));
  EXPECT_EQ(get(tir(5, {1, 2})), (std::vector<double>{0.25, 0.5}));
  EXPECT_THAT(run_error(call("halves", {a}, {out(6, {1, 2})})),
              HasSubstr("custom op \"halves\" returned 2 output(s), the op declares 1"));
}

TEST_F(TorchScript, WrongArityShapeAndDtypeAreClearErrorsAndTheSessionGoesOn) {
  serve("affine");
  const auto x = tir(1, {2, 3});
  put(x, {1, 2, 3, -1, 0, 4});
  EXPECT_THAT(run_error(call("affine", {x, x}, {out(2, {2, 2})})),
              HasSubstr("custom op \"affine\": forward(Tensor x) -> Tensor takes 1 tensor "
                        "input(s), the op passes 2"));
  EXPECT_THAT(run_error(call("affine", {x}, {out(3, {2, 3})})),
              HasSubstr("custom op \"affine\" output 0 has shape [2, 2], the op declares [2, 3]"));
  EXPECT_THAT(run_error(call("affine", {x}, {out(4, {2, 2}, DTypeKind::F64)})),
              HasSubstr("custom op \"affine\" output 0 has dtype Float, the op declares f64"));
  EXPECT_THAT(run_error(call("nope", {x}, {out(5, {2, 2})})),
              HasSubstr("no custom op \"nope\" is registered on this host"));
  // Poisoned outputs say why; sync reports the first failure; the session still works.
  auto r = exec->read_tensor(tir(3, {2, 3}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("has shape [2, 2], the op declares [2, 3]"));
  auto s = exec->sync();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().what(), HasSubstr("takes 1 tensor input(s)"));
  run(call("affine", {x}, {out(6, {2, 2})}));
  EXPECT_EQ(get(tir(6, {2, 2})), (std::vector<double>{-3.5, 2.75, -8.5, 1}));
}

TEST_F(TorchScript, AModuleExceptionIsTheOpsError) {
  serve("fails");
  const auto x = tir(1, {2});
  put(x, {1, 2});
  const auto msg = run_error(call("fails", {x}, {out(2, {2})}));
  EXPECT_THAT(msg, HasSubstr("custom op \"fails\": module "));
  EXPECT_THAT(msg, HasSubstr("fails.pt raised: "));
  EXPECT_THAT(msg, HasSubstr("fails on purpose"));
  EXPECT_EQ(get(x), (std::vector<double>{1, 2}));
}

TEST_F(TorchScript, InputsAreCopiedForAModuleThatWritesToThem) {
  serve("inplace");
  const auto x = tir(1, {2});
  put(x, {1, 2});
  run(call("inplace", {x}, {out(2, {2})}));
  EXPECT_EQ(get(tir(2, {2})), (std::vector<double>{4, 6}));
  EXPECT_EQ(get(x), (std::vector<double>{1, 2})) << "the session's tensor was modified";
}

// Direct handler calls from many threads, as concurrent sessions make them.
std::vector<at::Tensor> call_handler(const backend::libtorch::CustomOpHandler& handler,
                                     const CustomOpIr& op, at::Tensor input) {
  CustomOpCall c{op, {std::move(input)}, at::Device(at::kCPU)};
  auto r = handler(c);
  EXPECT_TRUE(r) << r.error().what();
  return r ? r.value() : std::vector<at::Tensor>{};
}

TEST_F(TorchScript, ConcurrentCallsAgreeAndStatefulModulesAreSerialized) {
  auto affine = load_torchscript_op("affine", module_path("affine"), {"cpu"});
  ASSERT_TRUE(affine) << affine.error().what();
  EXPECT_FALSE(affine.value().signature.mutates_state);
  auto counter = load_torchscript_op("counter", module_path("counter"), {"cpu"});
  ASSERT_TRUE(counter) << counter.error().what();
  EXPECT_TRUE(counter.value().signature.mutates_state);

  const CustomOpIr op{"m", {}, {}, {}};
  const auto x = at::tensor({1.0f, 2.0f, 3.0f}).reshape({1, 3});
  const auto expected = call_handler(affine.value().handler, op, x).at(0);
  constexpr int kThreads = 8;
  constexpr int kCalls = 25;
  std::vector<std::thread> threads;
  std::vector<std::vector<double>> counts(kThreads);
  std::atomic<int> mismatches{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        auto y = call_handler(affine.value().handler, op, x);
        if (y.empty() || !at::equal(y[0], expected)) ++mismatches;
        auto c = call_handler(counter.value().handler, op, at::zeros({1}));
        if (!c.empty()) counts[t].push_back(c[0].item<double>());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  // Serialized: every call saw its own count, 1..N, none twice.
  std::vector<double> all;
  for (const auto& c : counts) all.insert(all.end(), c.begin(), c.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kThreads * kCalls));
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<double>(i + 1));
}

TEST_F(TorchScript, ADeviceTheModuleWasNotLoadedOnIsAnError) {
  auto affine = load_torchscript_op("affine", module_path("affine"), {"cpu"});
  ASSERT_TRUE(affine);
  const CustomOpIr op{"affine", {}, {}, {}};
  CustomOpCall c{op, {at::zeros({1, 3})}, at::Device(at::kCUDA, 0)};
  auto r = affine.value().handler(c);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().what(), HasSubstr("affine.pt was not loaded on device cuda:0"));
}

TEST_F(TorchScript, LoadFailuresAreClearErrors) {
  auto missing = add_torchscript_op(*registry, "m=" + test_module_path("missing"), {"cpu"});
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().what(), HasSubstr("cannot open TorchScript module "));
  const std::string garbage = test_module_path("garbage");
  std::ofstream(garbage) << "not a zip archive";
  auto bad = add_torchscript_op(*registry, "m=" + garbage, {"cpu"});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().what(), HasSubstr("cannot load TorchScript module " + garbage));
  for (const std::string spec : {"noequals", "=x.pt", "name="}) {
    auto r = add_torchscript_op(*registry, spec, {"cpu"});
    ASSERT_FALSE(r) << spec;
    EXPECT_THAT(r.error().what(), HasSubstr("expected NAME=PATH")) << spec;
  }
  auto ret = describe_torchscript(module_path("returns_int"));
  ASSERT_FALSE(ret);
  EXPECT_THAT(ret.error().what(), HasSubstr("forward returns int: only a Tensor"));
  auto str = add_torchscript_op(*registry, "s=" + module_path("takes_str"), {"cpu"});
  ASSERT_FALSE(str);
  EXPECT_THAT(str.error().what(), HasSubstr("parameter \"mode\" has type str"));
  EXPECT_TRUE(registry->ids().empty()) << "nothing registered by a failed load";
}

TEST_F(TorchScript, DescribeSaysWhatToDeclare) {
  auto scale = describe_torchscript(module_path("scale"));
  ASSERT_TRUE(scale) << scale.error().what();
  EXPECT_THAT(scale.value().schema, HasSubstr("forward(Tensor x, float factor, float shift="));
  EXPECT_THAT(scale.value().schema, HasSubstr(") -> Tensor"));
  const auto text = scale.value().describe();
  EXPECT_THAT(text, HasSubstr("inputs:  1 tensor(s), in order: x"));
  EXPECT_THAT(text, HasSubstr("scalars: factor: float, shift: float (optional, default"));
  EXPECT_THAT(text, HasSubstr("outputs: 1 tensor(s)"));
  auto two = describe_torchscript(module_path("sum_and_argmax"));
  ASSERT_TRUE(two);
  EXPECT_EQ(two.value().outputs, 2);
  EXPECT_EQ(two.value().returns, "Tuple[Tensor, Tensor]");
  auto halves = describe_torchscript(module_path("halves"));
  ASSERT_TRUE(halves);
  EXPECT_EQ(halves.value().outputs, -1);
  auto counter = describe_torchscript(module_path("counter"));
  ASSERT_TRUE(counter);
  EXPECT_THAT(counter.value().describe(), HasSubstr("calls are serialized"));
  auto inplace = describe_torchscript(module_path("inplace"));
  ASSERT_TRUE(inplace);
  EXPECT_TRUE(inplace.value().mutates_inputs);
  auto affine = describe_torchscript(module_path("affine"));
  ASSERT_TRUE(affine);
  EXPECT_FALSE(affine.value().mutates_inputs);
  EXPECT_FALSE(affine.value().mutates_state);
}

}  // namespace
}  // namespace tb::test
