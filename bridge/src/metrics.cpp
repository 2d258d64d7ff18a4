#include "metrics.hpp"

#include <fmt/format.h>

#include "host_state.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "torchbridge/ir/format.hpp"
#include "torchbridge/ir/profile.hpp"

namespace tb::bridge {

namespace {
constexpr std::size_t kCategories = ir::EnumNames<ir::OpCategory>::kNames.size();
}

HostMetrics collect_metrics(const HostState& host) {
  HostMetrics m;
  const auto totals = host.sessions.totals();
  const auto& c = host.counters;
  m.sessions_open = totals.sessions;
  m.live_tensors = totals.live_tensors;
  m.live_bytes = totals.live_bytes;
  m.failed_ops = totals.failed_ops;
  for (std::size_t i = 0; i < ir::kProfiles.size(); ++i) {
    m.sessions_by_protocol.emplace_back(ir::describe(ir::kProfiles[i]), totals.by_profile[i]);
  }
  m.held_bytes = host.memory.bytes();
  m.sessions_total = c.sessions_total;
  m.sessions_refused = c.sessions_refused;
  m.sessions_failed = c.sessions_failed;
  m.connections_open = c.connections_open;
  m.data_connections_open = c.data_connections_open;
  m.relays_open = c.relays_open;
  m.connections_refused = c.connections_refused;
  m.tls_handshakes_failed = c.tls_handshakes_failed;
  m.requests_refused = c.requests_refused;
  m.tasks = c.tasks;
  m.tasks_inline = c.tasks_inline;
  m.frames_rejected = c.frames_rejected;
  m.bytes_in = c.bytes_in;
  m.bytes_out = c.bytes_out;
  std::array<std::uint64_t, kCategories> by_category{};
  for (std::size_t k = 0; k < ir::kOpKindCount; ++k) {
    const auto kind = static_cast<ir::OpKind>(k);
    const std::uint64_t n = c.ops_by_kind[k].load();
    by_category[static_cast<std::size_t>(ir::op_category(kind))] += n;
    m.ops_by_kind.emplace_back(std::string(ir::op_name(kind)), n);
  }
  for (std::size_t i = 0; i < kCategories; ++i) {
    m.ops_by_category.emplace_back(std::string(ir::EnumNames<ir::OpCategory>::kNames[i]),
                                   by_category[i]);
  }
  for (std::size_t i = 0; i < host.devices.size(); ++i) {
    const DeviceAccount& account = *host.device_memory[i];
    m.devices.push_back(DeviceMetrics{account.name, account.tensor_bytes.load(), account.limit,
                                      host.devices[i]->memory()});
  }
  return m;
}

namespace {

// The metrics with labels: sessions by protocol, memory by device, ops by category.
void append_labelled(const HostMetrics& m, std::string& out) {
  out +=
      "# HELP torchbridge_sessions_open_by_protocol Sessions currently open, by the Burn wire "
      "version they speak.\n"
      "# TYPE torchbridge_sessions_open_by_protocol gauge\n";
  for (std::size_t i = 0; i < ir::kProfiles.size(); ++i) {
    out += fmt::format("torchbridge_sessions_open_by_protocol{{protocol=\"{}\",burn=\"{}\"}} {}\n",
                       ir::kProfiles[i].version, ir::kProfiles[i].burn,
                       m.sessions_by_protocol[i].second);
  }
  const auto per_device = [&](const char* name, const char* help, auto value) {
    out += fmt::format("# HELP torchbridge_{0} {1}\n# TYPE torchbridge_{0} gauge\n", name, help);
    for (const auto& d : m.devices) {
      out += fmt::format("torchbridge_{}{{device=\"{}\"}} {}\n", name, d.device, value(d));
    }
  };
  per_device("device_tensor_bytes",
             "Bytes of tensors the sessions and served models on a device hold (counted).",
             [](const DeviceMetrics& d) { return d.tensor_bytes; });
  per_device("device_limit_bytes", "The device's limit on them (--max-device-bytes; 0: none).",
             [](const DeviceMetrics& d) { return d.limit_bytes; });
  per_device("device_allocated_bytes",
             "Bytes the device's allocator has handed to tensors (0 on the CPU: not tracked).",
             [](const DeviceMetrics& d) { return d.allocator.allocated; });
  per_device("device_reserved_bytes",
             "Bytes the device's allocator holds from the driver, cache included (0 on the CPU).",
             [](const DeviceMetrics& d) { return d.allocator.reserved; });
  per_device("device_total_bytes", "The device's memory (0 on the CPU).",
             [](const DeviceMetrics& d) { return d.allocator.total; });
  out +=
      "# HELP torchbridge_ops_total Operations executed, by OperationIr category.\n"
      "# TYPE torchbridge_ops_total counter\n";
  for (const auto& [category, n] : m.ops_by_category) {
    out += fmt::format("torchbridge_ops_total{{category=\"{}\"}} {}\n", category, n);
  }
}

}  // namespace

std::string metrics_text(const HostState& host) {
  const HostMetrics m = collect_metrics(host);
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, std::uint64_t v) {
    out +=
        fmt::format("# HELP torchbridge_{0} {1}\n# TYPE torchbridge_{0} {2}\ntorchbridge_{0} {3}\n",
                    name, help, type, v);
  };
  metric("sessions_open", "gauge", "Sessions currently open.", m.sessions_open);
  metric("sessions_total", "counter", "Sessions opened since start.", m.sessions_total);
  metric("sessions_refused_total", "counter", "Handshakes refused.", m.sessions_refused);
  metric("sessions_failed_total", "counter",
         "Sessions ended by an unexpected error on the host (logged).", m.sessions_failed);
  metric("connections_open", "gauge", "Connections open (HTTP, /session, /data).",
         m.connections_open);
  metric("data_connections_open", "gauge", "/data connections open.", m.data_connections_open);
  metric("relays_open", "gauge", "Sessions relayed to another member of the federation.",
         m.relays_open);
  metric("connections_refused_total", "counter", "Connections closed at once: over a limit.",
         m.connections_refused);
  metric("tls_handshakes_failed_total", "counter",
         "Connections whose TLS handshake failed or timed out (TLS hosts only).",
         m.tls_handshakes_failed);
  metric("requests_refused_total", "counter",
         "Requests refused for their Origin (a web page not allowed with --allow-origin) or, on a "
         "loopback host, a Host that is no loopback name (DNS rebinding).",
         m.requests_refused);
  metric("live_tensors", "gauge", "Tensors held by all sessions.", m.live_tensors);
  metric("live_bytes", "gauge", "Bytes of tensors held by all sessions.", m.live_bytes);
  metric("held_bytes", "gauge",
         "Bytes held besides tensors: messages being received, queued tasks and answers, "
         "exposed copies.",
         m.held_bytes);
  const auto cache = host.message_blocks->stats();
  metric("block_cache_bytes", "gauge",
         "Warm message blocks kept for the next large message (counted against --max-host-bytes).",
         host.message_blocks->bytes());
  metric("block_cache_hits_total", "counter", "Large messages received into a warm block.",
         cache.hits);
  metric("tasks_total", "counter", "Tasks received.", m.tasks);
  metric("tasks_inline_total", "counter",
         "Tasks answered on the network thread: small reads and syncs of an idle CPU session.",
         m.tasks_inline);
  metric("failed_ops", "gauge", "Failed operations in open sessions.", m.failed_ops);
  metric("frames_rejected_total", "counter", "Undecodable or invalid frames.", m.frames_rejected);
  metric("bytes_in_total", "counter", "Websocket payload bytes received.", m.bytes_in);
  metric("bytes_out_total", "counter", "Websocket payload bytes sent.", m.bytes_out);
  append_labelled(m, out);
  if (host.options.models) out += host.options.models->metrics_text();
  return out;
}

}  // namespace tb::bridge
