// A C++ client for Burn's remote protocol: one `Device` is one websocket session with one device of
// a Burn remote host (torchbridge, or Burn's own server). Tensors recorded on it run there.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "torchbridge/ir/types.hpp"
#include "torchbridge/result.hpp"

namespace tb::client {

namespace detail {
class Session;
struct Access;
}  // namespace detail

// A host's address as burn-communication's Address holds it. The client's own type, so that its
// public headers need Burn's value types (ir/types.hpp) but not the protocol's message variants.
struct Address {
  std::string scheme;
  std::string host;
  std::optional<std::uint16_t> port;
  friend bool operator==(const Address& a, const Address& b) {
    return a.scheme == b.scheme && a.host == b.host && a.port == b.port;
  }
  friend bool operator!=(const Address& a, const Address& b) { return !(a == b); }
};

struct SessionOptions {
  // TCP connect + websocket upgrade + Burn's Init exchange.
  std::chrono::milliseconds connect_timeout{10000};
  // Default bound on every wait for an answer (reads, syncs, dtype queries); each call may
  // override it.
  std::chrono::milliseconds request_timeout{60000};
  // How long close() waits for the last frames to leave before dropping the socket.
  std::chrono::milliseconds close_timeout{5000};
  // Burn's flush rules (burn.toml [remote] flush_threshold / flush_bytes_threshold): a batch of
  // fire-and-forget tasks is sent once it holds this many messages or this many RegisterTensor
  // payload bytes; answering and coordination tasks are sent at once.
  std::size_t flush_threshold = 4;
  std::size_t flush_bytes_threshold = std::size_t{1} << 20;
  // The largest answer the session takes (a download's payload plus a few bytes). A larger one
  // ends the session with an error naming this bound, before its bytes are all in memory. The
  // default takes any size, as Burn's client does.
  std::size_t max_message_bytes = std::numeric_limits<std::size_t>::max();
  // The handshake's credential bytes (a torchbridge host started with --auth-token-file).
  std::string credential;
  // wss:// only: the PEM CA bundle the host's certificate must chain to; empty: the system's
  // roots (OpenSSL's default paths; SSL_CERT_FILE and SSL_CERT_DIR are honoured). The
  // certificate must also name the address's host.
  std::string tls_ca_file;
  // Told what the caller should know but that is no error (a credential about to cross the
  // network in the clear). Default: one line on stderr; empty: silence.
  std::function<void(const std::string&)> on_warning = [](const std::string& what) {
    std::fprintf(stderr, "torchbridge client: warning: %s\n", what.c_str());
  };
  // Burn picks a random session id; tests pin one to compare handshake bytes.
  std::optional<std::uint64_t> session_id;
};

// A handle on one session; copies share it. The session closes (Close message, then a websocket
// close) when the last Device and the last Tensor on it are gone, or on close().
class Device {
 public:
  Device() = default;

  // Connects to `address` (`ws://host:port`, `wss://host:port` for TLS, or `host:port`) and opens a
  // session on device `index` of that host. Refusals (unknown device, credential, protocol version)
  // are errors.
  static Result<Device> connect(std::string_view address, std::uint32_t index = 0,
                                SessionOptions options = {});

  bool valid() const { return session_ != nullptr; }
  // "ws://host:port", as Burn displays the address; equal strings mean the same host.
  const std::string& address() const;
  const Address& peer_address() const;
  std::uint32_t index() const;
  // Devices the host serves, from the handshake.
  std::uint32_t device_count() const;
  const ir::DeviceSettings& settings() const;
  ir::DType float_dtype() const;
  ir::DType int_dtype() const;
  ir::DType bool_dtype() const;
  const SessionOptions& options() const;

  // Waits until the host has run every task sent before; reports the first deferred error.
  Status sync(std::optional<std::chrono::milliseconds> timeout = std::nullopt) const;
  // DTypeUsage bits (1 storage, 2 arithmetic, 4 accelerated) of `dtype` on this device.
  Result<std::uint8_t> dtype_usage(const ir::DType& dtype,
                                   std::optional<std::chrono::milliseconds> timeout = {}) const;
  void seed(std::uint64_t seed) const;
  // Sends whatever is batched now.
  Status flush() const;
  // Closes the session now; later calls on it (and on its tensors) fail with a clear error.
  void close() const;
  // False once the host closed the connection or close() ran.
  bool connected() const;
  // Why the session ended, if it did.
  std::optional<Error> failure() const;

  friend bool operator==(const Device& a, const Device& b) { return a.session_ == b.session_; }
  friend bool operator!=(const Device& a, const Device& b) { return a.session_ != b.session_; }

 private:
  // The client's sources reach the session through detail::Access (bridge/client/node.hpp).
  friend struct detail::Access;
  explicit Device(std::shared_ptr<detail::Session> s) : session_(std::move(s)) {}
  std::shared_ptr<detail::Session> session_;
};

// Parses Burn's address forms ("ws://h:p", "h:p", "WS://h:p/x") as burn-communication does.
Result<Address> parse_address(std::string_view address);
// "ws://host:port".
std::string format_address(const Address& address);

}  // namespace tb::client
