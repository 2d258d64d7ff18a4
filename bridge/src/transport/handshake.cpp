#include "transport/handshake.hpp"

#include <fmt/format.h>

#include "torchbridge/ir/codec.hpp"
#include "transport/listener.hpp"

namespace tb::bridge {

HandshakeDecision decide_handshake(const ir::Bytes& bytes, const HandshakeFacts& facts) {
  // A refusal names the newest version served; the handshake's layout is the same in all.
  const ir::SessionRefusal incompatible{ir::RefusalKind::IncompatibleProtocol,
                                        ir::newest_profile().version};
  auto frame = ir::decode<ir::ClientFrame>(bytes);
  if (!frame) {
    return HandshakeRefused{incompatible, "unreadable handshake: " + frame.error().what()};
  }
  if (frame.value().size() != 1 || !std::holds_alternative<ir::SessionInit>(frame.value()[0])) {
    return HandshakeRefused{incompatible, "the first frame must hold exactly one Init"};
  }
  HandshakeAccepted accepted{std::get<ir::SessionInit>(std::move(frame.value()[0])), nullptr};
  const ir::SessionInit& init = accepted.init;
  accepted.profile = ir::find_profile(init.version);
  if (!accepted.profile) {
    return HandshakeRefused{
        incompatible, fmt::format("client speaks protocol {}, this host serves {}", init.version,
                                  ir::describe_served())};
  }
  const auto& token = *facts.auth_token;
  if (token && !facts.header_authorized &&
      !constant_time_equal(init.authorization.view(), *token)) {
    return HandshakeRefused{{ir::RefusalKind::Unauthorized, 0},
                            "the handshake's authorization does not match the host's token"};
  }
  if (init.device_index >= facts.device_count) {
    return HandshakeRefused{
        {ir::RefusalKind::NoSuchDevice, facts.device_count},
        fmt::format("device {} asked, {} hosted", init.device_index, facts.device_count)};
  }
  return accepted;
}

std::string transfer_scope(std::string_view peer_address, bool header_authorized,
                           std::string_view authorization) {
  return std::string(peer_address) + '|' +
         (header_authorized ? std::string("bearer") : std::string(authorization));
}

}  // namespace tb::bridge
