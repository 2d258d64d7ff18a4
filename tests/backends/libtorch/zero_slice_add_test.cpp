// Held zero slices (exec/zero_slice_add.hpp): Burn's gradient of a slice, zeros(shape)
// .slice_assign(r, g) added to a sum, written into the sum's own memory, must leave exactly what
// the three ops leave through their lowerings (fused_compare.hpp): -0.0 and all, since 0 + -0.0
// is +0.0. Where the pattern breaks, what is held is filled and the ops run as usual.
#include <gmock/gmock.h>

#include <cstring>
#include <functional>
#include <string>

#include "backends/libtorch/fused_compare.hpp"

namespace tb::test {
namespace {

using TS = TensorStatus;

// [40, 2, 64]: 5,120 elements, above ZeroSliceAdd::kMinElements.
const Dims kShape{40, 2, 64};
const Dims kRow{1, 2, 64};

TensorData data_of(const Dims& dims, const std::vector<float>& v, DTypeKind kind) {
  if (kind == DTypeKind::F32) return f32_data(dims, v);
  std::vector<double> w(v.begin(), v.end());
  TensorData d;
  d.shape = dims;
  d.dtype = DTypeKind::F64;
  d.bytes = ir::Bytes::copy_of(w.data(), w.size() * sizeof(double));
  return d;
}

// Special values with -0.0 at every `every`-th element: a sum where 0 + x and x differ.
std::vector<float> with_negative_zeros(std::size_t n, std::uint32_t seed, std::size_t every) {
  std::vector<float> v = special_values(n, seed);
  for (std::size_t i = 0; i < n; i += every) v[i] = -0.0f;
  return v;
}

std::vector<ir::Slice> row(std::int64_t t, std::int64_t step = 1) {
  return {ir::Slice{t, t + 1, step}};
}

class ZeroSliceAdd : public FusedCompare {
 protected:
  // One gradient step as Burn's autodiff sends it: zeros, the slice assignment of `g` into them,
  // the add of that into `sum`. Ids: zeros `base`, slice `base + 1`, result `base + 2`.
  static void step(Stream& s, std::uint64_t base, std::uint64_t g, std::uint64_t sum,
                   std::vector<ir::Slice> ranges, bool held_first, DTypeKind kind,
                   const Dims& g_dims = kRow) {
    const auto t = [&](std::uint64_t id, const Dims& d, TS st) { return tir(id, d, kind, st); };
    s.ops.push_back(
        make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{t(base, kShape, TS::NotInit)}, kind));
    s.ops.push_back(make_op<OpKind::BaseFloat_SliceAssign>(
        SliceAssignOpIr{t(base, kShape, TS::ReadWrite), std::move(ranges),
                        t(g, g_dims, TS::ReadWrite), t(base + 1, kShape, TS::NotInit)}));
    const TensorIr held = t(base + 1, kShape, TS::ReadWrite);
    const TensorIr other = t(sum, kShape, TS::ReadWrite);
    s.ops.push_back(make_op<OpKind::NumericFloat_Add>(
        BinaryOpIr{held_first ? held : other, held_first ? other : held,
                   t(base + 2, kShape, TS::NotInit)},
        kind));
  }
};

// Steps into one sum, as CTC's backward makes them: rows revisited, either operand order, -0.0 in
// the sum and in the slices. A -0.0 survives only in the region the last step wrote, as -0.0 +
// -0.0, so the second sequence writes one row throughout: each step must add to the sum as it was.
TEST_F(ZeroSliceAdd, ASumOfSlicesIsTheThreeOpsBitForBit) {
  const std::vector<std::vector<std::int64_t>> sequences = {{3, 3, 7, 3, 39, 0}, {5, 5, 5}};
  for (const DTypeKind kind : {DTypeKind::F32, DTypeKind::F64})
    for (const auto& rows : sequences) {
      SCOPED_TRACE(kind == DTypeKind::F32 ? "f32" : "f64");
      SCOPED_TRACE(rows.size());
      Stream s;
      s.inputs.push_back({1, data_of(kShape, with_negative_zeros(5120, 1, 3), kind)});
      std::uint64_t sum = 1;
      for (std::uint64_t i = 0; i < rows.size(); ++i) {
        const std::uint64_t g = 100 + i, base = 10 * (i + 1);
        s.inputs.push_back({g, data_of(kRow, with_negative_zeros(128, 10 + i, 2), kind)});
        step(s, base, g, sum, row(rows[i]), i % 2 == 0, kind);
        sum = base + 2;
      }
      s.reads = {tir(sum, kShape, kind)};
      expect_same(s, /*require_run=*/false);
      EXPECT_EQ(fused_.zero_slices_added, rows.size());
    }
}

// A sum written in place by another op between two steps (a slice assignment of -0.0 into the
// last sum, under the same id) is no longer the last sum: all of it is rewritten at the next step.
TEST_F(ZeroSliceAdd, AnOpBetweenStepsForgetsTheLastSum) {
  const DTypeKind kind = DTypeKind::F32;
  Stream s;
  s.inputs = {{1, f32_data(kShape, special_values(5120, 2))},
              {100, f32_data(kRow, special_values(128, 3))},
              {101, f32_data(kRow, std::vector<float>(128, -0.0f))},
              {102, f32_data(kRow, special_values(128, 4))}};
  step(s, 10, 100, 1, row(5), true, kind);
  s.ops.push_back(make_op<OpKind::BaseFloat_SliceAssign>(
      SliceAssignOpIr{tir(12, kShape, kind, TS::ReadWrite), row(20),
                      tir(101, kRow, kind, TS::ReadWrite), tir(12, kShape, kind, TS::NotInit)}));
  step(s, 20, 102, 12, row(5), false, kind);
  s.reads = {tir(22, kShape, kind)};
  expect_same(s, /*require_run=*/false);
  EXPECT_EQ(fused_.zero_slices_added, 2u);
}

// Where the pattern breaks, what is held is filled and the ops run through their lowerings.
TEST_F(ZeroSliceAdd, BrokenPatternsRunAsTheOpsWould) {
  const DTypeKind kind = DTypeKind::F32;
  const auto t = [&](std::uint64_t id, const Dims& d, TS st = TS::ReadOnly) {
    return tir(id, d, kind, st);
  };
  const auto inputs = [&](Stream& s) {
    s.inputs = {{1, f32_data(kShape, with_negative_zeros(5120, 5, 4))},
                {100, f32_data(kRow, special_values(128, 6))},
                {101, f32_data(Dims{1, 1, 64}, special_values(64, 7))},
                {102, f32_data(kRow, special_values(128, 9))}};
  };
  struct Case {
    const char* what;
    std::function<void(Stream&)> build;
    std::vector<TensorIr> reads;
    std::uint64_t added;
  };
  const std::vector<Case> cases = {
      {"the zeros read",
       [&](Stream& s) {
         s.ops = {make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{t(10, kShape, TS::NotInit)}, kind)};
       },
       {t(10, kShape)},
       0},
      {"the slice read",
       [&](Stream& s) {
         step(s, 10, 100, 1, row(2), true, kind);
         s.ops.pop_back();
       },
       {t(11, kShape)},
       0},
      {"the zeros taken by another op",
       [&](Stream& s) {
         s.ops = {
             make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{t(10, kShape, TS::NotInit)}, kind),
             make_op<OpKind::NumericFloat_Add>(
                 BinaryOpIr{t(10, kShape, TS::ReadWrite), t(1, kShape), t(12, kShape, TS::NotInit)},
                 kind)};
       },
       {t(12, kShape)},
       0},
      {"the slice kept after the add",
       [&](Stream& s) {
         step(s, 10, 100, 1, row(2), true, kind);
         s.ops.back().as<BinaryOpIr>().lhs.status = TS::ReadOnly;
       },
       {t(11, kShape), t(12, kShape)},
       0},
      {"the sum kept after the add",
       [&](Stream& s) {
         step(s, 10, 100, 1, row(2), false, kind);
         s.ops.back().as<BinaryOpIr>().lhs.status = TS::ReadOnly;
       },
       {t(1, kShape), t(12, kShape)},
       0},
      {"the sum's memory shared with a view",
       [&](Stream& s) {
         s.ops.push_back(make_op<OpKind::BaseFloat_Reshape>(
             ShapeOpIr{t(1, kShape), t(2, Dims{80, 64}, TS::NotInit)}));
         step(s, 10, 100, 1, row(2), true, kind);
       },
       {t(2, Dims{80, 64}), t(12, kShape)},
       0},
      {"a drop between the slice and the add",
       [&](Stream& s) {
         step(s, 10, 100, 1, row(2), true, kind);
         s.ops.insert(s.ops.end() - 1,
                      make_op<OpKind::Drop_Op>(t(101, Dims{1, 1, 64}, TS::ReadWrite)));
       },
       {t(12, kShape)},
       0},
      {"a reversed slice",
       [&](Stream& s) { step(s, 10, 100, 1, row(2, -1), true, kind); },
       {t(12, kShape)},
       0},
      {"a broadcast value",
       [&](Stream& s) {
         step(s, 10, 101, 1, row(2), true, kind, Dims{1, 1, 64});
       },
       {t(12, kShape)},
       0},
      {"a broadcast sum",
       [&](Stream& s) {
         step(s, 10, 100, 1, row(2), true, kind);
         s.ops.back().as<BinaryOpIr>().rhs = t(102, kRow, TS::ReadWrite);
       },
       {t(12, kShape)},
       0},
      {"the taken case, for contrast",
       [&](Stream& s) { step(s, 10, 100, 1, row(2), true, kind); },
       {t(12, kShape)},
       1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Stream s;
    inputs(s);
    c.build(s);
    s.reads = c.reads;
    expect_same(s, /*require_run=*/false);
    EXPECT_EQ(fused_.zero_slices_added, c.added);
  }
}

// Every other way into the executor fills what is held first, and its memory counts from the
// start: the held tensor, and a consumed slice value the executor still holds.
TEST_F(ZeroSliceAdd, EveryOtherEntryPointFillsWhatIsHeld) {
  const DTypeKind kind = DTypeKind::F32;
  const auto t = [&](std::uint64_t id, const Dims& d, TS st = TS::ReadOnly) {
    return tir(id, d, kind, st);
  };
  const std::vector<float> g = special_values(128, 11);
  const auto held_slice = [&](Executor& e) {
    EXPECT_TRUE(e.register_tensor(TensorId{100}, f32_data(kRow, g)));
    Stream s;
    step(s, 10, 100, 1, row(4), true, kind);
    EXPECT_TRUE(e.execute(s.ops[0]));
    EXPECT_TRUE(e.execute(s.ops[1]));
    EXPECT_TRUE(e.has_deferred());
  };
  const std::vector<Entry> entries = every_other_entry(
      t(11, kShape), f32_data(kRow, g),
      make_op<OpKind::Float_Erf>(UnaryOpIr{t(11, kShape), t(4, kShape, TS::NotInit)}, kind));
  for (const auto& [name, entry] : entries) {
    SCOPED_TRACE(name);
    auto e = backend_->new_executor();
    held_slice(*e);
    EXPECT_EQ(e->stats().live_tensors, 1u) << "#11 live, #10 and #100 consumed, as if run";
    EXPECT_EQ(e->stats().live_bytes, (5120u + 128u) * 4) << "the held tensor and the value";
    entry(*e);
    EXPECT_FALSE(e->has_deferred());
    auto* lt = dynamic_cast<backend::libtorch::LibTorchExecutor*>(e.get());
    ASSERT_NE(lt, nullptr);
    EXPECT_FALSE(lt->stored(10).defined());
    EXPECT_FALSE(lt->stored(100).defined());
    if (std::string(name) == "transfer") continue;
    const at::Tensor s = lt->stored(11).contiguous();
    ASSERT_TRUE(s.defined());
    const float* v = s.data_ptr<float>();
    for (std::int64_t i = 0; i < 5120; ++i) {
      const bool in_row = i >= 4 * 128 && i < 5 * 128;
      const float want = in_row ? g[static_cast<std::size_t>(i - 4 * 128)] : 0.0f;
      ASSERT_EQ(std::memcmp(&v[i], &want, 4), 0) << "element " << i;
    }
  }
}

// Zeros below the threshold are not held: they join element-wise runs.
TEST_F(ZeroSliceAdd, SmallZerosJoinRunsInstead) {
  const Dims small{2, 129};
  Stream s;
  s.inputs = {{1, f32_data(small, special_values(258, 8))}};
  s.ops = {make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{f(2, small, TS::NotInit)}, DTypeKind::F32),
           make_op<OpKind::NumericFloat_Add>(
               BinaryOpIr{f(2, small, TS::ReadWrite), f(1, small), f(3, small, TS::NotInit)},
               DTypeKind::F32)};
  s.reads = {f(3, small)};
  expect_same(s);
  EXPECT_EQ(fused_.longest_run(), 2u);
}

}  // namespace
}  // namespace tb::test
