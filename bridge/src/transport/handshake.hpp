// The decision on a session's first message, apart from the socket it came on: whether the Init is
// readable, in a served protocol, authorized, and for a device this host (or its federation)
// serves. A pure function of the bytes and the host's facts, so every refusal is tested without a
// connection (tests/bridge/handshake_test.cpp); SessionConnection applies the decision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "torchbridge/ir/bytes.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/ir/protocol.hpp"

namespace tb::bridge {

// What the decision needs to know of the host and the connection.
struct HandshakeFacts {
  // The host's token (--auth-token-file), if any.
  const std::optional<std::string>* auth_token = nullptr;
  // The upgrade request carried the token already (an Authorization header).
  bool header_authorized = false;
  // Devices served: this host's, or the federation's.
  std::uint32_t device_count = 0;
};

struct HandshakeAccepted {
  ir::SessionInit init;
  const ir::ProtocolProfile* profile = nullptr;
};
struct HandshakeRefused {
  ir::SessionRefusal refusal;
  std::string reason;  // for the host's log
};
using HandshakeDecision = std::variant<HandshakeAccepted, HandshakeRefused>;

HandshakeDecision decide_handshake(const ir::Bytes& bytes, const HandshakeFacts& facts);

// The scope same-host transfers stay within: one peer presenting one credential.
std::string transfer_scope(std::string_view peer_address, bool header_authorized,
                           std::string_view authorization);

}  // namespace tb::bridge
