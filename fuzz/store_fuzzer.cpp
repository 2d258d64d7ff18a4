// libFuzzer target for what the federation reads from its c10d store (member_record.hpp): member
// records, as stored and as a member holding the token signs them, and ranks. Checks that a record
// that decodes is the canonical record of the member it gives (its re-encoding is the same text),
// that a member's record is written exactly when it can be (no line break in its address or
// names, as many names as devices) and then decodes to that member, and that a rank parses exactly
// when it is one's decimal. And the store's own protocol (store_protocol.hpp): a request or answer
// that decodes is the one encoding of what it decodes to, and a frame opens exactly when its
// peer sealed it, in order.
#include <fuzzer/FuzzedDataProvider.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "canonical.hpp"
#include "member_record.hpp"
#include "store_protocol.hpp"

namespace {

using tb::bridge::FederationMember;
using tb::fuzz::require;

const std::optional<std::string> kToken = std::string("s3cret");

// The signature a member holding `token` appends (HMAC-SHA256 of the body, lowercase hex).
std::string signed_record(const std::string& body, const std::string& token) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = body + "mac ";
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 15];
  }
  return out + "\n";
}

bool same_member(const FederationMember& a, const FederationMember& b) {
  return a.rank == b.rank && a.address == b.address && a.first_device == b.first_device &&
         a.device_count == b.device_count && a.device_names == b.device_names;
}

// A record that decodes gives a member it is the canonical record of.
void decode_record(const std::string& text, std::uint32_t rank, std::uint32_t world,
                   const std::optional<std::string>& token) {
  auto member = tb::bridge::decode_member_record(text, rank, world, token);
  if (!member) return;
  const FederationMember& m = member.value();
  require(m.rank == rank && m.first_device == 0, "a record decoded to another rank");
  require(m.device_count >= 1 && m.device_count <= 4096 && m.device_names.size() == m.device_count,
          "a record decoded to a malformed device list");
  auto again = tb::bridge::encode_member_record(m, world, token);
  require(again && again.value() == text,
          "a record that decodes is not its member's record (a second spelling of one member)");
}

// A member's record decodes to that member, or to nothing.
void round_trip(FuzzedDataProvider& in, const std::optional<std::string>& token) {
  FederationMember m;
  m.rank = in.ConsumeIntegralInRange<std::uint32_t>(0, 15);
  const std::uint32_t world = m.rank + 1 + in.ConsumeIntegralInRange<std::uint32_t>(0, 3);
  m.address = in.ConsumeRandomLengthString(64);
  const std::size_t names = in.ConsumeIntegralInRange<std::size_t>(0, 5);
  for (std::size_t i = 0; i < names; ++i)
    m.device_names.push_back(in.ConsumeRandomLengthString(16));
  m.device_count = in.ConsumeBool() ? static_cast<std::uint32_t>(names)
                                    : in.ConsumeIntegralInRange<std::uint32_t>(0, 6);
  bool writable =
      m.address.find('\n') == std::string::npos && m.device_count >= 1 && m.device_count == names;
  for (const auto& n : m.device_names) writable = writable && n.find('\n') == std::string::npos;
  auto text = tb::bridge::encode_member_record(m, world, token);
  require(text.has_value() == writable, "a member written that cannot be, or not that can be");
  if (!text) return;
  auto back = tb::bridge::decode_member_record(text.value(), m.rank, world, token);
  require(back && same_member(back.value(), m), "a member's record decodes to another member");
}

void check_rank(const std::string& text, std::uint32_t world) {
  auto rank = tb::bridge::parse_rank(text, world);
  if (!rank) return;
  require(rank.value() < world && std::to_string(rank.value()) == text,
          "a rank parsed from what is not its decimal");
}

// A message that decodes is its canonical encoding (no second spelling for the server to read).
void decode_message(const std::string& text) {
  namespace st = tb::bridge::store;
  if (auto r = st::decode_request(text)) {
    const auto again = st::encode(r.value());
    require(std::string(again.begin(), again.end()) == text, "a request with a second spelling");
  }
  if (auto r = st::decode_response(text)) {
    const auto again = st::encode(r.value());
    require(std::string(again.begin(), again.end()) == text, "an answer with a second spelling");
  }
}

// A frame the peer sealed opens, once and in order; bytes nobody sealed do not.
void open_frames(const std::string& text) {
  namespace st = tb::bridge::store;
  const st::Key key = st::store_key(kToken);
  st::FrameKey sender(key), receiver(key), stranger(key);
  const st::Bytes payload(text.begin(), text.end());
  const st::Bytes frame = sender.seal(payload);
  require(st::frame_length(frame.data()) == payload.size(), "a frame declares another length");
  const std::string_view body(reinterpret_cast<const char*>(frame.data()) + 4, payload.size());
  const auto opened = receiver.open(body, frame.data() + 4 + payload.size());
  require(opened && opened.value() == text, "a sealed frame does not open to its payload");
  require(!receiver.open(body, frame.data() + 4 + payload.size()), "a replayed frame opened");
  if (text.size() >= st::kMacBytes) {  // the input as a frame: payload, then 16 bytes of MAC
    const std::string_view forged(text.data(), text.size() - st::kMacBytes);
    const auto* mac = reinterpret_cast<const std::uint8_t*>(text.data()) + forged.size();
    st::FrameKey sealer(key);
    const st::Bytes real = sealer.seal(st::Bytes(forged.begin(), forged.end()));
    const bool genuine = std::equal(mac, mac + st::kMacBytes, real.end() - st::kMacBytes);
    require(static_cast<bool>(stranger.open(forged, mac)) == genuine,
            "a frame nobody sealed opened, or a sealed one did not");
  }
}

}  // namespace

// Input: a mode byte, a rank byte (% 10), a byte giving the world size (rank + 1 + byte % 3), then
// the entry, the body, (mode 3) what the member is made of, or (modes 4 and 5) a store message.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::uint32_t rank = data[1] % 10;
  const std::uint32_t world = rank + 1 + data[2] % 3;
  const std::string rest(reinterpret_cast<const char*>(data) + 3, size - 3);
  switch (data[0] % 6) {
    case 0:  // a store entry as it is, unsigned and under a token
      decode_record(rest, rank, world, std::nullopt);
      decode_record(rest, rank, world, kToken);
      check_rank(rest, world);
      check_rank(rest, UINT32_MAX);
      break;
    case 1:  // a body a member holding the token signed
      decode_record(signed_record(rest, *kToken), rank, world, kToken);
      break;
    case 2:  // an unsigned body
      decode_record(rest + "mac -\n", rank, world, std::nullopt);
      break;
    case 4:  // a request or an answer of the store's protocol
      decode_message(rest);
      break;
    case 5:  // a frame's payload
      open_frames(rest);
      break;
    default: {
      FuzzedDataProvider in(data + 3, size - 3);
      round_trip(in, data[0] & 4 ? kToken : std::nullopt);
      break;
    }
  }
  return 0;
}
