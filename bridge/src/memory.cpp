#include "memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "torchbridge/decimal.hpp"
#include "torchbridge/ir/block_cache.hpp"

namespace tb::bridge {

namespace {
std::uint64_t cgroup_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max",                       // cgroup v2
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {  // v1
    std::ifstream in(path);
    std::string value;
    if (in >> value) {
      if (const auto limit = parse_decimal(value)) return *limit;  // "max": no limit
    }
  }
  return UINT64_MAX;
}
}  // namespace

std::uint64_t available_memory_bytes() {
  static const std::uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    const std::uint64_t phys =
        pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                              : std::uint64_t{8} << 30;
    return std::min(phys, cgroup_limit());
  }();
  return bytes;
}

}  // namespace tb::bridge

#include "torchbridge/bridge/host.hpp"

namespace tb::bridge {
std::uint64_t device_limit(std::optional<std::uint64_t> asked, std::uint64_t total) {
  if (asked) return *asked;
  return static_cast<std::uint64_t>(static_cast<double>(total) * kDefaultDeviceShare);
}

std::uint64_t default_session_bytes() {
  return available_memory_bytes() / 2;
}
std::uint64_t default_host_bytes() {
  return available_memory_bytes() / 4 * 3;
}
std::optional<std::uint64_t> host_bytes_over(std::uint64_t limit, std::uint64_t tensors,
                                             std::uint64_t held, std::uint64_t extra,
                                             ir::BlockCache* blocks) {
  if (!limit) return std::nullopt;
  const std::uint64_t cached = blocks ? blocks->bytes() : 0;
  std::uint64_t host = tensors + held + extra + cached;
  if (host > limit && cached > 0) {
    host -= cached;
    blocks->trim();
  }
  if (host > limit) return host;
  return std::nullopt;
}

}  // namespace tb::bridge
