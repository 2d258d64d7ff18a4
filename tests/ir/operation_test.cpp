#include "torchbridge/ir/operation.hpp"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace tb::ir {
namespace {

// Leaf counts read off burn-ir 0.22.1 src/operation.rs: BaseOperationIr 30, NumericOperationIr 56,
// FloatOperationIr 35, IntOperationIr 13, BoolOperationIr 6, ModuleOperationIr 53,
// ActivationOperationIr 14, DistributedOperationIr 2, plus Init, Custom, Drop.
TEST(OperationTables, LeafCountsMatchTheCrate) {
  EXPECT_EQ(kind_count(OpCategory::BaseFloat), 30u);
  EXPECT_EQ(kind_count(OpCategory::BaseInt), 30u);
  EXPECT_EQ(kind_count(OpCategory::BaseBool), 30u);
  EXPECT_EQ(kind_count(OpCategory::NumericFloat), 56u);
  EXPECT_EQ(kind_count(OpCategory::NumericInt), 56u);
  EXPECT_EQ(kind_count(OpCategory::Float), 35u);
  EXPECT_EQ(kind_count(OpCategory::Int), 13u);
  EXPECT_EQ(kind_count(OpCategory::Bool), 6u);
  EXPECT_EQ(kind_count(OpCategory::Module), 53u);
  EXPECT_EQ(kind_count(OpCategory::Activation), 14u);
  EXPECT_EQ(kind_count(OpCategory::Distributed), 2u);
  EXPECT_EQ(kind_count(OpCategory::Init), 1u);
  EXPECT_EQ(kind_count(OpCategory::Custom), 1u);
  EXPECT_EQ(kind_count(OpCategory::Drop), 1u);
  EXPECT_EQ(kOpKindCount, 328u);
}

TEST(OperationTables, NamesAreUniqueAndConsistent) {
  std::set<std::string> names;
  for (std::size_t k = 0; k < kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const OpInfo& info = op_info(kind);
    EXPECT_TRUE(names.insert(std::string(info.name)).second) << info.name;
    EXPECT_EQ(first_kind(info.category), static_cast<OpKind>(k - info.variant));
  }
  EXPECT_EQ(op_name(OpKind::NumericFloat_Add), "NumericFloat.Add");
  EXPECT_EQ(op_info(OpKind::NumericFloat_Add).variant_name, "Add");
  EXPECT_EQ(op_name(OpKind::Init_Op), "Init");
  EXPECT_EQ(op_name(OpKind::Drop_Op), "Drop");
  EXPECT_EQ(op_name(OpKind::Module_ConvTranspose3dBiasBackward),
            "Module.ConvTranspose3dBiasBackward");
  EXPECT_EQ(op_category(OpKind::BaseBool_Reshape), OpCategory::BaseBool);
}

TEST(OperationTables, PayloadTypesFollowTheTables) {
  static_assert(std::is_same_v<PayloadOfT<OpKind::Float_Exp>, UnaryOpIr>);
  static_assert(std::is_same_v<PayloadOfT<OpKind::Module_DeformableConv2d>, DeformConv2dOpIr>);
  static_assert(std::is_same_v<PayloadOfT<OpKind::Drop_Op>, TensorIr>);
  auto op = make_op<OpKind::Float_Exp>(UnaryOpIr{}, DTypeKind::F16);
  EXPECT_EQ(op.category(), OpCategory::Float);
  EXPECT_TRUE(std::holds_alternative<UnaryOpIr>(op.payload));
  EXPECT_EQ(op_info(op.kind).payload_index, op.payload.index());
}

}  // namespace
}  // namespace tb::ir
