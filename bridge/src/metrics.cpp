#include "metrics.hpp"

#include <fmt/format.h>

#include "host_state.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "torchbridge/ir/format.hpp"
#include "torchbridge/ir/profile.hpp"

namespace tb::bridge {

namespace {

constexpr std::size_t kCategories = ir::EnumNames<ir::OpCategory>::kNames.size();

// One host-wide number of GET /metrics.
struct Row {
  const char* name;  // after "torchbridge_"
  const char* type;  // "gauge" or "counter"
  const char* help;
  std::uint64_t HostMetrics::*value;
};

// The rows before the block cache's and after them, in the order /metrics has always had.
constexpr Row kHostRows[] = {
    {"sessions_open", "gauge", "Sessions currently open.", &HostMetrics::sessions_open},
    {"sessions_total", "counter", "Sessions opened since start.", &HostMetrics::sessions_total},
    {"sessions_refused_total", "counter", "Handshakes refused.", &HostMetrics::sessions_refused},
    {"sessions_failed_total", "counter",
     "Sessions ended by an unexpected error on the host (logged).", &HostMetrics::sessions_failed},
    {"connections_open", "gauge", "Connections open (HTTP, /session, /data).",
     &HostMetrics::connections_open},
    {"data_connections_open", "gauge", "/data connections open.",
     &HostMetrics::data_connections_open},
    {"relays_open", "gauge", "Sessions relayed to another member of the federation.",
     &HostMetrics::relays_open},
    {"connections_refused_total", "counter", "Connections closed at once: over a limit.",
     &HostMetrics::connections_refused},
    {"tls_handshakes_failed_total", "counter",
     "Connections whose TLS handshake failed or timed out (TLS hosts only).",
     &HostMetrics::tls_handshakes_failed},
    {"requests_refused_total", "counter",
     "Requests refused for their Origin (a web page not allowed with --allow-origin) or, on a "
     "loopback host, a Host that is no loopback name (DNS rebinding).",
     &HostMetrics::requests_refused},
    {"live_tensors", "gauge", "Tensors held by all sessions.", &HostMetrics::live_tensors},
    {"live_bytes", "gauge", "Bytes of tensors held by all sessions.", &HostMetrics::live_bytes},
    {"held_bytes", "gauge",
     "Bytes held besides tensors: messages being received, queued tasks and answers, "
     "exposed copies.",
     &HostMetrics::held_bytes},
};
constexpr Row kTaskRows[] = {
    {"tasks_total", "counter", "Tasks received.", &HostMetrics::tasks},
    {"tasks_inline_total", "counter",
     "Tasks answered on the network thread: small reads and syncs of an idle CPU session.",
     &HostMetrics::tasks_inline},
    {"failed_ops", "gauge", "Failed operations in open sessions.", &HostMetrics::failed_ops},
    {"frames_rejected_total", "counter", "Undecodable or invalid frames.",
     &HostMetrics::frames_rejected},
    {"bytes_in_total", "counter", "Websocket payload bytes received.", &HostMetrics::bytes_in},
    {"bytes_out_total", "counter", "Websocket payload bytes sent.", &HostMetrics::bytes_out},
};

// One number per device, labelled with the device's name.
struct DeviceRow {
  const char* name;
  const char* help;
  std::uint64_t (*value)(const DeviceMetrics&);
};
constexpr DeviceRow kDeviceRows[] = {
    {"device_tensor_bytes",
     "Bytes of tensors the sessions and served models on a device hold (counted).",
     [](const DeviceMetrics& d) { return d.tensor_bytes; }},
    {"device_limit_bytes", "The device's limit on them (--max-device-bytes; 0: none).",
     [](const DeviceMetrics& d) { return d.limit_bytes; }},
    {"device_allocated_bytes",
     "Bytes the device's allocator has handed to tensors (0 on the CPU: not tracked).",
     [](const DeviceMetrics& d) { return d.allocator.allocated; }},
    {"device_reserved_bytes",
     "Bytes the device's allocator holds from the driver, cache included (0 on the CPU).",
     [](const DeviceMetrics& d) { return d.allocator.reserved; }},
    {"device_total_bytes", "The device's memory (0 on the CPU).",
     [](const DeviceMetrics& d) { return d.allocator.total; }},
};

void append_metric(std::string& out, const char* name, const char* type, const char* help,
                   std::uint64_t v) {
  out +=
      fmt::format("# HELP torchbridge_{0} {1}\n# TYPE torchbridge_{0} {2}\ntorchbridge_{0} {3}\n",
                  name, help, type, v);
}

template <std::size_t N>
void append_rows(std::string& out, const Row (&rows)[N], const HostMetrics& m) {
  for (const Row& r : rows) append_metric(out, r.name, r.type, r.help, m.*r.value);
}

void append_block_cache(std::string& out, const ir::BlockCache& blocks) {
  const auto cache = blocks.stats();
  append_metric(
      out, "block_cache_bytes", "gauge",
      "Warm message blocks kept for the next large message (counted against --max-host-bytes).",
      blocks.bytes());
  append_metric(out, "block_cache_hits_total", "counter",
                "Large messages received into a warm block.", cache.hits);
}

void append_by_protocol(std::string& out, const HostMetrics& m) {
  out +=
      "# HELP torchbridge_sessions_open_by_protocol Sessions currently open, by the Burn wire "
      "version they speak.\n"
      "# TYPE torchbridge_sessions_open_by_protocol gauge\n";
  for (std::size_t i = 0; i < ir::kProfiles.size(); ++i) {
    out += fmt::format("torchbridge_sessions_open_by_protocol{{protocol=\"{}\",burn=\"{}\"}} {}\n",
                       ir::kProfiles[i].version, ir::kProfiles[i].burn,
                       m.sessions_by_protocol[i].second);
  }
}

void append_threads(std::string& out, const HostMetrics& m) {
  out +=
      "# HELP torchbridge_network_thread_connections Connections open, by the network thread "
      "serving them.\n"
      "# TYPE torchbridge_network_thread_connections gauge\n";
  for (std::size_t i = 0; i < m.connections_by_thread.size(); ++i) {
    out += fmt::format("torchbridge_network_thread_connections{{thread=\"{}\"}} {}\n", i,
                       m.connections_by_thread[i]);
  }
}

void append_devices(std::string& out, const HostMetrics& m) {
  for (const DeviceRow& r : kDeviceRows) {
    out +=
        fmt::format("# HELP torchbridge_{0} {1}\n# TYPE torchbridge_{0} gauge\n", r.name, r.help);
    for (const auto& d : m.devices) {
      out += fmt::format("torchbridge_{}{{device=\"{}\"}} {}\n", r.name, d.device, r.value(d));
    }
  }
}

void append_ops(std::string& out, const HostMetrics& m) {
  out +=
      "# HELP torchbridge_ops_total Operations executed, by OperationIr category.\n"
      "# TYPE torchbridge_ops_total counter\n";
  for (const auto& [category, n] : m.ops_by_category) {
    out += fmt::format("torchbridge_ops_total{{category=\"{}\"}} {}\n", category, n);
  }
}

}  // namespace

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
  m.sessions_total = c.value(Count::kSessionsTotal);
  m.sessions_refused = c.value(Count::kSessionsRefused);
  m.sessions_failed = c.value(Count::kSessionsFailed);
  m.connections_open = c.open_now(Gauge::kConnections);
  m.data_connections_open = c.open_now(Gauge::kDataConnections);
  m.relays_open = c.open_now(Gauge::kRelays);
  m.connections_refused = c.value(Count::kConnectionsRefused);
  for (std::size_t i = 0; i < c.network_threads(); ++i) {
    m.connections_by_thread.push_back(c.open_on_thread(i));
  }
  m.tls_handshakes_failed = c.value(Count::kTlsHandshakesFailed);
  m.requests_refused = c.value(Count::kRequestsRefused);
  m.tasks = c.value(Count::kTasks);
  m.tasks_inline = c.value(Count::kTasksInline);
  m.frames_rejected = c.value(Count::kFramesRejected);
  m.bytes_in = c.value(Count::kBytesIn);
  m.bytes_out = c.value(Count::kBytesOut);
  std::array<std::uint64_t, kCategories> by_category{};
  for (std::size_t k = 0; k < ir::kOpKindCount; ++k) {
    const auto kind = static_cast<ir::OpKind>(k);
    const std::uint64_t n = c.ops(kind);
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

std::string metrics_text(const HostState& host) {
  const HostMetrics m = collect_metrics(host);
  std::string out;
  append_rows(out, kHostRows, m);
  append_threads(out, m);
  append_block_cache(out, *host.message_blocks);
  append_rows(out, kTaskRows, m);
  append_by_protocol(out, m);
  append_devices(out, m);
  append_ops(out, m);
  if (host.options.models) out += host.options.models->metrics_text();
  return out;
}

}  // namespace tb::bridge
