// In-process benchmarks: one op stream executed through our executor (IR ops in, ATen out) and the
// same computation written directly as ATen calls, on the same device and threads. The ratio of
// the two is our per-op overhead (dispatch, handle table, Burn-semantics adjustments).
//
// Workloads: a chain of 10k element-wise ops on small tensors (overhead-bound), an MLP
// 512-1024-512 forward at batch 64 and a small CNN forward (compute-bound); where kernels dominate,
// a ResNet basic block at batch 32 and a transformer encoder layer at sequence length 256
// (inprocess_kernels.cpp).
//
// Extra flags (before Google Benchmark's own): --device=cpu|cuda|cuda:N, --threads=N (ATen
// intra-op threads; 0 keeps LibTorch's default). Before timing, each workload runs once both ways
// and the results are compared: a mismatch aborts the run rather than timing a wrong answer.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "inprocess_util.hpp"
#include "torchbridge/ir/operation.hpp"
#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/libtorch/threads.hpp"

namespace {

using namespace tb::bench;

// ---- 10k element-wise ops on [16, 16] tensors -------------------------------------------------

constexpr int kChainOps = 10000;
const Dims kSmall{16, 16};

// x -> x + c1 -> * c2 -> - c1 -> / c2 -> relu, repeated; each step consumes its input (ReadWrite,
// as Burn's client sends the last reference) and the last output reuses the first input's id,
// so the stream can be replayed without registering anything.
struct Chain {
  static constexpr std::uint64_t kC1 = 1, kC2 = 2, kX = 10, kMask = 1000000;
  std::vector<OperationIr> ops;
  // The same chain as Burn's fusion client sends it in a graph: relu as x <= 0, then a mask fill.
  std::vector<OperationIr> fusion_ops;
  at::Tensor x0 = values({16, 16}, -1, 1, 1);
  at::Tensor c1 = values({16, 16}, -1, 1, 2);
  at::Tensor c2 = values({16, 16}, 0.5, 1.5, 3);

  Chain() {
    const DType f32(DTypeKind::F32);
    for (int i = 0; i < kChainOps; ++i) {
      const TensorIr in = rw(tir(kX + i, kSmall));
      const TensorIr o = out(i + 1 == kChainOps ? kX : kX + i + 1, kSmall);
      switch (i % 5) {
        case 0:
          ops.push_back(
              make_op<OpKind::NumericFloat_Add>(BinaryOpIr{in, tir(kC1, kSmall), o}, f32));
          break;
        case 1:
          ops.push_back(
              make_op<OpKind::NumericFloat_Mul>(BinaryOpIr{in, tir(kC2, kSmall), o}, f32));
          break;
        case 2:
          ops.push_back(
              make_op<OpKind::NumericFloat_Sub>(BinaryOpIr{in, tir(kC1, kSmall), o}, f32));
          break;
        case 3:
          ops.push_back(
              make_op<OpKind::NumericFloat_Div>(BinaryOpIr{in, tir(kC2, kSmall), o}, f32));
          break;
        default:
          ops.push_back(make_op<OpKind::Activation_Relu>(UnaryOpIr{in, o}));
          break;
      }
      if (i % 5 != 4) {
        fusion_ops.push_back(ops.back());
        continue;
      }
      TensorIr mask = out(kMask + i, kSmall);
      mask.dtype = DType::boolean(BoolStore::Native);
      fusion_ops.push_back(make_op<OpKind::NumericFloat_LowerEqualElem>(
          ScalarOpIr{tir(kX + i, kSmall), ScalarIr::f(0.0), mask}, f32));
      mask.status = TensorStatus::ReadWrite;
      fusion_ops.push_back(
          make_op<OpKind::BaseFloat_MaskFill>(MaskFillOpIr{in, mask, ScalarIr::f(0.0), o}));
    }
  }
  void setup(Ours& ours) const {
    ours.put(kC1, c1);
    ours.put(kC2, c2);
    ours.put(kX, x0);
  }
  static at::Tensor aten(at::Tensor x, const at::Tensor& c1, const at::Tensor& c2) {
    for (int i = 0; i < kChainOps; ++i) {
      switch (i % 5) {
        case 0:
          x = at::add(x, c1);
          break;
        case 1:
          x = at::mul(x, c2);
          break;
        case 2:
          x = at::sub(x, c1);
          break;
        case 3:
          x = at::div(x, c2);
          break;
        default:
          x = at::relu(x);
          break;
      }
    }
    return x;
  }
};

enum class ChainForm {
  kPlain,   // as Burn's plain client sends it, through the executor as the host runs it
  kFusion,  // as Burn's fusion client replays it: relu as a mask and a mask fill
  kEager,   // the plain chain with fusion off: the executor's own cost per op, against ATen's
};

void elementwise_ours(benchmark::State& state, ChainForm form) {
  Chain chain;
  Ours ours(form != ChainForm::kEager);
  chain.setup(ours);
  const auto& ops = form == ChainForm::kFusion ? chain.fusion_ops : chain.ops;
  const auto once = [&] { ours.run_all(ops); };
  once();
  const char* names[] = {"elementwise", "elementwise (fusion client)", "elementwise (eager)"};
  check_same(names[static_cast<int>(form)], ours.get(tir(Chain::kX, kSmall)),
             Chain::aten(chain.x0.to(device()), chain.c1.to(device()), chain.c2.to(device())));
  for (auto _ : state) {
    once();
    ours.sync();
  }
  state.counters["ops"] = benchmark::Counter(static_cast<double>(kChainOps) * state.iterations(),
                                             benchmark::Counter::kIsRate);
}
void BM_Elementwise10k_Ours(benchmark::State& state) {
  elementwise_ours(state, ChainForm::kPlain);
}
void BM_Elementwise10k_Graph(benchmark::State& state) {
  elementwise_ours(state, ChainForm::kFusion);
}
void BM_Elementwise10k_Eager(benchmark::State& state) {
  elementwise_ours(state, ChainForm::kEager);
}

void BM_Elementwise10k_Aten(benchmark::State& state) {
  Chain chain;
  const at::Tensor c1 = chain.c1.to(device()), c2 = chain.c2.to(device());
  at::Tensor x = chain.x0.to(device());
  for (auto _ : state) {
    x = Chain::aten(x, c1, c2);
    device_sync();
  }
  benchmark::DoNotOptimize(x);
  state.counters["ops"] = benchmark::Counter(static_cast<double>(kChainOps) * state.iterations(),
                                             benchmark::Counter::kIsRate);
}

// ---- MLP 512-1024-512, batch 64 ---------------------------------------------------------------

struct Mlp {
  // Burn's Linear weight is [d_in, d_out]: y = x @ W + b, which is ATen's addmm(b, x, W).
  at::Tensor x = values({64, 512}, -1, 1, 10);
  at::Tensor w1 = values({512, 1024}, -0.044, 0.044, 11);
  at::Tensor b1 = values({1024}, -0.044, 0.044, 12);
  at::Tensor w2 = values({1024, 512}, -0.031, 0.031, 13);
  at::Tensor b2 = values({512}, -0.031, 0.031, 14);
  std::vector<OperationIr> ops;

  Mlp() {
    ops.push_back(make_op<OpKind::Module_Linear>(
        LinearOpIr{tir(1, {64, 512}), tir(2, {512, 1024}), tir(3, {1024}), out(10, {64, 1024})}));
    ops.push_back(
        make_op<OpKind::Activation_Relu>(UnaryOpIr{rw(tir(10, {64, 1024})), out(11, {64, 1024})}));
    ops.push_back(make_op<OpKind::Module_Linear>(LinearOpIr{
        rw(tir(11, {64, 1024})), tir(4, {1024, 512}), tir(5, {512}), out(12, {64, 512})}));
  }
  void setup(Ours& ours) const {
    ours.put(1, x);
    ours.put(2, w1);
    ours.put(3, b1);
    ours.put(4, w2);
    ours.put(5, b2);
  }
  static OperationIr drop() { return make_op<OpKind::Drop_Op>(rw(tir(12, {64, 512}))); }
};

void BM_Mlp_Ours(benchmark::State& state) {
  Mlp mlp;
  Ours ours;
  mlp.setup(ours);
  ours.run_all(mlp.ops);
  const at::Device d = device();
  check_same("mlp", ours.get(tir(12, {64, 512})),
             at::addmm(mlp.b2.to(d), at::relu(at::addmm(mlp.b1.to(d), mlp.x.to(d), mlp.w1.to(d))),
                       mlp.w2.to(d)));
  ours.run(Mlp::drop());
  for (auto _ : state) {
    ours.run_all(mlp.ops);
    ours.run(Mlp::drop());
    ours.sync();
  }
}

void BM_Mlp_Aten(benchmark::State& state) {
  Mlp mlp;
  const at::Device d = device();
  const at::Tensor x = mlp.x.to(d), w1 = mlp.w1.to(d), b1 = mlp.b1.to(d), w2 = mlp.w2.to(d),
                   b2 = mlp.b2.to(d);
  for (auto _ : state) {
    at::Tensor y = at::addmm(b2, at::relu(at::addmm(b1, x, w1)), w2);
    device_sync();
    benchmark::DoNotOptimize(y);
  }
}

// ---- Small CNN: 2 x (conv 3x3 + relu + max-pool 2) + linear, batch 16 of 3x32x32 ------------

struct Cnn {
  at::Tensor x = values({16, 3, 32, 32}, -1, 1, 20);
  at::Tensor k1 = values({16, 3, 3, 3}, -0.19, 0.19, 21);
  at::Tensor c1 = values({16}, -0.19, 0.19, 22);
  at::Tensor k2 = values({32, 16, 3, 3}, -0.083, 0.083, 23);
  at::Tensor c2 = values({32}, -0.083, 0.083, 24);
  at::Tensor w = values({2048, 10}, -0.022, 0.022, 25);
  at::Tensor b = values({10}, -0.022, 0.022, 26);
  std::vector<OperationIr> ops;

  Cnn() {
    const Conv2dOptionsIr same{{1, 1}, {UsizePair{1, 1}, UsizePair{1, 1}}, {1, 1}, 1};
    const auto pool = [](TensorIr in, TensorIr o) {
      return make_op<OpKind::Module_MaxPool2d>(
          MaxPool2dOpIr{in, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, o});
    };
    ops.push_back(
        make_op<OpKind::Module_Conv2d>(Conv2dOpIr{tir(1, {16, 3, 32, 32}), tir(2, {16, 3, 3, 3}),
                                                  tir(3, {16}), same, out(10, {16, 16, 32, 32})}));
    ops.push_back(make_op<OpKind::Activation_Relu>(
        UnaryOpIr{rw(tir(10, {16, 16, 32, 32})), out(11, {16, 16, 32, 32})}));
    ops.push_back(pool(rw(tir(11, {16, 16, 32, 32})), out(12, {16, 16, 16, 16})));
    ops.push_back(make_op<OpKind::Module_Conv2d>(Conv2dOpIr{rw(tir(12, {16, 16, 16, 16})),
                                                            tir(4, {32, 16, 3, 3}), tir(5, {32}),
                                                            same, out(13, {16, 32, 16, 16})}));
    ops.push_back(make_op<OpKind::Activation_Relu>(
        UnaryOpIr{rw(tir(13, {16, 32, 16, 16})), out(14, {16, 32, 16, 16})}));
    ops.push_back(pool(rw(tir(14, {16, 32, 16, 16})), out(15, {16, 32, 8, 8})));
    ops.push_back(make_op<OpKind::BaseFloat_Reshape>(
        ShapeOpIr{rw(tir(15, {16, 32, 8, 8})), out(16, {16, 2048})}));
    ops.push_back(make_op<OpKind::Module_Linear>(
        LinearOpIr{rw(tir(16, {16, 2048})), tir(6, {2048, 10}), tir(7, {10}), out(17, {16, 10})}));
  }
  void setup(Ours& ours) const {
    ours.put(1, x);
    ours.put(2, k1);
    ours.put(3, c1);
    ours.put(4, k2);
    ours.put(5, c2);
    ours.put(6, w);
    ours.put(7, b);
  }
  static OperationIr drop() { return make_op<OpKind::Drop_Op>(rw(tir(17, {16, 10}))); }
  static at::Tensor aten(const at::Tensor& x, const at::Tensor& k1, const at::Tensor& c1,
                         const at::Tensor& k2, const at::Tensor& c2, const at::Tensor& w,
                         const at::Tensor& b) {
    at::Tensor h = at::max_pool2d(at::relu(at::conv2d(x, k1, c1, 1, 1)), 2, 2);
    h = at::max_pool2d(at::relu(at::conv2d(h, k2, c2, 1, 1)), 2, 2);
    return at::addmm(b, h.reshape({16, 2048}), w);
  }
};

void BM_Cnn_Ours(benchmark::State& state) {
  Cnn cnn;
  Ours ours;
  cnn.setup(ours);
  ours.run_all(cnn.ops);
  const at::Device d = device();
  check_same("cnn", ours.get(tir(17, {16, 10})),
             Cnn::aten(cnn.x.to(d), cnn.k1.to(d), cnn.c1.to(d), cnn.k2.to(d), cnn.c2.to(d),
                       cnn.w.to(d), cnn.b.to(d)));
  ours.run(Cnn::drop());
  for (auto _ : state) {
    ours.run_all(cnn.ops);
    ours.run(Cnn::drop());
    ours.sync();
  }
}

void BM_Cnn_Aten(benchmark::State& state) {
  Cnn cnn;
  const at::Device d = device();
  const at::Tensor x = cnn.x.to(d), k1 = cnn.k1.to(d), c1 = cnn.c1.to(d), k2 = cnn.k2.to(d),
                   c2 = cnn.c2.to(d), w = cnn.w.to(d), b = cnn.b.to(d);
  for (auto _ : state) {
    at::Tensor y = Cnn::aten(x, k1, c1, k2, c2, w, b);
    device_sync();
    benchmark::DoNotOptimize(y);
  }
}

}  // namespace

// Ours and ATen registered in pairs, so that with --benchmark_enable_random_interleaving the two
// sides of one workload see the same machine load.
BENCHMARK(BM_Elementwise10k_Ours)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Elementwise10k_Aten)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Elementwise10k_Graph)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Elementwise10k_Eager)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Mlp_Ours)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Mlp_Aten)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Cnn_Ours)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Cnn_Aten)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  int threads = 0;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::atoi(argv[i] + 10);
  }
  // The same BLAS kernels and thread policy as `torchbridge serve` (see threads.hpp).
  if (auto failed = lt::restart_with_runtime_env(argv, threads))
    std::fprintf(stderr, "%s\n", failed->c_str());
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--device=", 9) == 0) {
      g_device = argv[i] + 9;
    } else if (std::strncmp(argv[i], "--threads=", 10) != 0) {
      rest.push_back(argv[i]);
    }
  }
  if (auto b = lt::make_backend({g_device, nullptr}); !b) die(b.error().what());
  const auto policy = lt::apply_thread_policy(threads);
  benchmark::AddCustomContext("device", g_device);
  benchmark::AddCustomContext("aten_threads", std::to_string(policy.aten));
  benchmark::AddCustomContext("threads", lt::describe(policy));
  if (const char* core = std::getenv("OPENBLAS_CORETYPE")) {
    benchmark::AddCustomContext("openblas_coretype", core);
  }
  benchmark::AddCustomContext("libtorch", lt::torch_version());
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
