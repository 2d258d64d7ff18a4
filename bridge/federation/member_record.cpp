#include "member_record.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "torchbridge/decimal.hpp"

namespace tb::bridge {

namespace {

constexpr const char* kMagic = "torchbridge-federation 1";
// A record holds a few hundred bytes; this bounds what a hostile store entry can make us parse.
constexpr std::size_t kMaxRecordBytes = 1 << 20;
constexpr std::uint32_t kMaxDevices = 4096;

std::string signature(const std::string& body, const std::optional<std::string>& token) {
  if (!token) return "-";
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), token->data(), static_cast<int>(token->size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", mac[i]);
  return hex;
}

// Printable ASCII, at most 32 characters: what an error may quote of a store entry.
std::string quoted(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 32)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out + (text.size() > 32 ? "..." : "");
}

// The number `text` is the decimal of, as std::to_string writes it (digits, no sign, space or
// leading zero), where it is below `limit`.
std::optional<std::uint64_t> decimal_below(std::string_view text, std::uint64_t limit) {
  if (limit == 0 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  return parse_decimal(text, limit - 1);
}

}  // namespace

Result<std::uint32_t> parse_rank(std::string_view text, std::uint32_t world_size) {
  const auto rank = decimal_below(text, world_size);
  if (!rank) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the store names rank \"{}\", not one of this federation's {} ranks",
                      quoted(text), world_size);
  }
  return static_cast<std::uint32_t>(*rank);
}

Result<std::string> encode_member_record(const FederationMember& member, std::uint32_t world_size,
                                         const std::optional<std::string>& token) {
  const auto one_line = [](const std::string& s) { return s.find('\n') == std::string::npos; };
  if (!one_line(member.address) ||
      !std::all_of(member.device_names.begin(), member.device_names.end(), one_line)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "member {}'s address or a device name holds a line break", member.rank);
  }
  if (member.device_count == 0 || member.device_count > kMaxDevices ||
      member.device_names.size() != member.device_count) {
    return make_error(ErrorCode::kInvalidArgument, "member {} has {} devices and {} device names",
                      member.rank, member.device_count, member.device_names.size());
  }
  std::string body = fmt::format("{}\nrank {}\nworld {}\naddress {}\ndevices {}\n", kMagic,
                                 member.rank, world_size, member.address, member.device_count);
  for (const auto& name : member.device_names) body += "device " + name + "\n";
  return body + "mac " + signature(body, token) + "\n";
}

Result<FederationMember> decode_member_record(const std::string& text, std::uint32_t rank,
                                              std::uint32_t world_size,
                                              const std::optional<std::string>& token) {
  const auto bad = [&](std::string_view why) {
    return make_error(ErrorCode::kInvalidArgument, "the record of member {} {}", rank, why);
  };
  if (text.size() > kMaxRecordBytes) return bad("is too long");
  // The signature is the last line, alone on it: the body before it is whole lines.
  const auto mac_at = text.rfind("\nmac ");
  if (mac_at == std::string::npos || text.back() != '\n') return bad("is not a member record");
  const std::string body = text.substr(0, mac_at + 1);
  const std::string mac = text.substr(mac_at + 5, text.size() - mac_at - 6);
  const std::string expected = signature(body, token);
  if (mac.size() != expected.size() ||
      CRYPTO_memcmp(mac.data(), expected.data(), mac.size()) != 0) {
    return bad(token ? "is not signed with this host's token (--auth-token-file must be the same "
                       "on every member)"
                     : "is signed, and this member has no token (--auth-token-file must be the "
                       "same on every member)");
  }
  std::istringstream in(body);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  const auto value = [&](std::size_t i, std::string_view key) -> std::optional<std::string> {
    if (i >= lines.size() || lines[i].rfind(std::string(key) + " ", 0) != 0) return std::nullopt;
    return lines[i].substr(key.size() + 1);
  };
  if (lines.empty() || lines[0] != kMagic) return bad("is from another torchbridge version");
  const auto r = value(1, "rank"), w = value(2, "world"), address = value(3, "address"),
             n = value(4, "devices");
  if (!r || !w || !address || !n) return bad("is malformed");
  if (*r != std::to_string(rank)) return bad(fmt::format("names rank {}", *r));
  if (*w != std::to_string(world_size)) {
    return bad(fmt::format("was made for a federation of {} members, and this one has {}", *w,
                           world_size));
  }
  FederationMember member;
  member.rank = rank;
  member.address = *address;
  const auto devices = decimal_below(*n, kMaxDevices + 1);
  if (!devices) return bad("has a malformed device count");
  const std::uint64_t count = *devices;
  if (count == 0 || lines.size() != 5 + count) {
    return bad("has a malformed device list");
  }
  member.device_count = static_cast<std::uint32_t>(count);
  for (std::size_t i = 0; i < count; ++i) {
    auto name = value(5 + i, "device");
    if (!name) return bad("has a malformed device list");
    member.device_names.push_back(*name);
  }
  return member;
}

}  // namespace tb::bridge
