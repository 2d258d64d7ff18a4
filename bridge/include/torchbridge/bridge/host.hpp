// The remote host: serves Burn's websocket protocol (`/session`, `/data`) on one or more devices,
// plus `GET /healthz` and `GET /metrics` on the same port.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "torchbridge/backend/backend.hpp"
#include "torchbridge/bridge/federation.hpp"
#include "torchbridge/bridge/models.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "torchbridge/result.hpp"

namespace tb::bridge {

// Defaults taken from the machine's memory (or its cgroup limit): a session may hold half of it,
// all sessions together three quarters, so that one client cannot take the host down.
std::uint64_t default_session_bytes();
std::uint64_t default_host_bytes();

struct Limits {
  // One websocket message either way; Burn's own client and server use 1 GiB.
  std::uint64_t max_message_bytes = std::uint64_t{1} << 30;
  // One tensor: registered, or produced by an op (checked from the op's output shapes before it
  // runs, so a tiny frame cannot make the host allocate terabytes). 0: unlimited.
  std::uint64_t max_tensor_bytes = std::uint64_t{8} << 30;
  // Bytes one session may hold: its tensors, its queued answers and the copies it exposed for
  // other hosts (0: unlimited).
  std::uint64_t max_session_bytes = default_session_bytes();
  // The same, all sessions together, plus the messages being received (0: unlimited).
  std::uint64_t max_host_bytes = default_host_bytes();
  // Tensor bytes all sessions together may hold on one device, for each served device. nullopt:
  // each device's default, kDefaultDeviceShare of its memory for a GPU (the rest is left to the
  // CUDA context, cuDNN/cuBLAS workspaces and the caching allocator's rounding) and no device
  // limit for the CPU, whose tensors count against max_host_bytes. 0: unlimited.
  std::optional<std::uint64_t> max_device_bytes;
  // Answers a session may have waiting to be sent (as Burn's host, 64): the session's tasks wait
  // for its client to read, whatever it asks for.
  std::uint32_t max_queued_answers = 64;
  // Concurrent `/data` connections (downloads need no token: Burn's server sends none).
  std::uint32_t max_data_connections = 64;
  // Concurrent sessions (further handshakes are refused with a log line).
  std::uint32_t max_sessions = 256;
  // Cached graphs per session (RegisterAndExecuteGraph beyond this evicts the oldest).
  std::uint32_t max_graphs_per_session = 4096;
  // Bytes of received, not yet executed tasks per session before the host stops reading that
  // socket (back-pressure; never an error).
  std::uint64_t max_queued_bytes = std::uint64_t{512} << 20;
  // Open connections of every kind (HTTP, /session, /data, and sessions not yet past their Init),
  // counted from accept: it bounds the descriptors and memory clients that never authenticate can
  // hold. Beyond it a new connection is closed at once.
  std::uint32_t max_connections = 1024;
  // The first message on /session (the Init, a few dozen bytes plus the token) before the client
  // is authorized: a client without the token cannot make the host buffer max_message_bytes.
  std::uint64_t max_init_bytes = 64 * 1024;
};

struct HostOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 3000;  // 0: any free port (see Host::port)
  // Network threads, each serving its own connections (a new one goes to the thread with the
  // fewest).
  int io_threads = 2;
  Limits limits;
  // Origins whose web pages may use the host (a browser sends `Origin`; Burn's client does not):
  // every request carrying another `Origin` is refused (bridge/src/transport/request_policy.hpp).
  std::vector<std::string> allowed_origins;
  // Shared secret the handshake's authorization bytes (or an `Authorization: Bearer` header on the
  // upgrade request) must carry; none: every client is served.
  std::optional<std::string> auth_token;
  // How long a session waits for the other side of a transfer before failing it.
  std::chrono::milliseconds transfer_timeout{60000};
  // How long an upgraded /session connection may wait before sending its Init: websocket pings
  // alone would keep an idle, unauthorized connection open for ever.
  std::chrono::milliseconds init_timeout{10000};
  // How long a session's websocket may stay silent: after half of it the host pings, and a client
  // that has not answered by the end of the next half is closed (transport/idle_watch.hpp). A
  // session the host is not reading (back-pressure, closing) is never closed for it. 0: never.
  std::chrono::milliseconds idle_timeout{60000};
  // TLS: a PEM certificate chain and its PEM private key. Set, every route is served over TLS
  // (wss://, https://) and plain connections fail their handshake.
  std::optional<std::string> tls_cert_file, tls_key_file;
  // PEM CA bundle trusted when this host downloads from a wss:// peer (transfers); none: the
  // system's roots (OpenSSL's default paths; SSL_CERT_FILE is honoured).
  std::optional<std::string> tls_ca_file;
  // This host as a member of a federation (bridge/federation.hpp): the devices of every member are
  // announced, sessions for another member's devices are relayed to it, and all-reduces span
  // members. None: a host on its own.
  std::shared_ptr<Federation> federation;
  // Served models that change while the host runs (a model repository): `/v1/models` lists and
  // loads them, and their weights count against the limits above. None: no admin routes.
  std::shared_ptr<ModelControl> models;
  // Bearer token of the admin routes (`/v1/models`), separate from auth_token: a client that may
  // run ops may not thereby change what the host serves. None: the admin routes are off.
  std::optional<std::string> admin_token;
};

// One served device's memory: the host's own count against its limit, and its allocator's view.
struct DeviceMetrics {
  std::string device;               // "cpu", "cuda:0"
  std::uint64_t tensor_bytes = 0;   // counted for its sessions' tensors
  std::uint64_t limit_bytes = 0;    // --max-device-bytes in force (0: none)
  backend::DeviceMemory allocator;  // allocated/reserved/total, zero on the CPU
};

struct HostMetrics {
  std::uint64_t sessions_open = 0;
  std::uint64_t sessions_total = 0;
  std::uint64_t sessions_refused = 0;
  std::uint64_t sessions_failed = 0;
  std::uint64_t connections_open = 0;
  std::uint64_t data_connections_open = 0;
  std::uint64_t relays_open = 0;  // sessions passed on to another federation member
  std::uint64_t connections_refused = 0;
  // Connections open on each network thread (--io-threads), in order: a new one goes to the
  // thread with the fewest.
  std::vector<std::uint64_t> connections_by_thread;
  std::uint64_t tls_handshakes_failed = 0;
  std::uint64_t requests_refused = 0;  // a web page's Origin, or a non-loopback Host on loopback
  std::uint64_t live_tensors = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t held_bytes = 0;
  std::uint64_t tasks = 0;
  std::uint64_t tasks_inline = 0;  // answered on the network thread (the session's worker idle)
  std::uint64_t failed_ops = 0;
  std::uint64_t frames_rejected = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::vector<std::pair<std::string, std::uint64_t>> ops_by_category;
  // Open sessions by the Burn wire version they speak ("Burn 0.22.1 (protocol 2)"), one entry per
  // version served.
  std::vector<std::pair<std::string, std::uint64_t>> sessions_by_protocol;
  // Every IR leaf (named as `torchbridge ops` prints it) with the times it was executed.
  std::vector<std::pair<std::string, std::uint64_t>> ops_by_kind;
  // One entry per device this host serves, in order.
  std::vector<DeviceMetrics> devices;
};

class Host {
 public:
  // One backend per device index, in order.
  Host(HostOptions options, std::vector<std::shared_ptr<backend::Backend>> devices);
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // Binds and starts serving on background threads.
  Status start();
  // The bound port (after start()).
  std::uint16_t port() const;
  // Stops accepting, closes every session (freeing its tensors) and joins the threads.
  void stop();

  HostMetrics metrics() const;
  // Prometheus text exposition of metrics().
  std::string metrics_text() const;
  // The warm blocks of this host's received messages: its own, counted against its
  // --max-host-bytes (what `block_cache_bytes` reports).
  ir::BlockCache& message_blocks() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tb::bridge
