// The Burn wire versions a host serves, one row per burn-remote PROTOCOL_VERSION. A session's
// profile is picked from its Init's version at the handshake (bridge/src/ws_session.cpp) and kept
// for the session's life; what differs between versions hangs off its row, everything else is
// shared. Logs, /metrics and `torchbridge --version` name sessions and the host by these rows.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "torchbridge/ir/protocol.hpp"
#include "torchbridge/version.hpp"

namespace tb::ir {

struct ProtocolProfile {
  std::uint16_t version;  // burn-remote PROTOCOL_VERSION, as an Init carries it
  std::string_view burn;  // the Burn release whose crates the interop suite pins for it
};

// Oldest first.
inline constexpr std::array<ProtocolProfile, 1> kProfiles{{{kProtocolVersion, kBurnVersion}}};

// The profile of `version`, or nullptr where this host does not serve it.
constexpr const ProtocolProfile* find_profile(std::uint16_t version) {
  for (const auto& p : kProfiles)
    if (p.version == version) return &p;
  return nullptr;
}

// The version a refusal names to a client this host does not serve: the newest it does.
constexpr const ProtocolProfile& newest_profile() {
  return kProfiles.back();
}

// "Burn 0.22.1 (protocol 2)".
inline std::string describe(const ProtocolProfile& p) {
  return "Burn " + std::string(p.burn) + " (protocol " + std::to_string(p.version) + ")";
}

// Every served profile, oldest first: "Burn 0.22.1 (protocol 2)[, ...]".
inline std::string describe_served() {
  std::string out;
  for (const auto& p : kProfiles) out += (out.empty() ? "" : ", ") + describe(p);
  return out;
}

}  // namespace tb::ir
