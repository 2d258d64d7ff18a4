// The small-tensor CPU loops (small_cpu.hpp) give what the ATen calls they stand in for give:
// every layout, ties, NaN, both index types.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "lower/small_cpu.hpp"

namespace tb::backend::libtorch {
namespace {

// ATen's argmax/argmin (first extremum, a NaN counting as one) in int64.
at::Tensor aten_arg(const at::Tensor& x, std::int64_t dim, bool max) {
  return max ? at::argmax(x, dim, true) : at::argmin(x, dim, true);
}

void expect_same_as_aten(const at::Tensor& x, const std::string& what) {
  for (std::int64_t dim = 0; dim < x.dim(); ++dim) {
    for (const bool max : {true, false}) {
      for (const auto index : {at::kInt, at::kLong}) {
        const auto ours = small_cpu::arg_extremum(x, dim, max, index);
        ASSERT_TRUE(ours.has_value()) << what;
        EXPECT_EQ(ours->scalar_type(), index);
        EXPECT_TRUE(at::equal(ours->to(at::kLong), aten_arg(x, dim, max)))
            << what << " dim " << dim << (max ? " max" : " min") << "\n"
            << x << "\nours " << *ours;
      }
    }
  }
}

TEST(SmallCpu, ArgExtremumMatchesAtenInEveryLayout) {
  at::manual_seed(7);
  // Few distinct values: ties everywhere, and the first one must win.
  const at::Tensor base = at::randint(0, 4, {5, 6, 3}, at::kFloat);
  expect_same_as_aten(base, "contiguous");
  expect_same_as_aten(base.transpose(0, 2), "transposed");
  expect_same_as_aten(base.slice(1, 1, 5, 2), "sliced with a step");
  expect_same_as_aten(base.select(2, 1).unsqueeze(1).expand({5, 4, 6}), "expanded");
  expect_same_as_aten(base.to(at::kDouble).narrow(0, 2, 3), "f64 with an offset");
  expect_same_as_aten(at::randn({7}), "1-d");
}

TEST(SmallCpu, ArgExtremumTakesTheFirstNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const at::Tensor x = at::tensor({1.0, nan, inf, nan, -inf, -0.0, 0.0}, at::kFloat).view({7, 1});
  expect_same_as_aten(x, "NaN and infinities");
  expect_same_as_aten(at::tensor({-0.0, 0.0, 0.0, -0.0}, at::kDouble), "signed zeros");
  expect_same_as_aten(at::tensor({nan, 1.0}, at::kFloat), "NaN first");
}

TEST(SmallCpu, ArgExtremumLeavesOtherCasesToAten) {
  EXPECT_FALSE(small_cpu::arg_extremum(at::ones({4}, at::kHalf), 0, true, at::kLong));
  EXPECT_FALSE(small_cpu::arg_extremum(at::ones({4}, at::kInt), 0, true, at::kLong));
  EXPECT_FALSE(small_cpu::arg_extremum(at::ones({4}), 0, true, at::kFloat));
  EXPECT_FALSE(small_cpu::arg_extremum(at::ones({0, 3}), 1, true, at::kLong));
  EXPECT_FALSE(
      small_cpu::arg_extremum(at::ones({small_cpu::kMaxElements + 1}), 0, true, at::kLong));
}

TEST(SmallCpu, ValueRangeReadsThroughStrides) {
  const at::Tensor x = at::tensor({3, -2, 9, 4, 0, 5}, at::kInt).view({2, 3});
  EXPECT_EQ(small_cpu::value_range(x), std::make_pair(std::int64_t{-2}, std::int64_t{9}));
  EXPECT_EQ(small_cpu::value_range(x.t()), std::make_pair(std::int64_t{-2}, std::int64_t{9}));
  EXPECT_EQ(small_cpu::value_range(x.select(0, 1).expand({4, 3})),
            std::make_pair(std::int64_t{0}, std::int64_t{5}));
  EXPECT_EQ(small_cpu::value_range(x.to(at::kLong).slice(1, 1, 3, 1)),
            std::make_pair(std::int64_t{-2}, std::int64_t{9}));
  EXPECT_EQ(small_cpu::value_range(at::full({1}, 7, at::kLong)),
            std::make_pair(std::int64_t{7}, std::int64_t{7}));
}

TEST(SmallCpu, IsInfAndIsNanMatchAtenInEveryLayout) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const at::Tensor base =
      at::tensor({1.0, inf, -inf, nan, -0.0, 3e38, 1e308, -inf, 0.5, inf, nan, 2.0}, at::kDouble)
          .view({3, 4});
  for (const auto& x : {base, base.to(at::kFloat), base.t(), base.to(at::kFloat).slice(1, 1, 4, 2),
                        base.select(0, 0).expand({2, 4}), base[1][1]}) {
    for (const auto test : {small_cpu::FloatTest::kInf, small_cpu::FloatTest::kNan}) {
      const auto ours = small_cpu::float_test(x, test);
      ASSERT_TRUE(ours.has_value());
      EXPECT_EQ(ours->scalar_type(), at::kBool);
      const at::Tensor aten = test == small_cpu::FloatTest::kInf ? at::isinf(x) : at::isnan(x);
      EXPECT_TRUE(at::equal(*ours, aten)) << x << *ours;
    }
  }
  const auto test = small_cpu::FloatTest::kInf;
  EXPECT_FALSE(small_cpu::float_test(at::ones({3}, at::kHalf), test));
  EXPECT_FALSE(small_cpu::float_test(at::ones({0}), test));
  EXPECT_FALSE(small_cpu::float_test(at::ones({small_cpu::kMaxElements + 1}), test));
}

TEST(SmallCpu, ZerosAreAtensZeros) {
  for (const auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kInt, at::kLong,
                           at::kShort, at::kChar, at::kByte, at::kBool}) {
    for (const std::vector<std::int64_t>& sizes :
         {std::vector<std::int64_t>{2, 129}, {0, 3}, {}, {small_cpu::kMaxElements + 1}}) {
      const auto options = at::TensorOptions().dtype(dtype);
      // Memory that held something else first: a reused block must be cleared too.
      { at::full(sizes, 1, options); }
      const at::Tensor z = small_cpu::zeros(sizes, options);
      EXPECT_EQ(z.scalar_type(), dtype);
      EXPECT_EQ(z.sizes(), at::IntArrayRef(sizes));
      EXPECT_TRUE(at::equal(z, at::zeros(sizes, options))) << dtype;
      if (z.is_floating_point() && z.numel() > 0) {
        EXPECT_FALSE(at::signbit(z).any().item<bool>()) << "+0.0, not -0.0";
      }
    }
  }
}

// Bit for bit: the sign of a zero and a NaN's payload stay as ATen leaves them.
bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() &&
         at::equal(a.contiguous().view(a.element_size() == 4 ? at::kInt : at::kLong),
                   b.contiguous().view(b.element_size() == 4 ? at::kInt : at::kLong));
}

// The layouts Burn's decompositions hand these loops: a column of a matrix, a transposed block,
// a stepped slice, a broadcast, a 0-dim tensor.
std::vector<std::pair<std::string, at::Tensor>> layouts_of(const at::Tensor& m) {
  return {{"contiguous", m},
          {"column", m.slice(1, 2, 3)},
          {"transposed", m.t()},
          {"stepped", m.slice(0, 1, 7, 3)},
          {"expanded", m.select(1, 0).unsqueeze(1).expand({m.size(0), 4})},
          {"0-dim", m.select(0, 1).select(0, 2)}};
}

TEST(SmallCpu, AbsIsAtensAbsBitForBit) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto dtype : {at::kFloat, at::kDouble}) {
    at::Tensor m = at::randn({8, 5}, dtype);
    m.view(-1).slice(0, 0, 6).copy_(at::tensor({-0.0, 0.0, -nan, nan, -inf, 1e-40}, dtype));
    for (const auto& [what, x] : layouts_of(m)) {
      const auto ours = small_cpu::float_abs(x);
      ASSERT_TRUE(ours.has_value()) << what;
      EXPECT_TRUE(ours->is_contiguous()) << what;
      EXPECT_TRUE(same_bits(*ours, at::abs(x))) << what << " " << dtype;
    }
  }
  EXPECT_FALSE(small_cpu::float_abs(at::ones({4}, at::kHalf)));
  EXPECT_FALSE(small_cpu::float_abs(at::ones({4}, at::kInt))) << "int abs wraps: ATen's";
  EXPECT_FALSE(small_cpu::float_abs(at::ones({0, 3})));
  EXPECT_FALSE(small_cpu::float_abs(at::ones({small_cpu::kMaxElements + 1})));
}

TEST(SmallCpu, IntRingScalarWrapsAsAtenDoes) {
  using small_cpu::Ring;
  for (const auto dtype : {at::kInt, at::kLong}) {
    const std::int64_t lo = dtype == at::kInt ? std::numeric_limits<std::int32_t>::min()
                                              : std::numeric_limits<std::int64_t>::min();
    at::Tensor m = at::randint(-1000, 1000, {8, 5}, at::TensorOptions().dtype(dtype));
    m.view(-1).slice(0, 0, 4).copy_(at::tensor({lo, lo + 1, -lo - 1, std::int64_t{0}}, dtype));
    // The scalars as lower_arith_scalar passes them: already wrapped to the tensor's width.
    for (const std::int64_t v : {std::int64_t{7}, std::int64_t{-1}, lo, -lo - 1}) {
      for (const auto& [what, x] : layouts_of(m)) {
        for (const Ring op : {Ring::kAdd, Ring::kSub, Ring::kMul}) {
          const auto ours = small_cpu::int_ring_scalar(x, op, v);
          ASSERT_TRUE(ours.has_value()) << what;
          const at::Tensor aten = op == Ring::kAdd   ? x.add(v)
                                  : op == Ring::kSub ? x.sub(v)
                                                     : x.mul(v);
          EXPECT_TRUE(at::equal(*ours, aten))
              << what << " " << dtype << " op " << static_cast<int>(op) << " v " << v;
          EXPECT_EQ(ours->scalar_type(), dtype);
        }
      }
    }
  }
  EXPECT_FALSE(small_cpu::int_ring_scalar(at::ones({4}, at::kShort), Ring::kAdd, 1));
  EXPECT_FALSE(small_cpu::int_ring_scalar(at::ones({4}, at::kFloat), Ring::kAdd, 1));
  EXPECT_FALSE(small_cpu::int_ring_scalar(at::ones({0}, at::kLong), Ring::kAdd, 1));
}

TEST(SmallCpu, GatherIsAtensGather) {
  at::manual_seed(11);
  for (const auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kLong, at::kBool, at::kByte}) {
    const at::Tensor m = at::randn({6, 5, 4}).mul(3).to(dtype);
    for (const auto& [what, x] :
         std::vector<std::pair<std::string, at::Tensor>>{{"contiguous", m},
                                                         {"transposed", m.transpose(0, 2)},
                                                         {"sliced", m.slice(1, 1, 5, 2)}}) {
      for (std::int64_t dim = 0; dim < 3; ++dim) {
        for (const auto index_type : {at::kLong, at::kInt}) {
          auto sizes = x.sizes().vec();
          sizes[0] = std::min<std::int64_t>(sizes[0], 3);  // smaller than x off `dim` too
          const at::Tensor index =
              at::randint(0, x.size(dim), sizes, at::TensorOptions().dtype(index_type));
          // The LU's form: one row index, expanded over the columns.
          const at::Tensor expanded = index.select(2, 0).unsqueeze(2).expand(sizes);
          for (const at::Tensor& i : {index, expanded}) {
            const auto ours = small_cpu::gather(x, dim, i);
            ASSERT_TRUE(ours.has_value()) << what;
            EXPECT_TRUE(at::equal(*ours, at::gather(x, dim, i.to(at::kLong))))
                << what << " dim " << dim << " " << dtype;
          }
        }
      }
    }
  }
  const at::Tensor x = at::ones({3, 4});
  EXPECT_FALSE(small_cpu::gather(x, 0, at::zeros({2, 5}, at::kLong)))
      << "an index larger than the input off the dim: ATen's error";
  EXPECT_TRUE(small_cpu::gather(x, 0, at::zeros({5, 4}, at::kLong))) << "along it, any size";
  EXPECT_FALSE(small_cpu::gather(x, 0, at::zeros({3}, at::kLong))) << "another rank";
  EXPECT_FALSE(small_cpu::gather(x, 0, at::zeros({3, 4}, at::kShort)));
  EXPECT_FALSE(small_cpu::gather(x, 0, at::zeros({0, 4}, at::kLong)));
}

TEST(SmallCpu, ScatterAddIsAtensBitForBit) {
  at::manual_seed(13);
  for (const auto dtype : {at::kFloat, at::kDouble}) {
    // Values of many magnitudes, so that a different order of the sums would show.
    const at::Tensor big =
        at::randn({9, 7, 5}, dtype) * at::pow(10.0, at::randint(-6, 7, {9, 7, 5}));
    for (std::int64_t dim = 0; dim < 3; ++dim) {
      for (const auto index_type : {at::kLong, at::kInt}) {
        const at::Tensor self = big.slice(1, 1, 6);  // a view with strides of the whole
        auto sizes = self.sizes().vec();
        sizes[dim] = 12;  // more than self has along dim: duplicates everywhere
        sizes[(dim + 1) % 3] -= 1;
        const at::Tensor index =
            at::randint(0, self.size(dim), sizes, at::TensorOptions().dtype(index_type));
        const at::Tensor src = at::randn(sizes, dtype).transpose(0, 2).contiguous().transpose(0, 2);
        for (const at::Tensor& i : {index, index.select(2, 0).unsqueeze(2).expand(sizes)}) {
          at::Tensor ours = self.transpose(0, 2).contiguous().transpose(0, 2);  // strided
          at::Tensor aten = ours.clone();
          ASSERT_TRUE(small_cpu::scatter_add_(ours, dim, i, src)) << dim;
          aten.scatter_add_(dim, i.to(at::kLong), src);
          EXPECT_TRUE(at::equal(ours.contiguous().view(dtype == at::kFloat ? at::kInt : at::kLong),
                                aten.contiguous().view(dtype == at::kFloat ? at::kInt : at::kLong)))
              << "dim " << dim << " " << dtype;
        }
      }
    }
  }
  at::Tensor x = at::zeros({4, 3});
  const at::Tensor i = at::zeros({2, 3}, at::kLong);
  at::Tensor expanded = at::zeros({1, 3}).expand({4, 3});
  EXPECT_FALSE(small_cpu::scatter_add_(expanded, 0, i, at::ones({2, 3})))
      << "a self whose elements share memory: ATen's error";
  EXPECT_FALSE(small_cpu::scatter_add_(x, 0, i, x.slice(0, 0, 2))) << "src overlaps self";
  EXPECT_FALSE(small_cpu::scatter_add_(x, 0, i, at::ones({2, 3}, at::kDouble))) << "dtypes";
  EXPECT_FALSE(small_cpu::scatter_add_(x, 0, at::zeros({2, 4}, at::kLong), at::ones({2, 4})));
  EXPECT_TRUE(at::equal(x, at::zeros({4, 3}))) << "a refusal leaves self untouched";
}

TEST(SmallCpu, CopyIntoIsAViewsCopy) {
  at::manual_seed(17);
  struct Region {
    std::string what;
    std::vector<std::int64_t> sizes, strides;
    std::int64_t at;  // from the tensor's first element
  };
  const std::vector<Region> regions{{"a row", {1, 6, 5}, {30, 5, 1}, 60},
                                    {"a column", {6, 1, 5}, {30, 5, 1}, 10},
                                    {"every other", {3, 3, 5}, {60, 10, 1}, 0},
                                    {"one element", {}, {}, 7}};
  for (const auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kInt, at::kBool, at::kByte}) {
    const at::Tensor base = at::randn({6, 6, 5}).mul(4).to(dtype);
    for (const auto& r : regions) {
      const at::Tensor value = at::randn(r.sizes).mul(4).to(dtype);
      const at::Tensor transposed =
          r.sizes.size() == 3 ? value.transpose(0, 2).contiguous().transpose(0, 2) : value;
      // A value read through a stride of 0 (Burn's expanded tensors).
      const at::Tensor expanded =
          r.sizes.size() == 3 ? value.slice(2, 0, 1).expand(r.sizes) : value;
      for (const at::Tensor& v : {value, transposed, expanded}) {
        // A storage offset of its own, as a tensor cut from a larger one has.
        at::Tensor ours = at::empty({40, 6, 5}, base.options()).slice(0, 3, 9);
        ours.copy_(base);
        at::Tensor aten = base.clone();
        ASSERT_TRUE(small_cpu::copy_into(ours, r.sizes, r.strides, ours.storage_offset() + r.at, v))
            << r.what;
        aten.as_strided(r.sizes, r.strides, r.at).copy_(v);
        EXPECT_TRUE(at::equal(ours, aten)) << r.what << " " << dtype;
      }
    }
  }
  at::Tensor x = at::zeros({4, 3});
  const std::vector<std::int64_t> row{1, 3}, strides{3, 1};
  EXPECT_FALSE(small_cpu::copy_into(x, row, strides, 3, x.slice(0, 0, 1)))
      << "a value sharing dst's memory: ATen decides";
  EXPECT_FALSE(small_cpu::copy_into(x, row, strides, 3, at::ones({1, 3}, at::kDouble)))
      << "another dtype: ATen converts";
  EXPECT_FALSE(small_cpu::copy_into(x, row, strides, 3, at::ones({3})))
      << "other sizes: ATen broadcasts";
  at::Tensor transposed = at::zeros({3, 4}).t();
  EXPECT_FALSE(small_cpu::copy_into(transposed, row, strides, 3, at::ones({1, 3})))
      << "a dst that is not contiguous";
  EXPECT_FALSE(small_cpu::copy_into(x, {1, 0}, strides, 3, at::ones({1, 0}))) << "empty";
  EXPECT_TRUE(at::equal(x, at::zeros({4, 3}))) << "a refusal leaves dst untouched";
}

// x / s for a one-element s is ATen's broadcast division bit for bit: specials on both sides, the
// views Burn's LU divides (a column of a matrix), s of a lower rank; other cases hand over.
TEST(SmallCpu, DivisionByOneElementIsAtens) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {0.0f, -0.0f, inf, -inf, std::nanf(""), 1e-40f, -3.0f, 7.0f};
  for (const auto dtype : {at::kFloat, at::kDouble}) {
    at::Tensor m = at::randn({9, 7}).mul(3).to(dtype);
    m.view({-1}).slice(0, 0, 8).copy_(at::tensor(specials).to(dtype));
    const at::Tensor column = m.slice(1, 2, 3);  // [9, 1], a stride of 7
    for (const float v : specials) {
      for (const at::Tensor& s : {at::full({1, 1}, v, dtype), at::full({1}, v, dtype)}) {
        for (const at::Tensor& x : {m, column, m.t()}) {
          const auto ours = small_cpu::divide_by_one(x, s);
          ASSERT_TRUE(ours.has_value());
          const at::Tensor aten = x / s;
          ASSERT_EQ(ours->sizes(), aten.sizes());
          // Bit for bit, any NaN matching any NaN.
          EXPECT_TRUE(at::equal(ours->isnan(), aten.isnan()));
          EXPECT_TRUE(at::equal(ours->nan_to_num(0), aten.nan_to_num(0)));
          EXPECT_TRUE(at::equal(ours->signbit().logical_and(ours->isnan().logical_not()),
                                aten.signbit().logical_and(aten.isnan().logical_not())))
              << "signs of zeros";
        }
      }
    }
  }
  const at::Tensor x = at::ones({3, 2});
  EXPECT_FALSE(small_cpu::divide_by_one(x, at::ones({1, 2}))) << "more than one element";
  EXPECT_FALSE(small_cpu::divide_by_one(x, at::ones({1, 1}, at::kDouble))) << "another dtype";
  EXPECT_FALSE(small_cpu::divide_by_one(x, at::ones({1, 1, 1}))) << "a higher rank broadcasts up";
  EXPECT_FALSE(small_cpu::divide_by_one(x.to(at::kInt), at::ones({1}, at::kInt))) << "integers";
}

// cat is ATen's cat: every dim, dtypes of every width, inputs strided, expanded or cut from a
// larger tensor; and where it hands over.
TEST(SmallCpu, CatIsAtensCat) {
  at::manual_seed(19);
  for (const auto dtype : {at::kFloat, at::kDouble, at::kInt, at::kBool, at::kByte, at::kHalf}) {
    const at::Tensor a = at::randn({2, 3, 4}).mul(4).to(dtype);
    const at::Tensor wide = at::randn({2, 5, 4}).mul(4).to(dtype);
    for (std::int64_t dim = 0; dim < 3; ++dim) {
      std::vector<std::int64_t> bsizes{2, 3, 4};
      bsizes[dim] = 1;
      const at::Tensor b = at::randn(bsizes).mul(4).to(dtype);
      const at::Tensor strided = a.transpose(0, 2).contiguous().transpose(0, 2);
      // A stride of 0 (Burn's expanded tensors) along another dim.
      const at::Tensor expanded = b.slice((dim + 1) % 3, 0, 1).expand(bsizes);
      const at::Tensor cut = wide.slice(1, 1, 4);  // storage offset, non-contiguous
      const std::vector<std::vector<at::Tensor>> cases = {
          {a, b}, {b, strided, expanded}, {a}, {cut, a}};
      for (const auto& inputs : cases) {
        bool fits = true;
        for (const auto& t : inputs) {
          for (std::int64_t d = 0; d < 3; ++d) {
            if (d != dim && t.size(d) != inputs[0].size(d)) fits = false;
          }
        }
        if (!fits) continue;
        const auto ours = small_cpu::cat(inputs, dim);
        ASSERT_TRUE(ours.has_value()) << dtype << " dim " << dim;
        EXPECT_TRUE(at::equal(*ours, at::cat(inputs, dim))) << dtype << " dim " << dim;
        EXPECT_TRUE(ours->is_contiguous());
      }
    }
  }
  const at::Tensor x = at::ones({2, 3});
  EXPECT_FALSE(small_cpu::cat({x, x.to(at::kDouble)}, 0)) << "mixed dtypes: ATen promotes";
  EXPECT_FALSE(small_cpu::cat({x, at::ones({3, 2})}, 0)) << "other sizes: ATen's error";
  EXPECT_FALSE(small_cpu::cat({x, at::ones({0, 3})}, 0)) << "an empty input";
  EXPECT_FALSE(small_cpu::cat({x, x}, 2)) << "a dim out of range";
  EXPECT_FALSE(small_cpu::cat({at::ones({200, 100}), at::ones({1, 100})}, 0)) << "too large";
}

// The outer product is ATen's matmul of inner dimension 1, bit for bit: zeros of either sign,
// infinities, NaN (the payload of NaN times NaN included), subnormals; the views Burn's LU
// multiplies (a column and a row of one matrix), a batch of one, and where it hands over.
TEST(SmallCpu, OuterProductIsAtensMatmulBitForBit) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto dtype : {at::kFloat, at::kDouble}) {
    at::Tensor m = at::randn({37, 29}, dtype);
    m.view(-1).slice(0, 0, 10).copy_(
        at::tensor({-0.0, 0.0, -nan, nan, -inf, inf, 1e-40, -1e-300, 3.0, -2.5}, dtype));
    m.select(1, 0).slice(0, 20, 26).copy_(at::tensor({-0.0, 0.0, inf, -1.0, nan, 1e-30}, dtype));
    const std::vector<std::pair<std::string, std::pair<at::Tensor, at::Tensor>>> cases = {
        {"column by row of one matrix",
         {m.slice(0, 1).slice(1, 0, 1), m.slice(0, 0, 1).slice(1, 1)}},
        {"contiguous", {m.slice(1, 0, 1).contiguous(), m.slice(0, 3, 4).contiguous()}},
        {"stepped row", {m.slice(1, 2, 3), m.slice(0, 5, 6).slice(1, 0, 29, 3)}},
        {"transposed", {m.slice(0, 0, 1).t(), m.slice(1, 4, 5).t()}},
        {"a batch of one", {m.slice(1, 0, 1).unsqueeze(0), m.slice(0, 2, 3).unsqueeze(0)}},
        {"empty", {m.slice(0, 0, 0).slice(1, 0, 1), m.slice(0, 0, 1)}},
    };
    for (const auto& [what, operands] : cases) {
      const auto& [lhs, rhs] = operands;
      const auto ours = small_cpu::outer_product(lhs, rhs);
      ASSERT_TRUE(ours.has_value()) << what;
      EXPECT_TRUE(ours->is_contiguous()) << what;
      EXPECT_TRUE(same_bits(*ours, at::matmul(lhs, rhs))) << what << " " << dtype;
    }
  }
  EXPECT_FALSE(small_cpu::outer_product(at::ones({4, 2}), at::ones({2, 3}))) << "inner dim 2";
  EXPECT_FALSE(small_cpu::outer_product(at::ones({4, 1}), at::ones({1, 3}, at::kDouble)))
      << "mixed dtypes: the caller converts";
  EXPECT_FALSE(small_cpu::outer_product(at::ones({4, 1}, at::kHalf), at::ones({1, 3}, at::kHalf)));
  EXPECT_FALSE(small_cpu::outer_product(at::ones({2, 4, 1}), at::ones({1, 1, 3})))
      << "broadcast batches: ATen's";
  EXPECT_FALSE(small_cpu::outer_product(at::ones({2, 4, 1}), at::ones({2, 1, 3})))
      << "several matrices: ATen's bmm sums into a zero, so a -0 product is +0 there";
  EXPECT_FALSE(small_cpu::outer_product(at::ones({1025, 1}), at::ones({1, 1024})))
      << "above 2^20 elements: ATen's threads";
  EXPECT_TRUE(small_cpu::outer_product(at::ones({1024, 1}), at::ones({1, 1024})));
}

// Every conversion it takes gives ATen's values, dtype and strides bit for bit: wrapping ints,
// rounding to nearest (ties, 2^24 + 1, int64's extremes), NaN, infinities and overflow to f32;
// contiguous and expanded inputs. What it leaves to ATen: floats to ints, dense strided inputs.
TEST(SmallCpu, CastIsAtensConversion) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<at::Tensor> sources = {
      at::tensor({0, -1, 7, 2147483647, -2147483647 - 1, 16777217}, at::kInt),
      at::tensor({big, -big - 1, std::int64_t{4294967297}, std::int64_t{-3}, std::int64_t{16777217},
                  std::int64_t{9007199254740993}},
                 at::kLong),
      at::tensor({0.1, -0.0, inf, -inf, std::nan(""), 3.5e38, 1e-320, 16777217.0}, at::kDouble),
      at::tensor({0.1f, -0.0f, 3.0e38f, 1e-40f, std::nanf(""), -2.5f}, at::kFloat),
  };
  const at::ScalarType types[] = {at::kInt, at::kLong, at::kFloat, at::kDouble};
  for (const at::Tensor& x : sources) {
    const at::Tensor expanded = x.slice(0, 0, 3).unsqueeze(0).expand({4, 3});
    for (const at::Tensor& in : {x, expanded}) {
      for (const at::ScalarType to : types) {
        SCOPED_TRACE(std::string(c10::toString(in.scalar_type())) + " to " + c10::toString(to));
        const auto ours = small_cpu::cast(in, to);
        if (in.scalar_type() == to ||
            (at::isFloatingType(in.scalar_type()) && !at::isFloatingType(to))) {
          EXPECT_FALSE(ours.has_value());
          continue;
        }
        ASSERT_TRUE(ours.has_value());
        const at::Tensor want = in.to(to);
        EXPECT_EQ(ours->scalar_type(), to);
        EXPECT_EQ(ours->strides(), want.strides());
        // Bit for bit, NaN included.
        EXPECT_EQ(std::memcmp(ours->data_ptr(), want.data_ptr(), want.nbytes()), 0) << *ours << "\n"
                                                                                    << want;
      }
    }
  }
  const at::Tensor square = at::arange(12, at::kInt).reshape({3, 4});
  EXPECT_FALSE(small_cpu::cast(square.t(), at::kLong).has_value()) << "ATen keeps its strides";
  EXPECT_FALSE(small_cpu::cast(at::zeros({small_cpu::kMaxElements + 1}, at::kInt), at::kLong));
}

// Each order of an int tensor against one value is ATen's comparison with a 0-dim tensor of the
// tensor's own type, at the extremes of both widths; a value outside int32's range against an
// int32 tensor, and a strided tensor, stay ATen's.
TEST(SmallCpu, IntCompareScalarIsAtensComparison) {
  const std::int64_t i64max = std::numeric_limits<std::int64_t>::max();
  const std::int32_t i32max = std::numeric_limits<std::int32_t>::max();
  const std::vector<at::Tensor> sources = {
      at::tensor({0, -1, 7, i32max, -i32max - 1, 3}, at::kInt),
      at::tensor({i64max, -i64max - 1, std::int64_t{4294967297}, std::int64_t{-3}, std::int64_t{0},
                  std::int64_t{7}},
                 at::kLong)};
  using Order = small_cpu::Order;
  for (const at::Tensor& x : sources) {
    const bool wide = x.scalar_type() == at::kLong;
    std::vector<std::int64_t> values = {0, -1, 7, i32max, -std::int64_t{i32max} - 1, 3};
    if (wide) values.insert(values.end(), {i64max, -i64max - 1, std::int64_t{4294967297}});
    for (const std::int64_t v : values) {
      const at::Tensor s = at::scalar_tensor(v, x.options());
      for (const auto& [order, want] :
           {std::pair{Order::kGt, x.gt(s)}, std::pair{Order::kGe, x.ge(s)},
            std::pair{Order::kLt, x.lt(s)}, std::pair{Order::kLe, x.le(s)},
            std::pair{Order::kEq, x.eq(s)}, std::pair{Order::kNe, x.ne(s)}}) {
        const auto ours = small_cpu::int_compare_scalar(x.reshape({2, 3}), order, v);
        ASSERT_TRUE(ours.has_value()) << v;
        EXPECT_TRUE(at::equal(*ours, want.reshape({2, 3}))) << v << "\n" << *ours;
      }
    }
  }
  const at::Tensor ints = at::arange(6, at::kInt);
  EXPECT_FALSE(small_cpu::int_compare_scalar(ints, Order::kGt, std::int64_t{1} << 40));
  EXPECT_FALSE(small_cpu::int_compare_scalar(ints.reshape({2, 3}).t(), Order::kGt, 1));
  EXPECT_FALSE(small_cpu::int_compare_scalar(ints.to(at::kFloat), Order::kGt, 1));
}

}  // namespace
}  // namespace tb::backend::libtorch
