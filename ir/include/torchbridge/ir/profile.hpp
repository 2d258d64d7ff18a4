// The Burn wire versions a host serves, one row per burn-remote PROTOCOL_VERSION. A session's
// profile is picked from its Init's version at the handshake (bridge/src/transport/ws_session.cpp) and kept
// for the session's life; what differs between versions hangs off its row, everything else is
// shared. Logs, /metrics and `torchbridge --version` name sessions and the host by these rows.
//
// What a row decides, and where the rest of a version lives:
// - framing: how the messages after the handshake travel (the handshake is bare in every version);
// - quantized data: whether only the canonical layout may be sent (0.23's TensorData checks it),
//   and how values round to codes (the reference backend's rule changed in 0.23);
// - the message set and the leaf set: the Wire columns of TB_TASKS (protocol.hpp) and of the op
//   tables (*.def), read through task_on_wire / op_on_wire with the row's version;
// - payload layouts: FieldLayouts (fields.hpp), told apart by length when decoding and chosen by
//   Writer::set_protocol when encoding.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "torchbridge/ir/protocol.hpp"
#include "torchbridge/version.hpp"

namespace tb::ir {

// How the messages after the handshake travel on `/session`.
enum class Framing : std::uint8_t {
  // One websocket message per message, up to the host's --max-message-bytes (0.22.1).
  kBare,
  // burn-remote 0.23 transport/message.rs: a tag byte; 0x00 + a whole message of at most 64 KiB,
  // or 0x01 + its u64 LE length and then its bytes in websocket messages of at most 1 MiB.
  kTagged,
};

struct ProtocolProfile {
  std::uint16_t version;  // burn-remote PROTOCOL_VERSION, as an Init carries it
  std::string_view burn;  // the Burn release whose crates the interop suite pins for it
  Framing framing;
  // The client rejects quantized data in any layout but burn-std's canonical one (and a rejected
  // read hangs it), so the host must never send another (docs/quantization.md).
  bool canonical_quantized_only;
  // Burn's reference backend quantizes x / scale rounded half to even (burn-flex 0.23), not
  // x * (1 / scale) rounded half away from zero (0.22.1).
  bool quantize_ties_to_even;
};

// Oldest first.
inline constexpr std::array<ProtocolProfile, 2> kProfiles{{
    {kProtocolVersion, kBurnVersion, Framing::kBare, false, false},
    {6, "0.23.0-pre.1", Framing::kTagged, true, true},
}};

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
