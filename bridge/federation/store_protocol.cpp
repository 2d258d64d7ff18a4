#include "store_protocol.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <stdexcept>

namespace tb::bridge::store {
namespace {

// Little-endian, as every number in the protocol.
template <typename T>
void put(Bytes& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void put_u32(Bytes& out, std::uint32_t v) {
  put(out, v);
}

void put_u64(Bytes& out, std::uint64_t v) {
  put(out, v);
}

void put_bytes(Bytes& out, std::string_view bytes) {
  put_u32(out, static_cast<std::uint32_t>(bytes.size()));
  out.insert(out.end(), bytes.begin(), bytes.end());
}

std::string_view view(const Bytes& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Reads the fields of a payload in order; every read is checked against what is left.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool u8(std::uint8_t& v) {
    if (in_.empty()) return false;
    v = static_cast<std::uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool u32(std::uint32_t& v) { return number(v); }
  bool u64(std::uint64_t& v) { return number(v); }
  bool bytes(std::string_view& v, std::size_t limit) {
    std::uint32_t n = 0;
    if (!u32(n) || n > limit || n > in_.size()) return false;
    v = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  template <typename T>
  bool number(T& v) {
    if (in_.size() < sizeof(T)) return false;
    v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      v |= static_cast<T>(static_cast<std::uint8_t>(in_[i])) << (8 * i);
    }
    in_.remove_prefix(sizeof(T));
    return true;
  }

  std::string_view in_;
};

Bytes to_bytes(std::string_view v) {
  return Bytes(v.begin(), v.end());
}

// The fields an op uses; a request that fills another is malformed (one spelling per request).
bool well_formed(const Request& r) {
  const std::size_t keys = r.keys.size();
  switch (r.op) {
    case Op::kSet:
      return keys == 1 && r.expected.empty() && r.amount == 0 && r.timeout_ms == 0;
    case Op::kGet:
    case Op::kDelete:
      return keys == 1 && r.value.empty() && r.expected.empty() && r.amount == 0 &&
             r.timeout_ms == 0;
    case Op::kAdd:
      return keys == 1 && r.value.empty() && r.expected.empty() && r.timeout_ms == 0;
    case Op::kCheck:
      return keys >= 1 && r.value.empty() && r.expected.empty() && r.amount == 0 &&
             r.timeout_ms == 0;
    case Op::kWait:
      return keys >= 1 && r.value.empty() && r.expected.empty() && r.amount == 0;
    case Op::kNumKeys:
      return keys == 0 && r.value.empty() && r.expected.empty() && r.amount == 0 &&
             r.timeout_ms == 0;
    case Op::kCompareSet:
      return keys == 1 && r.amount == 0 && r.timeout_ms == 0;
  }
  return false;
}

Error malformed(std::string_view what) {
  return make_error(ErrorCode::kDecode, "the federation's store: a malformed {}", what);
}

}  // namespace

Bytes encode(const Request& r) {
  Bytes out;
  out.push_back(static_cast<std::uint8_t>(r.op));
  put_u32(out, r.timeout_ms);
  put_u64(out, static_cast<std::uint64_t>(r.amount));
  put_u32(out, static_cast<std::uint32_t>(r.keys.size()));
  for (const auto& k : r.keys) put_bytes(out, k);
  put_bytes(out, view(r.value));
  put_bytes(out, view(r.expected));
  return out;
}

Bytes encode(const Response& r) {
  Bytes out;
  out.push_back(static_cast<std::uint8_t>(r.outcome));
  put_u64(out, static_cast<std::uint64_t>(r.number));
  put_bytes(out, view(r.bytes));
  return out;
}

Result<Request> decode_request(std::string_view payload) {
  Reader in(payload);
  Request r;
  std::uint8_t op = 0;
  std::uint64_t amount = 0;
  std::uint32_t keys = 0;
  if (!in.u8(op) || op < 1 || op > 8 || !in.u32(r.timeout_ms) || !in.u64(amount) || !in.u32(keys) ||
      keys > kMaxKeysPerRequest) {
    return malformed("request header");
  }
  r.op = static_cast<Op>(op);
  r.amount = static_cast<std::int64_t>(amount);
  r.keys.reserve(keys);
  for (std::uint32_t i = 0; i < keys; ++i) {
    std::string_view key;
    if (!in.bytes(key, kMaxKeyBytes)) return malformed("key");
    r.keys.emplace_back(key);
  }
  std::string_view value, expected;
  if (!in.bytes(value, kMaxValueBytes) || !in.bytes(expected, kMaxValueBytes) || !in.done()) {
    return malformed("value");
  }
  r.value = to_bytes(value);
  r.expected = to_bytes(expected);
  if (!well_formed(r)) return malformed("request (fields its op does not take)");
  return r;
}

Result<Response> decode_response(std::string_view payload) {
  Reader in(payload);
  Response r;
  std::uint8_t outcome = 0;
  std::uint64_t number = 0;
  std::string_view bytes;
  if (!in.u8(outcome) || outcome > 3 || !in.u64(number) || !in.bytes(bytes, kMaxValueBytes) ||
      !in.done()) {
    return malformed("response");
  }
  r.outcome = static_cast<Outcome>(outcome);
  r.number = static_cast<std::int64_t>(number);
  r.bytes = to_bytes(bytes);
  return r;
}

Key store_key(const std::optional<std::string>& token) {
  static constexpr std::string_view kLabel = "torchbridge federation store";
  const std::string_view secret = token ? std::string_view(*token) : std::string_view();
  Key key{};
  unsigned int n = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(kLabel.data()), kLabel.size(), key.data(), &n);
  return key;
}

Nonce random_nonce() {
  Nonce nonce{};
  // The nonces make every connection's keys its own; without randomness nothing is safe to run.
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    throw std::runtime_error("the federation's store: no random bytes for a nonce");
  }
  return nonce;
}

Key derive(const Key& key, std::string_view label, const Nonce& server, const Nonce& client) {
  Bytes message(label.begin(), label.end());
  message.insert(message.end(), server.begin(), server.end());
  message.insert(message.end(), client.begin(), client.end());
  Key out{};
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), message.data(), message.size(),
       out.data(), &n);
  return out;
}

bool same(const Key& a, const std::uint8_t* b) {
  return CRYPTO_memcmp(a.data(), b, a.size()) == 0;
}

std::array<std::uint8_t, kMacBytes> FrameKey::mac_of(std::string_view payload) const {
  Bytes header;  // the message: sequence | length | payload
  header.reserve(12 + payload.size());
  put_u64(header, sequence_);
  put_u32(header, static_cast<std::uint32_t>(payload.size()));
  header.insert(header.end(), payload.begin(), payload.end());
  std::array<std::uint8_t, EVP_MAX_MD_SIZE> full{};
  unsigned int n = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), header.data(), header.size(),
       full.data(), &n);
  std::array<std::uint8_t, kMacBytes> mac{};
  std::memcpy(mac.data(), full.data(), kMacBytes);
  return mac;
}

Bytes FrameKey::seal(const Bytes& payload) {
  Bytes out;
  out.reserve(4 + payload.size() + kMacBytes);
  put_u32(out, static_cast<std::uint32_t>(payload.size()));
  out.insert(out.end(), payload.begin(), payload.end());
  const auto mac = mac_of(view(payload));
  out.insert(out.end(), mac.begin(), mac.end());
  ++sequence_;
  return out;
}

Result<std::string_view> FrameKey::open(std::string_view payload, const std::uint8_t* mac) {
  const auto expected = mac_of(payload);
  if (CRYPTO_memcmp(expected.data(), mac, kMacBytes) != 0) {
    return make_error(ErrorCode::kUnauthorized,
                      "the federation's store: a frame that is not the peer's next one");
  }
  ++sequence_;
  return payload;
}

std::uint32_t frame_length(const std::uint8_t* header) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{header[i]} << (8 * i);
  return v;
}

}  // namespace tb::bridge::store
