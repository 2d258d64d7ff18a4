// Host metrics: every executed op is counted under its IR leaf (what `serve --op-counts-file`
// writes) and under its OperationIr category.
#include <algorithm>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/bridge_test_util.hpp"
#include "bridge/host_raw_client.hpp"
#include "host_state.hpp"
#include "metrics.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/version.hpp"

namespace tb::test {
namespace {

using bridge::Count;
using bridge::Gauge;

std::uint64_t count_of(const std::vector<std::pair<std::string, std::uint64_t>>& counts,
                       const std::string& name) {
  auto it = std::find_if(counts.begin(), counts.end(),
                         [&](const auto& entry) { return entry.first == name; });
  EXPECT_NE(it, counts.end()) << name << " is not listed";
  return it == counts.end() ? 0 : it->second;
}

TEST(HostMetrics, CountsEveryExecutedOpByLeafAndCategory) {
  TestHost host{1};
  Session session{host.port(), 0};
  const Dims shape = {2};
  session.send({register_tensor(1, make_data(shape, DTypeKind::F32, {1, 2})),
                register_tensor(2, make_data(shape, DTypeKind::F32, {3, 4}))});
  session.send({register_op(make_op<OpKind::NumericFloat_Add>(
                    BinaryOpIr{tir(1, shape), tir(2, shape), out(3, shape)}, DTypeKind::F32)),
                register_op(make_op<OpKind::NumericFloat_Add>(
                    BinaryOpIr{tir(3, shape), tir(2, shape), out(4, shape)}, DTypeKind::F32)),
                register_op(make_op<OpKind::Float_Exp>(UnaryOpIr{tir(4, shape), out(5, shape)},
                                                       DTypeKind::F32))});
  auto synced = session.sync();
  ASSERT_TRUE(std::holds_alternative<std::monostate>(synced));

  const auto m = host.host().metrics();
  ASSERT_EQ(m.ops_by_kind.size(), kOpKindCount);
  EXPECT_EQ(count_of(m.ops_by_kind, "NumericFloat.Add"), 2u);
  EXPECT_EQ(count_of(m.ops_by_kind, "Float.Exp"), 1u);
  EXPECT_EQ(count_of(m.ops_by_kind, "NumericFloat.Sub"), 0u);
  EXPECT_EQ(count_of(m.ops_by_category, "NumericFloat"), 2u);
  EXPECT_EQ(count_of(m.ops_by_category, "Float"), 1u);
}

// Each session is counted under the wire version its Init named, in the struct and in /metrics.
TEST(HostMetrics, CountsOpenSessionsByProtocol) {
  TestHost host{1};
  const std::string served = "Burn " + std::string(kBurnVersion) + " (protocol 2)";
  EXPECT_EQ(count_of(host.host().metrics().sessions_by_protocol, served), 0u);
  {
    Session a{host.port(), 0};
    Session b{host.port(), 0};
    ASSERT_TRUE(std::holds_alternative<std::monostate>(a.sync()));
    ASSERT_TRUE(std::holds_alternative<std::monostate>(b.sync()));
    const auto m = host.host().metrics();
    ASSERT_EQ(m.sessions_by_protocol.size(), kProfiles.size());  // one row per version served
    EXPECT_EQ(count_of(m.sessions_by_protocol, served), 2u);
    EXPECT_EQ(count_of(m.sessions_by_protocol, "Burn 0.23.0-pre.1 (protocol 6)"), 0u);
    EXPECT_THAT(
        get_metrics_text(host.port()),
        ::testing::HasSubstr("torchbridge_sessions_open_by_protocol{protocol=\"2\",burn=\"" +
                             std::string(kBurnVersion) + "\"} 2\n"));
  }
  EXPECT_TRUE(eventually(
      [&] { return count_of(host.host().metrics().sessions_by_protocol, served) == 0; }));
}

// GET /metrics byte for byte, every counter a different value: Prometheus scrapers and dashboards
// read these names, their order is what operators diff, and a row that shows another's value is
// caught here.
constexpr std::string_view kExpected = R"(# HELP torchbridge_sessions_open Sessions currently open.
# TYPE torchbridge_sessions_open gauge
torchbridge_sessions_open 0
# HELP torchbridge_sessions_total Sessions opened since start.
# TYPE torchbridge_sessions_total counter
torchbridge_sessions_total 100
# HELP torchbridge_sessions_refused_total Handshakes refused.
# TYPE torchbridge_sessions_refused_total counter
torchbridge_sessions_refused_total 101
# HELP torchbridge_sessions_failed_total Sessions ended by an unexpected error on the host (logged).
# TYPE torchbridge_sessions_failed_total counter
torchbridge_sessions_failed_total 108
# HELP torchbridge_connections_open Connections open (HTTP, /session, /data).
# TYPE torchbridge_connections_open gauge
torchbridge_connections_open 7
# HELP torchbridge_data_connections_open /data connections open.
# TYPE torchbridge_data_connections_open gauge
torchbridge_data_connections_open 8
# HELP torchbridge_relays_open Sessions relayed to another member of the federation.
# TYPE torchbridge_relays_open gauge
torchbridge_relays_open 9
# HELP torchbridge_connections_refused_total Connections closed at once: over a limit.
# TYPE torchbridge_connections_refused_total counter
torchbridge_connections_refused_total 107
# HELP torchbridge_tls_handshakes_failed_total Connections whose TLS handshake failed or timed out (TLS hosts only).
# TYPE torchbridge_tls_handshakes_failed_total counter
torchbridge_tls_handshakes_failed_total 109
# HELP torchbridge_requests_refused_total Requests refused for their Origin (a web page not allowed with --allow-origin) or, on a loopback host, a Host that is no loopback name (DNS rebinding).
# TYPE torchbridge_requests_refused_total counter
torchbridge_requests_refused_total 111
# HELP torchbridge_live_tensors Tensors held by all sessions.
# TYPE torchbridge_live_tensors gauge
torchbridge_live_tensors 0
# HELP torchbridge_live_bytes Bytes of tensors held by all sessions.
# TYPE torchbridge_live_bytes gauge
torchbridge_live_bytes 0
# HELP torchbridge_held_bytes Bytes held besides tensors: messages being received, queued tasks and answers, exposed copies.
# TYPE torchbridge_held_bytes gauge
torchbridge_held_bytes 1234
# HELP torchbridge_network_thread_connections Connections open, by the network thread serving them.
# TYPE torchbridge_network_thread_connections gauge
torchbridge_network_thread_connections{thread="0"} 2
torchbridge_network_thread_connections{thread="1"} 1
# HELP torchbridge_block_cache_bytes Warm message blocks kept for the next large message (counted against --max-host-bytes).
# TYPE torchbridge_block_cache_bytes gauge
torchbridge_block_cache_bytes 0
# HELP torchbridge_block_cache_hits_total Large messages received into a warm block.
# TYPE torchbridge_block_cache_hits_total counter
torchbridge_block_cache_hits_total 0
# HELP torchbridge_tasks_total Tasks received.
# TYPE torchbridge_tasks_total counter
torchbridge_tasks_total 102
# HELP torchbridge_tasks_inline_total Tasks answered on the network thread: small reads and syncs of an idle CPU session.
# TYPE torchbridge_tasks_inline_total counter
torchbridge_tasks_inline_total 103
# HELP torchbridge_failed_ops Failed operations in open sessions.
# TYPE torchbridge_failed_ops gauge
torchbridge_failed_ops 0
# HELP torchbridge_frames_rejected_total Undecodable or invalid frames.
# TYPE torchbridge_frames_rejected_total counter
torchbridge_frames_rejected_total 104
# HELP torchbridge_bytes_in_total Websocket payload bytes received.
# TYPE torchbridge_bytes_in_total counter
torchbridge_bytes_in_total 105
# HELP torchbridge_bytes_out_total Websocket payload bytes sent.
# TYPE torchbridge_bytes_out_total counter
torchbridge_bytes_out_total 106
# HELP torchbridge_sessions_open_by_protocol Sessions currently open, by the Burn wire version they speak.
# TYPE torchbridge_sessions_open_by_protocol gauge
torchbridge_sessions_open_by_protocol{protocol="2",burn="0.22.1"} 0
torchbridge_sessions_open_by_protocol{protocol="6",burn="0.23.0-pre.1"} 0
# HELP torchbridge_device_tensor_bytes Bytes of tensors the sessions and served models on a device hold (counted).
# TYPE torchbridge_device_tensor_bytes gauge
torchbridge_device_tensor_bytes{device="cpu"} 0
torchbridge_device_tensor_bytes{device="cpu"} 5678
# HELP torchbridge_device_limit_bytes The device's limit on them (--max-device-bytes; 0: none).
# TYPE torchbridge_device_limit_bytes gauge
torchbridge_device_limit_bytes{device="cpu"} 0
torchbridge_device_limit_bytes{device="cpu"} 0
# HELP torchbridge_device_allocated_bytes Bytes the device's allocator has handed to tensors (0 on the CPU: not tracked).
# TYPE torchbridge_device_allocated_bytes gauge
torchbridge_device_allocated_bytes{device="cpu"} 0
torchbridge_device_allocated_bytes{device="cpu"} 0
# HELP torchbridge_device_reserved_bytes Bytes the device's allocator holds from the driver, cache included (0 on the CPU).
# TYPE torchbridge_device_reserved_bytes gauge
torchbridge_device_reserved_bytes{device="cpu"} 0
torchbridge_device_reserved_bytes{device="cpu"} 0
# HELP torchbridge_device_total_bytes The device's memory (0 on the CPU).
# TYPE torchbridge_device_total_bytes gauge
torchbridge_device_total_bytes{device="cpu"} 0
torchbridge_device_total_bytes{device="cpu"} 0
# HELP torchbridge_ops_total Operations executed, by OperationIr category.
# TYPE torchbridge_ops_total counter
torchbridge_ops_total{category="BaseFloat"} 0
torchbridge_ops_total{category="BaseInt"} 0
torchbridge_ops_total{category="BaseBool"} 0
torchbridge_ops_total{category="NumericFloat"} 3
torchbridge_ops_total{category="NumericInt"} 0
torchbridge_ops_total{category="Bool"} 0
torchbridge_ops_total{category="Int"} 0
torchbridge_ops_total{category="Float"} 4
torchbridge_ops_total{category="Module"} 0
torchbridge_ops_total{category="Init"} 0
torchbridge_ops_total{category="Custom"} 0
torchbridge_ops_total{category="Drop"} 0
torchbridge_ops_total{category="Distributed"} 0
torchbridge_ops_total{category="Activation"} 0
)";

TEST(HostMetrics, TheTextIsEveryRowInOrder) {
  bridge::HostOptions options;
  std::vector<std::shared_ptr<backend::Backend>> backends;
  for (int i = 0; i < 2; ++i) {
    backend::libtorch::BackendOptions b;
    b.device = "cpu";
    backends.push_back(std::move(backend::libtorch::make_backend(b)).value());
  }
  bridge::HostState host(options, std::move(backends));
  auto& c = host.counters;
  std::uint64_t n = 100;
  for (const Count counter :
       {Count::kSessionsTotal, Count::kSessionsRefused, Count::kTasks, Count::kTasksInline,
        Count::kFramesRejected, Count::kBytesIn, Count::kBytesOut, Count::kConnectionsRefused,
        Count::kSessionsFailed, Count::kTlsHandshakesFailed, Count::kPlainCredentials,
        Count::kRequestsRefused}) {
    c.add(counter, n++);
  }
  std::vector<bridge::GaugeSlot> open;
  for (const auto& [gauge, places] :
       {std::pair{Gauge::kConnections, 7}, {Gauge::kDataConnections, 8}, {Gauge::kRelays, 9}}) {
    for (int i = 0; i < places; ++i) open.push_back(c.open(gauge));
  }
  for (int i = 0; i < 3; ++i) open.push_back(c.open_on_least_loaded_thread().second);
  for (int i = 0; i < 3; ++i) c.count_op(OpKind::NumericFloat_Add);
  for (int i = 0; i < 4; ++i) c.count_op(OpKind::Float_Exp);
  host.memory.add(1234);
  host.device_memory[1]->tensor_bytes = 5678;
  const std::string text = bridge::metrics_text(host);
  host.memory.sub(1234);
  EXPECT_EQ(text, kExpected);
}

}  // namespace
}  // namespace tb::test
