// Host metrics: every executed op is counted under its IR leaf (what `serve --op-counts-file`
// writes) and under its OperationIr category.
#include <algorithm>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/bridge_test_util.hpp"
#include "bridge/host_raw_client.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/version.hpp"

namespace tb::test {
namespace {

std::uint64_t count_of(const std::vector<std::pair<std::string, std::uint64_t>>& counts,
                       const std::string& name) {
  auto it = std::find_if(counts.begin(), counts.end(),
                         [&](const auto& entry) { return entry.first == name; });
  EXPECT_NE(it, counts.end()) << name << " is not listed";
  return it == counts.end() ? 0 : it->second;
}

TEST(HostMetrics, CountsEveryExecutedOpByLeafAndCategory) {
  TestHost host{1};
  Session session{host.port(), 0};
  const Dims shape = {2};
  session.send({register_tensor(1, make_data(shape, DTypeKind::F32, {1, 2})),
                register_tensor(2, make_data(shape, DTypeKind::F32, {3, 4}))});
  session.send({register_op(make_op<OpKind::NumericFloat_Add>(
                    BinaryOpIr{tir(1, shape), tir(2, shape), out(3, shape)}, DTypeKind::F32)),
                register_op(make_op<OpKind::NumericFloat_Add>(
                    BinaryOpIr{tir(3, shape), tir(2, shape), out(4, shape)}, DTypeKind::F32)),
                register_op(make_op<OpKind::Float_Exp>(UnaryOpIr{tir(4, shape), out(5, shape)},
                                                       DTypeKind::F32))});
  auto synced = session.sync();
  ASSERT_TRUE(std::holds_alternative<std::monostate>(synced));

  const auto m = host.host().metrics();
  ASSERT_EQ(m.ops_by_kind.size(), kOpKindCount);
  EXPECT_EQ(count_of(m.ops_by_kind, "NumericFloat.Add"), 2u);
  EXPECT_EQ(count_of(m.ops_by_kind, "Float.Exp"), 1u);
  EXPECT_EQ(count_of(m.ops_by_kind, "NumericFloat.Sub"), 0u);
  EXPECT_EQ(count_of(m.ops_by_category, "NumericFloat"), 2u);
  EXPECT_EQ(count_of(m.ops_by_category, "Float"), 1u);
}

// Each session is counted under the wire version its Init named, in the struct and in /metrics.
TEST(HostMetrics, CountsOpenSessionsByProtocol) {
  TestHost host{1};
  const std::string served = "Burn " + std::string(kBurnVersion) + " (protocol 2)";
  EXPECT_EQ(count_of(host.host().metrics().sessions_by_protocol, served), 0u);
  {
    Session a{host.port(), 0};
    Session b{host.port(), 0};
    ASSERT_TRUE(std::holds_alternative<std::monostate>(a.sync()));
    ASSERT_TRUE(std::holds_alternative<std::monostate>(b.sync()));
    const auto m = host.host().metrics();
    ASSERT_EQ(m.sessions_by_protocol.size(), kProfiles.size());  // one row per version served
    EXPECT_EQ(count_of(m.sessions_by_protocol, served), 2u);
    EXPECT_EQ(count_of(m.sessions_by_protocol, "Burn 0.23.0-pre.1 (protocol 6)"), 0u);
    EXPECT_THAT(
        get_metrics_text(host.port()),
        ::testing::HasSubstr("torchbridge_sessions_open_by_protocol{protocol=\"2\",burn=\"" +
                             std::string(kBurnVersion) + "\"} 2\n"));
  }
  EXPECT_TRUE(eventually(
      [&] { return count_of(host.host().metrics().sessions_by_protocol, served) == 0; }));
}

}  // namespace
}  // namespace tb::test
