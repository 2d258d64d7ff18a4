// The served wire versions (ir/profile.hpp): one row per burn-remote PROTOCOL_VERSION.
#include "torchbridge/ir/profile.hpp"

#include <set>

#include <gtest/gtest.h>

namespace tb::ir {
namespace {

TEST(ProtocolProfiles, Burn0221IsProtocol2) {
  const ProtocolProfile* p = find_profile(2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->burn, kBurnVersion);
  EXPECT_EQ(describe(*p), "Burn " + std::string(kBurnVersion) + " (protocol 2)");
}

TEST(ProtocolProfiles, OtherVersionsAreNotServed) {
  for (std::uint16_t v : {0, 1, 3, 5, 6, 65535}) {
    if (v == kProtocolVersion) continue;
    EXPECT_EQ(find_profile(v), nullptr) << v;
  }
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
