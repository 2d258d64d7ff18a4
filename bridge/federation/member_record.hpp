// What a member publishes in the federation's store: its address and devices, signed with the
// host token (HMAC-SHA256), so a member only takes records from members that hold the token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "torchbridge/bridge/federation.hpp"
#include "torchbridge/result.hpp"

namespace tb::bridge {

// The text stored under the member's key; `token` (if any) signs it. kInvalidArgument for a member
// no record can hold as it is (an address or device name with a line break, which would read back
// as other lines; no devices, or a device count that is not its names'), rather than a record of
// another member.
Result<std::string> encode_member_record(const FederationMember& member, std::uint32_t world_size,
                                         const std::optional<std::string>& token);

// The member a record describes (first_device is left 0). Fails on a record that is malformed,
// unsigned or signed with another token, or made for another world size or rank.
Result<FederationMember> decode_member_record(const std::string& text, std::uint32_t rank,
                                              std::uint32_t world_size,
                                              const std::optional<std::string>& token);

// A rank as a member stores it (std::to_string): decimal digits only, with no sign, space, leading
// zero or anything after them, below `world_size`. What else the store holds names no member.
Result<std::uint32_t> parse_rank(std::string_view text, std::uint32_t world_size);

}  // namespace tb::bridge
