#include <gtest/gtest.h>

#include "torchbridge/libtorch/blas.hpp"

namespace tb::backend::libtorch {
namespace {

TEST(OpenBlasCore, TheGenericFallbackIsReplacedByTheBestKernelsTheCpuCanRun) {
  EXPECT_EQ(choose_openblas_core("Prescott", {true, true}), "SkylakeX");
  EXPECT_EQ(choose_openblas_core("PRESCOTT", {true, false}), "Haswell");
  EXPECT_EQ(choose_openblas_core("Prescott", {false, false}), std::nullopt);
}

TEST(OpenBlasCore, ARecognisedCpuKeepsOpenBlasChoice) {
  EXPECT_EQ(choose_openblas_core("Cooperlake", {true, true}), std::nullopt);
  EXPECT_EQ(choose_openblas_core("Haswell", {true, true}), std::nullopt);
  EXPECT_EQ(choose_openblas_core("", {true, true}), std::nullopt);
}

}  // namespace
}  // namespace tb::backend::libtorch
