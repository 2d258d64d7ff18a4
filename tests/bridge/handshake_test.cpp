// The handshake's decision (transport/handshake.hpp), without a socket: every way a first message
// is refused, and what an accepted one gives the connection.
#include "transport/handshake.hpp"

#include <gmock/gmock.h>

#include "torchbridge/ir/codec.hpp"

namespace tb::bridge {
namespace {

using ::testing::HasSubstr;

ir::Bytes init_bytes(std::uint16_t version, std::uint32_t device, std::string_view token = "") {
  const ir::ClientFrame frame{ir::SessionInit{version, ir::SessionId{7}, device,
                                              ir::Bytes::copy_of(token.data(), token.size())}};
  return ir::Bytes::from_vector(ir::encode(frame));
}

HandshakeFacts facts(const std::optional<std::string>& token, std::uint32_t devices = 2,
                     bool header_authorized = false) {
  return HandshakeFacts{&token, header_authorized, devices};
}

// A copy: the decision is usually a temporary.
HandshakeRefused refused(const HandshakeDecision& d) {
  const auto* r = std::get_if<HandshakeRefused>(&d);
  EXPECT_NE(r, nullptr) << "accepted";
  return r ? *r : HandshakeRefused{{ir::RefusalKind::Unauthorized, 12345}, "accepted"};
}

TEST(Handshake, EveryServedProtocolIsAcceptedWithItsProfile) {
  const std::optional<std::string> no_token;
  for (const auto& profile : ir::kProfiles) {
    const auto d = decide_handshake(init_bytes(profile.version, 1), facts(no_token));
    const auto* ok = std::get_if<HandshakeAccepted>(&d);
    ASSERT_NE(ok, nullptr) << "protocol " << profile.version;
    EXPECT_EQ(ok->profile, &profile);
    EXPECT_EQ(ok->init.device_index, 1u);
    EXPECT_EQ(ok->init.session_id.id, 7u);
  }
}

TEST(Handshake, AnotherProtocolIsRefusedNamingTheNewestServed) {
  const std::optional<std::string> no_token;
  const auto r = refused(decide_handshake(init_bytes(9999, 0), facts(no_token)));
  EXPECT_EQ(r.refusal.kind, ir::RefusalKind::IncompatibleProtocol);
  EXPECT_EQ(r.refusal.value, ir::newest_profile().version);
  EXPECT_THAT(r.reason, HasSubstr("client speaks protocol 9999"));
}

TEST(Handshake, UnreadableBytesAndFramesOtherThanOneInitAreRefused) {
  const std::optional<std::string> no_token;
  const std::vector<std::uint8_t> junk{0xc1, 0x00, 0xff};
  EXPECT_THAT(refused(decide_handshake(ir::Bytes::from_vector(junk), facts(no_token))).reason,
              HasSubstr("unreadable handshake"));
  const ir::ClientFrame two{
      ir::SessionInit{ir::kProtocolVersion, ir::SessionId{1}, 0, ir::Bytes()},
      ir::SessionInit{ir::kProtocolVersion, ir::SessionId{2}, 0, ir::Bytes()}};
  const auto& r =
      refused(decide_handshake(ir::Bytes::from_vector(ir::encode(two)), facts(no_token)));
  EXPECT_EQ(r.refusal.kind, ir::RefusalKind::IncompatibleProtocol);
  EXPECT_THAT(r.reason, HasSubstr("exactly one Init"));
}

TEST(Handshake, AWrongOrMissingTokenIsUnauthorizedUnlessTheUpgradeCarriedIt) {
  const std::optional<std::string> token = "s3cret";
  EXPECT_EQ(refused(decide_handshake(init_bytes(ir::kProtocolVersion, 0, "guess"), facts(token)))
                .refusal.kind,
            ir::RefusalKind::Unauthorized);
  EXPECT_EQ(
      refused(decide_handshake(init_bytes(ir::kProtocolVersion, 0), facts(token))).refusal.kind,
      ir::RefusalKind::Unauthorized);
  EXPECT_TRUE(std::holds_alternative<HandshakeAccepted>(
      decide_handshake(init_bytes(ir::kProtocolVersion, 0, "s3cret"), facts(token))));
  EXPECT_TRUE(std::holds_alternative<HandshakeAccepted>(
      decide_handshake(init_bytes(ir::kProtocolVersion, 0), facts(token, 2, true))));
}

TEST(Handshake, ADeviceOutOfRangeIsRefusedWithTheCount) {
  const std::optional<std::string> no_token;
  const auto& r =
      refused(decide_handshake(init_bytes(ir::kProtocolVersion, 2), facts(no_token, 2)));
  EXPECT_EQ(r.refusal.kind, ir::RefusalKind::NoSuchDevice);
  EXPECT_EQ(r.refusal.value, 2u);
}

TEST(Handshake, TheTransferScopeIsThePeerAndItsCredential) {
  EXPECT_EQ(transfer_scope("10.0.0.1", false, "tok"), "10.0.0.1|tok");
  EXPECT_EQ(transfer_scope("10.0.0.1", true, "ignored"), "10.0.0.1|bearer");
  EXPECT_NE(transfer_scope("10.0.0.1", false, "a"), transfer_scope("10.0.0.2", false, "a"));
}

}  // namespace
}  // namespace tb::bridge
