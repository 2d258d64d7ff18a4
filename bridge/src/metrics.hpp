// The host's metrics: collected from the counters and the registry, and rendered as Prometheus
// text for GET /metrics.
#pragma once

#include <string>

#include "torchbridge/bridge/host.hpp"

namespace tb::bridge {

struct HostState;

HostMetrics collect_metrics(const HostState& host);
std::string metrics_text(const HostState& host);

}  // namespace tb::bridge
