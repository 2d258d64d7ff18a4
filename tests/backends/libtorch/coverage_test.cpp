// Every leaf of the IR has one lowering, and a test suite named after it.
//
// A missing `own` or `split` lowering function is a link error (lowering.hpp declares one per
// row), so what is left to check at run time is the table the rows build: a row whose Lowering
// column registers nothing (a family macro in lowering.cpp that expands to no t.on<K>()) leaves
// its leaf without a lowering, and a second registration of a leaf (a hand-written t.on<K>()
// beside the rows) silently replaces the lowering its row names.
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>

#include "lower/lowering.hpp"

namespace tb::backend::libtorch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string suite_name(ir::OpKind kind) {
  std::string name(ir::op_name(kind));
  const auto dot = name.find('.');
  return dot == std::string::npos ? name + "_Op" : name.replace(dot, 1, "_");
}

std::vector<std::string> names(const std::vector<ir::OpKind>& kinds) {
  std::vector<std::string> out;
  for (const auto kind : kinds) out.emplace_back(ir::op_name(kind));
  return out;
}

TEST(Coverage, EveryLeafHasExactlyOneLowering) {
  std::vector<ir::OpKind> missing;
  for (std::size_t k = 0; k < ir::kOpKindCount; ++k) {
    const auto kind = static_cast<ir::OpKind>(k);
    if (!lowering_table().entry(kind).fn) missing.push_back(kind);
  }
  EXPECT_THAT(names(missing), IsEmpty()) << "leaves without a lowering";
  EXPECT_THAT(names(lowering_table().duplicates()), IsEmpty())
      << "leaves registered more than once: the last registration replaced the row's lowering";
}

// The duplicate check above can fire: the table reports a leaf registered twice.
TEST(Coverage, ASecondRegistrationOfALeafIsReported) {
  LoweringTable table;
  const auto lower = [](OpContext&, const ir::UnaryOpIr&) -> Status { return ok(); };
  table.on<ir::OpKind::Float_Exp>(lower);
  EXPECT_THAT(table.duplicates(), IsEmpty());
  table.on<ir::OpKind::Float_Exp>(lower);
  EXPECT_THAT(table.duplicates(), ElementsAre(ir::OpKind::Float_Exp));
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
