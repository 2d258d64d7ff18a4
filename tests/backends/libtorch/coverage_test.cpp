// Every leaf of the IR has a lowering (or a documented reason it cannot), and a test suite named
// after it.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "lowering.hpp"

namespace tb::backend::libtorch {
namespace {

std::string suite_name(ir::OpKind kind) {
  std::string name(ir::op_name(kind));
  const auto dot = name.find('.');
  return dot == std::string::npos ? name + "_Op" : name.replace(dot, 1, "_");
}

TEST(Coverage, EveryLeafIsLoweredOrExplained) {
  for (std::size_t k = 0; k < ir::kOpKindCount; ++k) {
    const auto kind = static_cast<ir::OpKind>(k);
    const auto& e = lowering_table().entry(kind);
    EXPECT_TRUE(e.fn) << ir::op_name(kind) << " has no lowering";
    if (e.fn && !e.lowered) {
      EXPECT_FALSE(e.note.empty()) << ir::op_name(kind) << " is unsupported without a reason";
    }
  }
  EXPECT_TRUE(lowering_table().duplicates().empty());
}

TEST(Coverage, EveryLeafHasATestSuite) {
  std::set<std::string> suites;
  const auto* unit = ::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit->total_test_suite_count(); ++i)
    suites.insert(unit->GetTestSuite(i)->name());
  for (std::size_t k = 0; k < ir::kOpKindCount; ++k) {
    const auto kind = static_cast<ir::OpKind>(k);
    EXPECT_TRUE(suites.count(suite_name(kind)))
        << "no test suite " << suite_name(kind) << " for " << ir::op_name(kind);
  }
}

}  // namespace
}  // namespace tb::backend::libtorch
