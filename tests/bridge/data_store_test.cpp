// Same-host transfers between federation members (issue 39, finding 3): their `/data` keys are
// HMACs under the members' secret, not hashes anyone can compute from the client's address and the
// transfer id, and a members-only exposure is served to members alone: a stranger's download gets
// an error and takes nothing, so the client's own transfer still finds its tensor.
#include <gtest/gtest.h>

#include "cluster/relay.hpp"
#include "cluster/transfers.hpp"
#include "transport/out_frame.hpp"

namespace tb::bridge {
namespace {

using namespace std::chrono_literals;

DataStore::Payload payload() {
  return OutFrame::encode(ir::DataMessage{ir::TensorRequestMessage{7}});
}

TEST(TransferKey, DependsOnTheMembersSecret) {
  const ir::LocalTransferId id = 42;
  EXPECT_EQ(transfer_key("secret", "scope", id), transfer_key("secret", "scope", id));
  EXPECT_NE(transfer_key("secret", "scope", id), transfer_key("another", "scope", id));
  EXPECT_NE(transfer_key("secret", "scope", id), transfer_key("secret", "scope", id + 1));
  EXPECT_NE(transfer_key("secret", "scope", id), transfer_key("secret", "other", id));
}

TEST(DataStore, AMembersOnlyExposureIsRefusedToAStrangerAndKeptForTheMember) {
  DataStore store;
  const auto expires = std::chrono::steady_clock::now() + 10s;
  ASSERT_TRUE(store.expose(1, 100, payload(), 1, {}, expires, /*members_only=*/true));
  std::optional<DataStore::Payload> stranger, member;
  store.when_exposed(1, /*member=*/false, [&](DataStore::Payload p) { stranger = std::move(p); });
  ASSERT_TRUE(stranger);
  ASSERT_FALSE(*stranger);
  EXPECT_NE(stranger->error().what().find("between federation members"), std::string::npos);
  store.when_exposed(1, /*member=*/true, [&](DataStore::Payload p) { member = std::move(p); });
  ASSERT_TRUE(member);
  EXPECT_TRUE(*member) << "the stranger's request took nothing";
}

TEST(DataStore, AStrangerWaitingForAMembersOnlyExposureIsRefusedWhenItComes) {
  DataStore store;
  std::optional<DataStore::Payload> stranger, member;
  store.when_exposed(2, false, [&](DataStore::Payload p) { stranger = std::move(p); });
  store.when_exposed(2, true, [&](DataStore::Payload p) { member = std::move(p); });
  EXPECT_FALSE(stranger);
  ASSERT_TRUE(store.expose(2, 100, payload(), 1, {}, std::chrono::steady_clock::now() + 10s,
                           /*members_only=*/true));
  ASSERT_TRUE(stranger && member);
  EXPECT_FALSE(*stranger);
  EXPECT_TRUE(*member);
}

TEST(DataStore, AnOrdinaryExposureServesAnyDownloader) {
  DataStore store;
  ASSERT_TRUE(store.expose(3, 100, payload(), 1, {}, std::chrono::steady_clock::now() + 10s));
  std::optional<DataStore::Payload> anyone;
  store.when_exposed(3, false, [&](DataStore::Payload p) { anyone = std::move(p); });
  ASSERT_TRUE(anyone);
  EXPECT_TRUE(*anyone);
}

}  // namespace
}  // namespace tb::bridge
