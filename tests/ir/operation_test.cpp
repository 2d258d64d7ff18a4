#include "torchbridge/ir/operation.hpp"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace tb::ir {
namespace {

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

#include "torchbridge/ir/visit.hpp"

namespace tb::ir {
namespace {

struct Collect : ConstOpVisitor {
  std::vector<std::pair<std::uint64_t, bool>> tensors;
  int scalars = 0;
  int ranges = 0;
  void tensor(const TensorIr& t, bool is_output) override {
    tensors.emplace_back(t.id.value, is_output);
  }
  void scalar(const ScalarIr&) override { ++scalars; }
  void range(const Slice&) override { ++ranges; }
};

TensorIr t(std::uint64_t id) {
  return TensorIr{TensorId{id}, Shape{{1}}, TensorStatus::ReadOnly, {}};
}

TEST(Visit, FindsTensorsInOptionalsVectorsAndNestedStructs) {
  DeformConv2dBackwardOpIr p;
  p.x = t(1), p.offset = t(2), p.weight = t(3), p.mask = t(4), p.out_grad = t(6);
  p.input_grad = t(7), p.offset_grad = t(8), p.weight_grad = t(9), p.mask_grad = t(10);
  Collect c;
  visit(make_op<OpKind::Module_DeformableConv2dBackward>(p), c);
  const std::vector<std::pair<std::uint64_t, bool>> expected = {{1, false}, {2, false}, {3, false},
                                                                {4, false}, {6, false}, {7, true},
                                                                {8, true},  {9, true},  {10, true}};
  EXPECT_EQ(c.tensors, expected);

  CustomOpIr custom{"m", {t(1), t(2)}, {t(3)}, {ScalarIr::f(1), ScalarIr::u(0)}};
  Collect cc;
  visit(make_op<OpKind::Custom_Op>(custom), cc);
  EXPECT_EQ(cc.tensors.size(), 3u);
  EXPECT_TRUE(cc.tensors[2].second);
  EXPECT_EQ(cc.scalars, 2);

  QuantizeOpIr q{t(1), QuantizationParametersIr{t(2), t(3)}, default_quant_scheme(), t(4)};
  Collect qc;
  visit(make_op<OpKind::Float_Quantize>(q, DTypeKind::F32), qc);
  EXPECT_EQ(qc.tensors.size(), 4u);

  SliceAssignOpIr s{t(1), {Slice{0, 2, 1}, Slice{1, std::nullopt, 1}}, t(2), t(3)};
  Collect sc;
  visit(make_op<OpKind::BaseFloat_SliceAssign>(s), sc);
  EXPECT_EQ(sc.ranges, 2);

  PadOpIr pad{t(1), t(2), {{1, 1}}, PadModeIr{PadModeKind::Constant, ScalarIr::f(0)}};
  Collect pc;
  visit(make_op<OpKind::NumericFloat_Pad>(pad, DTypeKind::F32), pc);
  EXPECT_EQ(pc.scalars, 1);

  Collect dc;
  visit(make_op<OpKind::Drop_Op>(t(5)), dc);
  ASSERT_EQ(dc.tensors.size(), 1u);
  EXPECT_FALSE(dc.tensors[0].second);
}

// 0.23's attention: the backward reads the forward's `out` and `logsumexp`, writes three gradients
// (burn-ir 0.23.0-pre.1 visit_mut); the forward with logsumexp writes both.
TEST(Visit, AttentionBackwardReadsTheForwardsOutAndLogsumexp) {
  AttentionBackwardOpIr b{t(1), t(2), t(3), t(4), t(5), t(6), {}, t(7), t(8), t(9)};
  Collect c;
  visit(make_op<OpKind::Module_AttentionBackward>(b), c);
  const std::vector<std::pair<std::uint64_t, bool>> expected = {{1, false}, {2, false}, {3, false},
                                                                {4, false}, {5, false}, {6, false},
                                                                {7, true},  {8, true},  {9, true}};
  EXPECT_EQ(c.tensors, expected);
  AttentionWithLogsumexpOpIr f{t(1), t(2), t(3), {}, t(4), t(5)};
  Collect fc;
  visit(make_op<OpKind::Module_AttentionWithLogsumexp>(f), fc);
  const std::vector<std::pair<std::uint64_t, bool>> forward = {
      {1, false}, {2, false}, {3, false}, {4, true}, {5, true}};
  EXPECT_EQ(fc.tensors, forward);
}

}  // namespace
}  // namespace tb::ir

namespace tb::ir {
namespace {
static_assert(leaf_of(OpCategory::BaseInt, BaseOp::Reshape) == OpKind::BaseInt_Reshape);
static_assert(leaf_of(OpCategory::NumericInt, NumericOp::Pad) == OpKind::NumericInt_Pad);
static_assert(leaf_of(OpCategory::Activation, ActivationOp::Softmin) == OpKind::Activation_Softmin);
// Field names that look like outputs but are inputs (output_grad, out_grad, indices, bias...)
// and every output name once, through ops that carry them.
TEST(Visit, TellsOutputsFromLookAlikeInputs) {
  const auto flags = [](const OperationIr& op) {
    Collect c;
    visit(op, c);
    std::vector<bool> out;
    for (const auto& [id, is_output] : c.tensors) out.push_back(is_output);
    return out;
  };
  using V = std::vector<bool>;
  EXPECT_EQ(flags(make_op<OpKind::Module_Conv2dXBackward>(
                Conv2dXBackwardOpIr{t(1), t(2), t(3), Conv2dOptionsIr{}, t(4)})),
            (V{false, false, false, true}));  // x, weight, output_grad | out
  EXPECT_EQ(flags(make_op<OpKind::Module_EmbeddingBackward>(
                EmbeddingBackwardOpIr{t(1), t(2), t(3), t(4)})),
            (V{false, false, false, true}));  // weights, out_grad, indices | out
  MaxPool2dWithIndicesOpIr pool{};
  pool.x = t(1), pool.out = t(2), pool.out_indices = t(3);
  EXPECT_EQ(flags(make_op<OpKind::Module_MaxPool2dWithIndices>(pool)), (V{false, true, true}));
  DeformConv2dBackwardOpIr d;
  d.mask = t(4), d.bias = t(5), d.mask_grad = t(10), d.bias_grad = t(11);
  // x, offset, weight, mask, bias, out_grad | input, offset, weight, mask, bias grads
  EXPECT_EQ(flags(make_op<OpKind::Module_DeformableConv2dBackward>(d)),
            (V{false, false, false, false, false, false, true, true, true, true, true}));
  EXPECT_EQ(flags(make_op<OpKind::Custom_Op>(CustomOpIr{"m", {t(1)}, {t(2), t(3)}, {}})),
            (V{false, true, true}));  // inputs | outputs
}

}  // namespace
}  // namespace tb::ir
