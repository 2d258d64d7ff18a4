// runtime/vml.hpp: MKL's exp, log and sqrt and SLEEF's log1p called as ATen calls them, piece by
// piece.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/vml.hpp"

namespace tb::backend::libtorch::vml {
namespace {

struct Case {
  Fn fn;
  const char* symbol;
  at::Tensor (*aten)(const at::Tensor&);
};
const Case kCases[] = {
    {Fn::kExp, "vmsExp", [](const at::Tensor& x) { return at::exp(x); }},
    {Fn::kLn, "vmsLn", [](const at::Tensor& x) { return at::log(x); }},
    {Fn::kSqrt, "vmsSqrt", [](const at::Tensor& x) { return at::sqrt(x); }},
    {Fn::kLog1p, "Sleef_log1pf8_u10", [](const at::Tensor& x) { return at::log1p(x); }},
};

// The pinned wheel's ATen is built with MKL and SLEEF: where the process has the functions, the
// probe must find them equal to ATen's kernels (a wrong mode, a wrong function or the wrong vector
// width fails it).
TEST(Vml, WhereMklIsLoadedItsFunctionsAreUsable) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.symbol);
    if (dlsym(RTLD_DEFAULT, c.symbol) == nullptr ||
        (c.fn == Fn::kLog1p && !__builtin_cpu_supports("avx2"))) {
      std::cout << "[  SKIPPED ] " << c.symbol << ": not in this LibTorch or for this CPU\n";
      EXPECT_FALSE(usable(c.fn));
      continue;
    }
    EXPECT_TRUE(usable(c.fn));
  }
}

// Any piece of an array, at any alignment, gives the bits ATen gives for the whole.
TEST(Vml, EveryPieceGivesAtensBits) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-120.0f, 120.0f);
  std::vector<float> in(3000);
  for (float& x : in) x = u(rng);
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.symbol);
    if (!usable(c.fn)) continue;
    const at::Tensor want =
        c.aten(at::from_blob(in.data(), {static_cast<std::int64_t>(in.size())}, at::kFloat));
    for (std::int64_t offset = 0; offset < 17; ++offset) {
      for (const std::int64_t len : {1, 2, 7, 15, 16, 17, 63, 100, 1000}) {
        std::vector<float> y(static_cast<std::size_t>(offset + len));
        apply(c.fn, in.data() + offset, y.data() + offset, len);
        EXPECT_EQ(std::memcmp(y.data() + offset, want.data_ptr<float>() + offset,
                              static_cast<std::size_t>(len) * 4),
                  0)
            << "offset " << offset << ", length " << len;
      }
    }
  }
}

}  // namespace
}  // namespace tb::backend::libtorch::vml
