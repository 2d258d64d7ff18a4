// The host's public face: it owns the shared state, the network threads (net/io_pool.hpp) and the
// listener; the rest lives one responsibility per file (docs/architecture.md).
#include "torchbridge/bridge/host.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio.hpp>

#include "guard.hpp"
#include "host_state.hpp"
#include "metrics.hpp"
#include "net/fault.hpp"
#include "net/io_pool.hpp"
#include "net/tls.hpp"
#include "torchbridge/bridge/host_malloc.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "transport/listener.hpp"

namespace tb::bridge {

namespace net = boost::asio;

namespace {

// Model weights on `device` (ModelLedger's counter): they count as its sessions' tensors do, so
// that sessions and models share the host's and the device's limits.
Status count_model_bytes(HostState& state, const std::string& device, std::int64_t bytes,
                         bool check) {
  DeviceAccount* account = nullptr;
  for (auto& a : state.device_memory) {
    if (a->name == device) account = a.get();
  }
  if (account == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, "device {} is not served by this host", device);
  }
  const auto n = static_cast<std::uint64_t>(bytes < 0 ? -bytes : bytes);
  if (bytes < 0) {
    account->tensor_bytes.fetch_sub(n);
    if (account->in_host_memory) state.tensor_bytes.fetch_sub(n);
    return ok();
  }
  const std::uint64_t max_host = state.options.limits.max_host_bytes;
  if (check && account->in_host_memory && max_host) {
    const std::uint64_t host = state.memory.bytes() + state.tensor_bytes.load() + n;
    if (host > max_host) {
      return make_error(ErrorCode::kLimit,
                        "its weights ({} bytes on {}) would take the host to {} bytes, over its "
                        "limit of {} bytes (--max-host-bytes)",
                        n, device, host, max_host);
    }
  }
  if (check && account->limit && account->tensor_bytes.load() + n > account->limit) {
    return make_error(ErrorCode::kLimit,
                      "its weights ({} bytes) would take {} to {} bytes of tensors, over the "
                      "device's limit of {} bytes (--max-device-bytes)",
                      n, device, account->tensor_bytes.load() + n, account->limit);
  }
  account->tensor_bytes.fetch_add(n);
  if (account->in_host_memory) state.tensor_bytes.fetch_add(n);
  return ok();
}

}  // namespace

struct Host::Impl {
  Impl(HostOptions options, std::vector<std::shared_ptr<backend::Backend>> devices)
      : state(std::move(options), std::move(devices)) {}

  HostState state;
  // Last, so they go first: handlers still queued in the contexts own connections whose
  // destructors use the state above.
  tb::net::IoPool pool{state.counters.network_threads()};
  Listener listener{state, pool};
  net::steady_timer sweeper{pool.context(0)};

  // Exposures nobody downloaded in time are freed (their sessions may live on for hours), warm
  // message blocks nobody took for a while go back to the system, and so does the cache of a GPU
  // no session holds tensors on.
  void sweep() {
    tb::net::every(
        sweeper, std::chrono::seconds(1),
        [this] {
          const auto now = std::chrono::steady_clock::now();
          state.data.expire(now);
          state.message_blocks->expire(now);
          release_idle_devices();
          release_idle_host_memory();
        },
        [](const std::string& what) { spdlog::error("expiring exposures: {}", what); });
  }
  void release_idle_devices() {
    for (std::size_t i = 0; i < state.devices.size(); ++i) {
      const DeviceAccount& account = *state.device_memory[i];
      if (account.in_host_memory || account.tensor_bytes.load() != 0) continue;
      const auto m = state.devices[i]->memory();
      if (m.reserved > m.allocated) state.devices[i]->release_cached_memory();
    }
  }
  // Once each time the host turns idle (no session's worker left, and a session seen since the
  // last release): the allocator's free pages go back to the system, as a GPU's cache does above.
  std::uint64_t sessions_released = 0;
  void release_idle_host_memory() {
    const std::uint64_t seen = state.counters.value(Count::kSessionsTotal);
    if (seen == sessions_released || state.sessions.open() != 0) return;
    sessions_released = seen;
    release_free_host_memory();
  }
};

Host::Host(HostOptions options, std::vector<std::shared_ptr<backend::Backend>> devices)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(devices))) {
  if (auto& models = impl_->state.options.models) {
    models->ledger().attach(
        [&state = impl_->state](const std::string& device, std::int64_t bytes, bool check) {
          return count_model_bytes(state, device, bytes, check);
        });
  }
}

Host::~Host() {
  stop();
  if (auto& models = impl_->state.options.models) models->ledger().detach();
}

Status Host::start() {
  auto& im = *impl_;
  const auto& options = im.state.options;
  if (im.state.devices.empty())
    return make_error(ErrorCode::kInvalidArgument, "no device to serve");
  tb::net::fault::arm_from_environment();
  if (options.tls_cert_file.has_value() != options.tls_key_file.has_value()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "TLS needs both a certificate (--tls-cert) and its key (--tls-key)");
  }
  if (options.tls_cert_file) {
    TB_TRY_ASSIGN(im.state.tls_server,
                  tb::net::server_context(*options.tls_cert_file, *options.tls_key_file));
  }
  TB_TRY_ASSIGN(im.state.tls_client, tb::net::client_context(options.tls_ca_file.value_or("")));
  TB_TRY(im.listener.listen(options.host, options.port));
  if (!tb::net::is_loopback(options.host)) {
    if (!options.auth_token) {
      spdlog::warn(
          "listening on {} without an auth token (--auth-token-file): anyone who reaches this "
          "port can run code on these devices and read every tensor sent to them",
          options.host);
    } else if (!im.state.tls_server) {
      spdlog::warn(
          "listening on {} without TLS (--tls-cert/--tls-key): the auth token and every tensor "
          "cross the network in the clear",
          options.host);
    }
  }
  // Warm message blocks count against the host's limit (TaskRunner empties the cache before it
  // refuses work); an eighth of it, up to 1 GiB, keeps a large upload's block for the next one.
  constexpr std::uint64_t kMaxCache = std::uint64_t{1} << 30;
  const std::uint64_t host_bytes = options.limits.max_host_bytes;
  im.state.message_blocks->set_limit(
      static_cast<std::size_t>(host_bytes ? std::min(host_bytes / 8, kMaxCache) : kMaxCache));
  im.listener.accept();
  im.sweep();
  // A handler that throws (each is guarded; this is the last resort) is logged and its thread goes
  // on serving every other connection.
  im.pool.start(
      [](const std::string& what) { spdlog::error("network thread: {}; going on", what); });
  return ok();
}

std::uint16_t Host::port() const {
  return impl_->listener.port();
}

void Host::stop() {
  auto& im = *impl_;
  if (!im.pool.running() || im.state.stopping.exchange(true)) return;
  net::post(im.pool.context(0), [&im] {
    im.listener.close();
    im.sweeper.cancel();
  });
  // Wake the sessions blocked on the other side of a transfer or an all-reduce: that side may
  // never come now.
  im.state.local.shutdown();
  im.state.collectives.shutdown();
  if (im.state.options.federation) im.state.options.federation->shutdown();
  im.state.sessions.stop_all();
  im.pool.stop();
  im.state.data.drop_waiters();
}

HostMetrics Host::metrics() const {
  return collect_metrics(impl_->state);
}

std::string Host::metrics_text() const {
  return bridge::metrics_text(impl_->state);
}

ir::BlockCache& Host::message_blocks() const {
  return *impl_->state.message_blocks;
}

}  // namespace tb::bridge
