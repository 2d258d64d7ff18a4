// The served wire versions (ir/profile.hpp): one row per burn-remote PROTOCOL_VERSION.
#include "torchbridge/ir/profile.hpp"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace tb::ir {
namespace {

TEST(ProtocolProfiles, Burn0221IsProtocol2) {
  const ProtocolProfile* p = find_profile(2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->burn, kBurnVersion);
  EXPECT_EQ(describe(*p), "Burn " + std::string(kBurnVersion) + " (protocol 2)");
}

TEST(ProtocolProfiles, Burn023IsProtocol6WithTaggedFraming) {
  const ProtocolProfile* p = find_profile(6);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->burn, "0.23.0-pre.1");
  EXPECT_EQ(p->framing, Framing::kTagged);
  EXPECT_TRUE(p->canonical_quantized_only);
  EXPECT_EQ(find_profile(2)->framing, Framing::kBare);
  EXPECT_EQ(describe_served(), "Burn 0.22.1 (protocol 2), Burn 0.23.0-pre.1 (protocol 6)");
}

TEST(ProtocolProfiles, OtherVersionsAreNotServed) {
  for (std::uint16_t v : {0, 1, 3, 4, 5, 7, 65535}) EXPECT_EQ(find_profile(v), nullptr) << v;
}

// The leaf and message sets of each version come from the tables' Wire columns.
TEST(ProtocolProfiles, EachVersionHasItsOwnLeavesAndTasks) {
  // The counts per version: Golden.EachVersionHasTheCratesLeafCount, against Burn's own crate.
  EXPECT_TRUE(op_on_wire(OpKind::Distributed_AllReduce, 2));
  EXPECT_FALSE(op_on_wire(OpKind::Distributed_AllReduce, 6));
  EXPECT_FALSE(op_on_wire(OpKind::Float_Fmod, 2));
  EXPECT_TRUE(op_on_wire(OpKind::Float_Fmod, 6));
  EXPECT_TRUE(task_on_wire(Task{ReadTensorTask{}}, 2));
  EXPECT_FALSE(task_on_wire(Task{ReadTensorTask{}}, 6));
  EXPECT_FALSE(task_on_wire(Task{ReadTensorsTask{}}, 2));
  EXPECT_TRUE(task_on_wire(Task{ReadTensorsTask{}}, 6));
  EXPECT_TRUE(task_on_wire(Task{AllReduceLocalTask{}}, 6));
  EXPECT_TRUE(task_on_wire(Task{SeedTask{}}, 2));
  EXPECT_TRUE(task_on_wire(Task{SeedTask{}}, 6));
}

TEST(ProtocolProfiles, RowsAreUniqueOldestFirstAndNamedInTheServedList) {
  std::set<std::uint16_t> versions;
  std::uint16_t previous = 0;
  for (const auto& p : kProfiles) {
    EXPECT_TRUE(versions.insert(p.version).second) << p.version;
    EXPECT_GT(p.version, previous);
    previous = p.version;
    EXPECT_NE(describe_served().find(describe(p)), std::string::npos);
    EXPECT_EQ(find_profile(p.version), &p);
  }
  EXPECT_EQ(&newest_profile(), &kProfiles.back());
}

}  // namespace
}  // namespace tb::ir
