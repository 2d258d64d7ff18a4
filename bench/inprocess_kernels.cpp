// In-process workloads where kernels, not the executor, set the time (issue 38): a ResNet basic
// block at batch 32 and a transformer encoder layer at sequence length 256. Each runs as Burn's
// client sends it (Burn's module ops: conv2d, batch norm in inference, linear, attention, layer
// norm) through our executor, and as the same ATen calls; a mismatch aborts before timing.
#include <benchmark/benchmark.h>

#include "inprocess_util.hpp"

namespace {

using namespace tb::bench;

// ---- ResNet basic block: conv3x3-BN-ReLU-conv3x3-BN + identity, ReLU; 32 x 64 x 16 x 16 -------

struct ResNetBlock {
  static constexpr std::int64_t kN = 32, kC = 64, kS = 16;
  const Dims act{kN, kC, kS, kS};
  at::Tensor x = values({kN, kC, kS, kS}, -1, 1, 30);
  at::Tensor k1 = values({kC, kC, 3, 3}, -0.042, 0.042, 31);
  at::Tensor k2 = values({kC, kC, 3, 3}, -0.042, 0.042, 32);
  at::Tensor c1 = values({kC}, -0.1, 0.1, 33), c2 = values({kC}, -0.1, 0.1, 34);
  // Batch norm's running statistics and affine parameters, two sets.
  at::Tensor g1 = values({kC}, 0.5, 1.5, 35), b1 = values({kC}, -0.1, 0.1, 36);
  at::Tensor m1 = values({kC}, -0.2, 0.2, 37), v1 = values({kC}, 0.5, 2, 38);
  at::Tensor g2 = values({kC}, 0.5, 1.5, 39), b2 = values({kC}, -0.1, 0.1, 40);
  at::Tensor m2 = values({kC}, -0.2, 0.2, 41), v2 = values({kC}, 0.5, 2, 42);
  static constexpr double kEps = 1e-5;
  std::vector<OperationIr> ops;

  ResNetBlock() {
    const Dims kernel{kC, kC, 3, 3}, channel{kC};
    const Conv2dOptionsIr same{{1, 1}, {UsizePair{1, 1}, UsizePair{1, 1}}, {1, 1}, 1};
    const auto conv = [&](TensorIr in, std::uint64_t k, std::uint64_t c, std::uint64_t o) {
      ops.push_back(make_op<OpKind::Module_Conv2d>(
          Conv2dOpIr{in, tir(k, kernel), tir(c, channel), same, out(o, act)}));
    };
    const auto bn = [&](std::uint64_t in, std::uint64_t first, std::uint64_t o) {
      ops.push_back(make_op<OpKind::Module_BatchNorm>(BatchNormOpIr{
          rw(tir(in, act)), tir(first, channel), tir(first + 1, channel), tir(first + 2, channel),
          tir(first + 3, channel), ScalarIr::f(kEps), out(o, act)}));
    };
    const DType f32(DTypeKind::F32);
    conv(tir(1, act), 2, 3, 20);
    bn(20, 6, 21);
    ops.push_back(make_op<OpKind::Activation_Relu>(UnaryOpIr{rw(tir(21, act)), out(22, act)}));
    conv(rw(tir(22, act)), 4, 5, 23);
    bn(23, 10, 24);
    ops.push_back(make_op<OpKind::NumericFloat_Add>(
        BinaryOpIr{rw(tir(24, act)), tir(1, act), out(25, act)}, f32));
    ops.push_back(make_op<OpKind::Activation_Relu>(UnaryOpIr{rw(tir(25, act)), out(26, act)}));
  }
  void setup(Ours& ours) const {
    ours.put(1, x);
    ours.put(2, k1);
    ours.put(3, c1);
    ours.put(4, k2);
    ours.put(5, c2);
    for (const auto& [id, t] :
         {std::pair{6, g1}, {7, b1}, {8, m1}, {9, v1}, {10, g2}, {11, b2}, {12, m2}, {13, v2}}) {
      ours.put(static_cast<std::uint64_t>(id), t);
    }
  }
  TensorIr result() const { return tir(26, act); }
  OperationIr drop() const { return make_op<OpKind::Drop_Op>(rw(result())); }
  struct Weights {
    at::Tensor x, k1, c1, k2, c2, g1, b1, m1, v1, g2, b2, m2, v2;
  };
  Weights on(const at::Device& d) const {
    return {x.to(d),  k1.to(d), c1.to(d), k2.to(d), c2.to(d), g1.to(d), b1.to(d),
            m1.to(d), v1.to(d), g2.to(d), b2.to(d), m2.to(d), v2.to(d)};
  }
  static at::Tensor aten(const Weights& w) {
    at::Tensor h = at::conv2d(w.x, w.k1, w.c1, 1, 1);
    h = at::relu(at::batch_norm(h, w.g1, w.b1, w.m1, w.v1, false, 0.0, kEps, false));
    h = at::conv2d(h, w.k2, w.c2, 1, 1);
    h = at::batch_norm(h, w.g2, w.b2, w.m2, w.v2, false, 0.0, kEps, false);
    return at::relu(h + w.x);
  }
};

// Times workload `w` through our executor: its ops and the drop of its result, per iteration,
// after one run checked against `expected` (ATen's answer).
template <class W>
void time_ours(benchmark::State& state, const char* what, const W& w, const at::Tensor& expected) {
  Ours ours;
  w.setup(ours);
  ours.run_all(w.ops);
  check_same(what, ours.get(w.result()), expected);
  ours.run(w.drop());
  for (auto _ : state) {
    ours.run_all(w.ops);
    ours.run(w.drop());
    ours.sync();
  }
}

void BM_ResNetBlock_Ours(benchmark::State& state) {
  const ResNetBlock block;
  time_ours(state, "resnet block", block, ResNetBlock::aten(block.on(device())));
}

void BM_ResNetBlock_Aten(benchmark::State& state) {
  ResNetBlock block;
  const auto w = block.on(device());
  for (auto _ : state) {
    at::Tensor y = ResNetBlock::aten(w);
    device_sync();
    benchmark::DoNotOptimize(y);
  }
}

// ---- Transformer encoder layer, post-norm: d 256, 4 heads, feed-forward 1024, seq 256 --------

struct EncoderLayer {
  static constexpr std::int64_t kL = 256, kD = 256, kH = 4, kF = 1024;
  static constexpr std::int64_t kHd = kD / kH;
  static constexpr double kEps = 1e-5;
  const Dims seq{1, kL, kD}, heads{1, kL, kH, kHd}, by_head{1, kH, kL, kHd}, wide{1, kL, kF};
  at::Tensor x = values({1, kL, kD}, -1, 1, 50);
  // Burn's Linear weight is [d_in, d_out].
  at::Tensor wq = values({kD, kD}, -0.0625, 0.0625, 51), wk = values({kD, kD}, -0.0625, 0.0625, 52);
  at::Tensor wv = values({kD, kD}, -0.0625, 0.0625, 53), wo = values({kD, kD}, -0.0625, 0.0625, 54);
  at::Tensor w1 = values({kD, kF}, -0.0625, 0.0625, 55),
             w2 = values({kF, kD}, -0.03125, 0.03125, 56);
  at::Tensor bq = values({kD}, -0.05, 0.05, 57), bk = values({kD}, -0.05, 0.05, 58);
  at::Tensor bv = values({kD}, -0.05, 0.05, 59), bo = values({kD}, -0.05, 0.05, 60);
  at::Tensor b1 = values({kF}, -0.05, 0.05, 61), b2 = values({kD}, -0.05, 0.05, 62);
  at::Tensor n1g = values({kD}, 0.8, 1.2, 63), n1b = values({kD}, -0.1, 0.1, 64);
  at::Tensor n2g = values({kD}, 0.8, 1.2, 65), n2b = values({kD}, -0.1, 0.1, 66);
  std::vector<OperationIr> ops;

  EncoderLayer() {
    const DType f32(DTypeKind::F32);
    const auto linear = [&](TensorIr in, std::uint64_t w, Dims wd, std::uint64_t b, Dims o_dims,
                            std::uint64_t o) {
      const Dims bias{wd[1]};
      ops.push_back(make_op<OpKind::Module_Linear>(
          LinearOpIr{in, tir(w, std::move(wd)), tir(b, bias), out(o, std::move(o_dims))}));
    };
    // q, k, v: linear, [1, L, H, Hd], heads first.
    const std::uint64_t head_ids[3] = {30, 33, 36};
    for (std::uint64_t i = 0; i < 3; ++i) {
      const std::uint64_t o = head_ids[i];
      linear(tir(1, seq), 2 + i, {kD, kD}, 6 + i, seq, o);
      ops.push_back(
          make_op<OpKind::BaseFloat_Reshape>(ShapeOpIr{rw(tir(o, seq)), out(o + 1, heads)}));
      ops.push_back(make_op<OpKind::BaseFloat_SwapDims>(
          SwapDimsOpIr{rw(tir(o + 1, heads)), out(o + 2, by_head), 1, 2}));
    }
    ops.push_back(make_op<OpKind::Module_Attention>(AttentionOpIr{
        rw(tir(32, by_head)), rw(tir(35, by_head)), rw(tir(38, by_head)), std::nullopt,
        std::nullopt, AttentionOptionsIr{std::nullopt, std::nullopt, false, {}},
        out(40, by_head)}));
    ops.push_back(make_op<OpKind::BaseFloat_SwapDims>(
        SwapDimsOpIr{rw(tir(40, by_head)), out(41, heads), 1, 2}));
    ops.push_back(make_op<OpKind::BaseFloat_Reshape>(ShapeOpIr{rw(tir(41, heads)), out(42, seq)}));
    linear(rw(tir(42, seq)), 5, {kD, kD}, 9, seq, 43);
    ops.push_back(make_op<OpKind::NumericFloat_Add>(
        BinaryOpIr{rw(tir(43, seq)), tir(1, seq), out(44, seq)}, f32));
    ops.push_back(make_op<OpKind::Module_LayerNorm>(LayerNormOpIr{
        rw(tir(44, seq)), tir(12, {kD}), tir(13, {kD}), ScalarIr::f(kEps), out(45, seq)}));
    linear(tir(45, seq), 10, {kD, kF}, 11, wide, 46);
    ops.push_back(make_op<OpKind::Activation_Gelu>(UnaryOpIr{rw(tir(46, wide)), out(47, wide)}));
    linear(rw(tir(47, wide)), 16, {kF, kD}, 17, seq, 48);
    ops.push_back(make_op<OpKind::NumericFloat_Add>(
        BinaryOpIr{rw(tir(48, seq)), rw(tir(45, seq)), out(49, seq)}, f32));
    ops.push_back(make_op<OpKind::Module_LayerNorm>(LayerNormOpIr{
        rw(tir(49, seq)), tir(14, {kD}), tir(15, {kD}), ScalarIr::f(kEps), out(50, seq)}));
  }
  void setup(Ours& ours) const {
    const std::pair<int, const at::Tensor*> all[] = {
        {1, &x},    {2, &wq},   {3, &wk},   {4, &wv},  {5, &wo},  {6, &bq},
        {7, &bk},   {8, &bv},   {9, &bo},   {10, &w1}, {11, &b1}, {12, &n1g},
        {13, &n1b}, {14, &n2g}, {15, &n2b}, {16, &w2}, {17, &b2}};
    for (const auto& [id, t] : all) ours.put(static_cast<std::uint64_t>(id), *t);
  }
  TensorIr result() const { return tir(50, seq); }
  OperationIr drop() const { return make_op<OpKind::Drop_Op>(rw(result())); }
  static at::Tensor split_heads(const at::Tensor& t) {
    return t.reshape({1, kL, kH, kHd}).transpose(1, 2);
  }
  // The same layer with every tensor on `d` (moved once, outside any timing).
  EncoderLayer on(const at::Device& d) const {
    EncoderLayer m = *this;
    for (at::Tensor* t : {&m.x, &m.wq, &m.wk, &m.wv, &m.wo, &m.w1, &m.w2, &m.bq, &m.bk, &m.bv,
                          &m.bo, &m.b1, &m.b2, &m.n1g, &m.n1b, &m.n2g, &m.n2b}) {
      *t = t->to(d);
    }
    return m;
  }
  // Direct ATen calls on this layer's tensors (on the device they are on).
  at::Tensor aten() const {
    const auto lin = [](const at::Tensor& in, const at::Tensor& w, const at::Tensor& b) {
      return at::add(at::matmul(in, w), b);
    };
    const at::Tensor q = split_heads(lin(x, wq, bq)), k = split_heads(lin(x, wk, bk)),
                     v = split_heads(lin(x, wv, bv));
    const at::Tensor a =
        at::scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape({1, kL, kD});
    const at::Tensor h = at::layer_norm(lin(a, wo, bo) + x, {kD}, n1g, n1b, kEps);
    const at::Tensor f = lin(at::gelu(lin(h, w1, b1)), w2, b2);
    return at::layer_norm(f + h, {kD}, n2g, n2b, kEps);
  }
};

void BM_EncoderLayer_Ours(benchmark::State& state) {
  const EncoderLayer layer;
  time_ours(state, "encoder layer", layer, layer.on(device()).aten());
}

void BM_EncoderLayer_Aten(benchmark::State& state) {
  const EncoderLayer layer = EncoderLayer().on(device());
  for (auto _ : state) {
    at::Tensor y = layer.aten();
    device_sync();
    benchmark::DoNotOptimize(y);
  }
}

}  // namespace

BENCHMARK(BM_ResNetBlock_Ours)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ResNetBlock_Aten)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EncoderLayer_Ours)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EncoderLayer_Aten)->Unit(benchmark::kMillisecond)->UseRealTime();
