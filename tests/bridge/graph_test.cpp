#include "session/graph.hpp"

#include <gtest/gtest.h>

#include "torchbridge/ir/format.hpp"

namespace tb::bridge {
namespace {

using namespace tb::ir;

TensorIr rel(std::uint64_t id, Dims dims, TensorStatus status = TensorStatus::ReadOnly) {
  return TensorIr{TensorId{id}, Shape{std::move(dims)}, status, DTypeKind::F32};
}

// The relative graph Burn's fusion client would send for `exp(x)[slice] * s`: relative ids 0..2,
// dims as dim ids (0 is the pre-assigned 1), a scalar placeholder and a range placeholder.
std::vector<OperationIr> relative_graph() {
  return {
      make_op<OpKind::Float_Exp>(UnaryOpIr{rel(0, {1, 2}), rel(1, {1, 2}, TensorStatus::NotInit)},
                                 DTypeKind::F32),
      make_op<OpKind::BaseFloat_Slice>(SliceOpIr{rel(1, {1, 2}, TensorStatus::ReadWrite),
                                                 {Slice{0, std::nullopt, 1}},
                                                 rel(2, {1, 3}, TensorStatus::NotInit)}),
      make_op<OpKind::NumericFloat_MulScalar>(
          ScalarOpIr{rel(2, {1, 3}, TensorStatus::ReadWrite), ScalarIr::u(0),
                     rel(3, {1, 3}, TensorStatus::NotInit)},
          DTypeKind::F32),
      // A scalar the client leaves concrete (LayerNorm epsilon, attention scale): never replaced,
      // even though a UInt placeholder with the same number exists.
      make_op<OpKind::Module_LayerNorm>(LayerNormOpIr{rel(3, {1, 3}), rel(0, {1, 2}), std::nullopt,
                                                      ScalarIr::f(1e-5),
                                                      rel(4, {1, 3}, TensorStatus::NotInit)}),
  };
}

GraphBindings bindings(std::uint64_t input, std::uint64_t out3, std::uint64_t out4) {
  GraphBindings b;
  b.tensors = {
      {TensorId{0}, TensorId{input}}, {TensorId{3}, TensorId{out3}}, {TensorId{4}, TensorId{out4}}};
  b.shapes = {1, 8, 4};
  b.scalars = {ScalarIr::f(2.5)};
  b.ranges = {Slice{2, 6, 1}};
  return b;
}

TEST(GraphBinding, BindsIdsShapesScalarsAndRangesAsBurnDoes) {
  IntermediateIds ids;
  const auto bound = bind_graph(relative_graph(), bindings(100, 103, 104), ids);
  ASSERT_EQ(bound.size(), 4u);
  const auto& exp = bound[0].as<UnaryOpIr>();
  EXPECT_EQ(exp.input.id.value, 100u);
  EXPECT_EQ(exp.input.shape.dims, (Dims{8, 4}));
  EXPECT_NE(exp.out.id.value >> 63, 0u) << "intermediates get bit-63 ids";
  const auto& slice = bound[1].as<SliceOpIr>();
  EXPECT_EQ(slice.tensor.id, exp.out.id) << "an intermediate keeps one id within a replay";
  EXPECT_EQ(slice.tensor.status, TensorStatus::ReadWrite);
  EXPECT_EQ(slice.ranges[0], (Slice{2, 6, 1}));
  EXPECT_EQ(slice.out.shape.dims, (Dims{8, 3})) << "dim id 3 is out of range: kept as is";
  const auto& mul = bound[2].as<ScalarOpIr>();
  EXPECT_EQ(mul.rhs, ScalarIr::f(2.5));
  EXPECT_EQ(mul.out.id.value, 103u);
  const auto& norm = bound[3].as<LayerNormOpIr>();
  EXPECT_EQ(norm.epsilon, ScalarIr::f(1e-5)) << "concrete scalars are never substituted";
  EXPECT_EQ(norm.out.id.value, 104u);
}

TEST(GraphBinding, EveryReplayMintsFreshIntermediates) {
  IntermediateIds ids;
  const auto a = bind_graph(relative_graph(), bindings(1, 3, 4), ids);
  const auto b = bind_graph(relative_graph(), bindings(11, 13, 14), ids);
  EXPECT_NE(a[0].as<UnaryOpIr>().out.id, b[0].as<UnaryOpIr>().out.id);
  EXPECT_EQ(b[0].as<UnaryOpIr>().input.id.value, 11u);
}

// Ops of one kind are bound into one reused copy: a later, smaller op of that kind must carry
// nothing over from an earlier, larger one.
TEST(GraphBinding, AnOpOfAKindSeenBeforeCarriesNothingOfTheEarlierOne) {
  const std::vector<OperationIr> graph = {
      make_op<OpKind::BaseFloat_Slice>(SliceOpIr{rel(0, {0, 1, 0}),
                                                 {Slice{0, 1, 1}, Slice{1, 2, 1}, Slice{0, 1, 1}},
                                                 rel(1, {0, 0, 0}, TensorStatus::NotInit)}),
      make_op<OpKind::Float_Exp>(
          UnaryOpIr{rel(1, {1, 1, 1}), rel(2, {1, 1, 1}, TensorStatus::NotInit)}, DTypeKind::F32),
      make_op<OpKind::BaseFloat_Slice>(
          SliceOpIr{rel(3, {1}), {Slice{0, std::nullopt, 2}}, rel(4, {0}, TensorStatus::NotInit)}),
  };
  GraphBindings b;
  b.tensors = {{TensorId{0}, TensorId{50}}, {TensorId{3}, TensorId{53}}};
  b.shapes = {1, 7};
  IntermediateIds ids;
  std::vector<OperationIr> seen;
  for_each_bound_op(graph, b, ids, [&](const OperationIr& op) { seen.push_back(op); });
  ASSERT_EQ(seen.size(), 3u);
  const auto& first = seen[0].as<SliceOpIr>();
  EXPECT_EQ(first.tensor.shape.dims, (Dims{1, 7, 1}));
  EXPECT_EQ(first.ranges.size(), 3u);
  const auto& last = seen[2].as<SliceOpIr>();
  EXPECT_EQ(last.tensor.id.value, 53u);
  EXPECT_EQ(last.tensor.shape.dims, (Dims{7}));
  EXPECT_EQ(last.out.shape.dims, (Dims{1}));
  EXPECT_EQ(last.ranges, (std::vector<Slice>{Slice{0, std::nullopt, 2}}));
  EXPECT_EQ(seen[1].as<UnaryOpIr>().input.id, first.out.id);
}

TEST(GraphBinding, OutOfRangePlaceholdersStayAsTheyAre) {
  IntermediateIds ids;
  GraphBindings b;  // nothing bound
  const auto bound = bind_graph(relative_graph(), b, ids);
  EXPECT_EQ(bound[2].as<ScalarOpIr>().rhs, ScalarIr::u(0));
  EXPECT_EQ(bound[1].as<SliceOpIr>().ranges[0], (Slice{0, std::nullopt, 1}));
  EXPECT_EQ(bound[0].as<UnaryOpIr>().input.shape.dims, (Dims{1, 2}));
}

TEST(GraphCache, IsBoundedOldestFirst) {
  GraphCache cache(2);
  cache.put(1, relative_graph());
  cache.put(2, relative_graph());
  cache.put(1, relative_graph());  // replacing keeps its place
  cache.put(3, relative_graph());
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.find(1), nullptr);
  EXPECT_NE(cache.find(2), nullptr);
  EXPECT_NE(cache.find(3), nullptr);
}

}  // namespace
}  // namespace tb::bridge

namespace tb::bridge {
namespace {

using namespace tb::ir;

// The id table is reused from replay to replay (graph.cpp): nothing bound in one replay may leak
// into the next, and relative ids far beyond what Burn sends (a hostile client) bind as well.
TEST(GraphBinding, NothingLeaksFromOneReplayToTheNextAndHugeRelativeIdsBind) {
  IntermediateIds ids;
  GraphBindings bound_input;
  bound_input.tensors = {{TensorId{0}, TensorId{100}}};
  EXPECT_EQ(bind_graph(relative_graph(), bound_input, ids)[0].as<UnaryOpIr>().input.id.value, 100u);
  const auto next = bind_graph(relative_graph(), GraphBindings{}, ids);
  EXPECT_NE(next[0].as<UnaryOpIr>().input.id.value >> 63, 0u)
      << "relative #0 is unbound here: a fresh intermediate, not the last replay's #100";

  for (const std::uint64_t huge :
       {std::uint64_t{60000}, std::uint64_t{1} << 16, std::uint64_t{1} << 40, ~std::uint64_t{0}}) {
    const std::vector<OperationIr> graph = {
        make_op<OpKind::Float_Exp>(UnaryOpIr{rel(huge, {1}), rel(huge - 1, {1})}, DTypeKind::F32),
        make_op<OpKind::Float_Exp>(UnaryOpIr{rel(huge - 1, {1}), rel(huge, {1})}, DTypeKind::F32),
    };
    GraphBindings b;
    b.tensors = {{TensorId{huge}, TensorId{7}}};
    const auto out = bind_graph(graph, b, ids);
    EXPECT_EQ(out[0].as<UnaryOpIr>().input.id.value, 7u) << huge;
    EXPECT_EQ(out[1].as<UnaryOpIr>().out.id.value, 7u) << huge;
    EXPECT_EQ(out[0].as<UnaryOpIr>().out.id, out[1].as<UnaryOpIr>().input.id) << huge;
    EXPECT_NE(out[0].as<UnaryOpIr>().out.id.value >> 63, 0u) << huge;
  }
}

}  // namespace
}  // namespace tb::bridge
