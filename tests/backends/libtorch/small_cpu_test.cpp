// The small-tensor CPU loops (small_cpu.hpp) give what the ATen calls they stand in for give:
// every layout, ties, NaN, both index types.
#include <gtest/gtest.h>

#include <limits>

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

}  // namespace
}  // namespace tb::backend::libtorch
