// What the pieces of the host share: its options and devices, the host-wide services sessions use,
// the session registry, the memory count and the metrics counters. Owned by Host; every connection
// and worker holds a reference for its life (Host::stop waits for them).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "cluster/collective.hpp"
#include "cluster/transfers.hpp"
#include "host_counters.hpp"
#include "memory.hpp"
#include "net/tls.hpp"
#include "session/session_registry.hpp"
#include "session/task_runner.hpp"
#include "torchbridge/bridge/host.hpp"
#include "transport/data_service.hpp"
#include "transport/request_policy.hpp"

namespace tb::bridge {

struct HostState {
  HostState(HostOptions o, std::vector<std::shared_ptr<backend::Backend>> d)
      : options(std::move(o)),
        devices(std::move(d)),
        request_policy{options.allowed_origins, tb::net::is_loopback(options.host)},
        downloader(options, stopping, tls_client, message_blocks) {
    for (const auto& device : devices) {
      const bool in_host_memory = device->device_name().rfind("cpu", 0) == 0;
      device_memory.push_back(std::make_unique<DeviceAccount>(
          device->device_name(), in_host_memory,
          device_limit(options.limits.max_device_bytes,
                       in_host_memory ? 0 : device->memory().total)));
    }
  }

  const HostOptions options;
  const std::vector<std::shared_ptr<backend::Backend>> devices;
  // Who may use the routes at all, from the request's Origin and Host (request_policy.hpp).
  const RequestPolicy request_policy;
  std::atomic<bool> stopping{false};
  // Set by Host::start: the listener's (when TLS is configured) and the one downloads verify
  // wss:// peers with.
  std::shared_ptr<boost::asio::ssl::context> tls_server, tls_client;
  // One place per network thread (HostOptions::io_threads).
  HostCounters counters{static_cast<std::size_t>(std::max(1, options.io_threads))};
  // Warm blocks of this host's received messages (ir::BlockCache): its own, never another
  // host's. Sized by Host::start from --max-host-bytes, and counted against it.
  const std::shared_ptr<ir::BlockCache> message_blocks =
      std::make_shared<ir::BlockCache>(ir::BlockCache::default_limit());
  // Bytes held outside tensors by every session, plus messages being received.
  MemoryAccount memory;
  // Tensor bytes in host memory (the sessions on CPU devices).
  std::atomic<std::uint64_t> tensor_bytes{0};
  // Tensor bytes on each of this host's devices (one per entry of `devices`).
  std::vector<std::unique_ptr<DeviceAccount>> device_memory;
  LocalTransfers local;
  DataStore data;
  CollectiveHub collectives;
  WebSocketDownloader downloader;
  SessionRegistry sessions;

  // Whether the host is over --max-host-bytes, by host_bytes_over's formula (memory.hpp).
  bool over_memory_limit() {
    return host_bytes_over(options.limits.max_host_bytes, tensor_bytes.load(), memory.bytes(), 0,
                           message_blocks.get())
        .has_value();
  }

  // The host's memory account as a charge target (the host outlives its connections).
  std::shared_ptr<MemoryAccount> account() {
    return std::shared_ptr<MemoryAccount>(std::shared_ptr<MemoryAccount>(), &memory);
  }

  // Devices a client sees: every member's in a federation, else this host's.
  std::uint32_t device_count() const {
    return options.federation ? options.federation->device_count()
                              : static_cast<std::uint32_t>(devices.size());
  }
  // The first of this host's devices among the ones a client sees.
  std::uint32_t first_device() const {
    return options.federation
               ? options.federation->members()[options.federation->rank()].first_device
               : 0;
  }
  // This host's backend for device `device` (as a client numbers it), or null when another member
  // of the federation owns it.
  backend::Backend* local_device(std::uint32_t device) const {
    const std::uint32_t first = first_device();
    if (device < first || device - first >= devices.size()) return nullptr;
    return devices[device - first].get();
  }

  // The services of a new session on `device` (as a client numbers it, one of this host's) whose
  // transfers stay in `scope`.
  SessionServices services(std::string scope, std::uint32_t device) {
    SessionServices s;
    s.local = &local;
    s.data = &data;
    s.collectives = &collectives;
    s.downloader = &downloader;
    s.limits = options.limits;
    s.transfer_timeout = options.transfer_timeout;
    s.stopping = &stopping;
    s.counters = &counters;
    s.device_count = device_count();
    s.federation = options.federation.get();
    s.transfer_scope = std::move(scope);
    s.held = std::make_shared<MemoryAccount>(&memory);
    s.host_tensor_bytes = &tensor_bytes;
    s.device_memory = device_memory.at(device - first_device()).get();
    s.message_blocks = message_blocks.get();
    s.session_open = [this](std::uint64_t id) { return sessions.is_open(id); };
    return s;
  }
};

}  // namespace tb::bridge
