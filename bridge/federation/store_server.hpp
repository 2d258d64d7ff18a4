// Rank 0's store (store_protocol.hpp): a key-value table the members meet at, served on one
// thread of its own. What a stranger can do to it is bounded:
//   - it listens on exactly the address it is given;
//   - a connection that does not prove the key within `handshake_deadline` is closed, and when
//     `max_pending` connections are still proving it, the oldest is closed for the newest, so
//     idle strangers cannot lock members out;
//   - a frame longer than a request can be is refused from its header, before any of it is held;
//     a frame begun must end within `frame_deadline`;
//   - the table holds at most `max_bytes` and `max_keys`: a write past them is refused;
//   - each connection runs one request at a time, so one connection's wait stalls nobody else's.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "torchbridge/result.hpp"

namespace tb::bridge::store {

struct ServerLimits {
  std::chrono::milliseconds handshake_deadline{5000};
  std::chrono::milliseconds frame_deadline{30000};
  std::chrono::milliseconds max_wait{600000};
  std::size_t max_pending = 32;
  std::size_t max_connections = 1024;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t max_keys = 65536;
};

struct ServerStats {
  std::size_t keys = 0;
  std::size_t bytes = 0;      // keys and values held
  std::size_t members = 0;    // authenticated connections open
  std::size_t pending = 0;    // connections still proving the key
  std::size_t waiting = 0;    // members' waits for keys in progress
  std::uint64_t refused = 0;  // connections closed for a wrong proof, a deadline or a bad frame
};

class Server {
 public:
  // Listens on `host`:`port` (port 0: any free one) and serves until destroyed.
  static Result<std::unique_ptr<Server>> start(const std::string& host, std::uint16_t port,
                                               const std::optional<std::string>& token,
                                               ServerLimits limits = {});
  virtual ~Server() = default;
  virtual std::uint16_t port() const = 0;
  virtual ServerStats stats() const = 0;
};

}  // namespace tb::bridge::store
