// The federation's store protocol (issue 39, findings 9 and 10): what members and rank 0's store
// say to each other, without the sockets, so it can be fuzzed and tested alone.
//
// c10d's TCPStore has no authentication: anyone who reached its port could read the rendezvous,
// write records and hold the server's memory with a declared size. This store's connections start
// with a mutual proof of the members' shared key, and every frame after it is authenticated:
//   server -> client  magic (8) | server nonce (32)
//   client -> server  magic (8) | client nonce (32) | HMAC(key, "client" | sn | cn)
//   server -> client  HMAC(key, "server" | sn | cn)
//   then frames       length (u32 LE) | payload | MAC (16): HMAC(direction key, seq | length |
//                     payload), truncated; each direction's key is derived from both nonces, and
//                     the sequence number makes a replayed or reordered frame fail.
// The key is derived from the host's token. Without one every member derives the same public key:
// the store then admits whoever reaches it, which is why it must listen on loopback alone
// (join_federation refuses otherwise).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "torchbridge/result.hpp"

namespace tb::bridge::store {

inline constexpr std::string_view kMagic = "TBSTORE1";
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kProofBytes = 32;
inline constexpr std::size_t kMacBytes = 16;
inline constexpr std::size_t kHelloBytes = kMagic.size() + kNonceBytes;
inline constexpr std::size_t kAnswerBytes = kMagic.size() + kNonceBytes + kProofBytes;

// What one request may carry: the federation stores member records, ranks and Gloo's rendezvous
// addresses, all far below these.
inline constexpr std::size_t kMaxKeyBytes = 4096;
inline constexpr std::size_t kMaxValueBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxKeysPerRequest = 1024;
inline constexpr std::size_t kMaxPayloadBytes = 2 * kMaxValueBytes + 64 * 1024;

using Key = std::array<std::uint8_t, 32>;
using Nonce = std::array<std::uint8_t, kNonceBytes>;
using Bytes = std::vector<std::uint8_t>;

enum class Op : std::uint8_t {
  kSet = 1,
  kGet = 2,
  kAdd = 3,
  kCheck = 4,
  kWait = 5,
  kDelete = 6,
  kNumKeys = 7,
  kCompareSet = 8,
};

// Every request has the same fields; an op reads the ones it needs and the rest must be empty.
struct Request {
  Op op = Op::kGet;
  std::uint32_t timeout_ms = 0;  // kWait
  std::int64_t amount = 0;       // kAdd
  std::vector<std::string> keys;
  Bytes value;     // kSet; kCompareSet's new value
  Bytes expected;  // kCompareSet
};

enum class Outcome : std::uint8_t {
  kOk = 0,
  kMissing = 1,  // kGet of a key that is not there
  kTimeout = 2,  // kWait
  kError = 3,    // refused: `bytes` holds the reason
};

struct Response {
  Outcome outcome = Outcome::kOk;
  std::int64_t number = 0;  // kAdd's total, kCheck's and kDelete's 0/1, kNumKeys
  Bytes bytes;              // kGet's and kCompareSet's value, or the reason
};

Bytes encode(const Request& request);
Bytes encode(const Response& response);
// Strict: a field an op does not use must be empty, lengths within the limits, nothing after.
Result<Request> decode_request(std::string_view payload);
Result<Response> decode_response(std::string_view payload);

// The store key all members derive (from the token, or a public one without a token).
Key store_key(const std::optional<std::string>& token);
Nonce random_nonce();
// HMAC(key, label | server nonce | client nonce).
Key derive(const Key& key, std::string_view label, const Nonce& server, const Nonce& client);
bool same(const Key& a, const std::uint8_t* b);  // constant time

// One direction of an authenticated connection: seals outgoing frames, opens incoming ones.
class FrameKey {
 public:
  explicit FrameKey(const Key& key) : key_(key) {}
  // length | payload | MAC
  Bytes seal(const Bytes& payload);
  // The payload, when `mac` is the MAC of this direction's next frame; else an error.
  Result<std::string_view> open(std::string_view payload, const std::uint8_t* mac);

 private:
  std::array<std::uint8_t, kMacBytes> mac_of(std::string_view payload) const;
  Key key_;
  std::uint64_t sequence_ = 0;
};

// The length a frame header declares (little-endian).
std::uint32_t frame_length(const std::uint8_t* header);

}  // namespace tb::bridge::store
