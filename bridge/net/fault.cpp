#include "fault.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace tb::net::fault {

namespace detail {
std::atomic<bool> armed{false};
}  // namespace detail

namespace {

constexpr std::string_view kNames[] = {"stream_write", "post"};
static_assert(std::size(kNames) == static_cast<std::size_t>(Point::kCount));

struct Plan {
  std::atomic<std::uint64_t> hits{0};
  std::uint64_t skip = 0;
  std::uint64_t count = 0;
};
Plan plans[static_cast<std::size_t>(Point::kCount)];

bool parse_number(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  out = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || out > (UINT64_MAX - 9) / 10) return false;
    out = out * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return true;
}

// One "point:skip:count"; false when it names no point, its numbers are not numbers or it fails
// nothing (a count of 0).
bool parse_entry(std::string_view entry) {
  const auto first = entry.find(':');
  const auto second = entry.find(':', first == std::string_view::npos ? first : first + 1);
  if (first == std::string_view::npos || second == std::string_view::npos) return false;
  const std::string_view name = entry.substr(0, first);
  for (std::size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] != name) continue;
    return parse_number(entry.substr(first + 1, second - first - 1), plans[i].skip) &&
           parse_number(entry.substr(second + 1), plans[i].count) && plans[i].count > 0;
  }
  return false;
}

}  // namespace

bool detail::hit_slow(Point point) noexcept {
  Plan& plan = plans[static_cast<std::size_t>(point)];
  if (plan.count == 0) return false;
  const std::uint64_t n = plan.hits.fetch_add(1, std::memory_order_relaxed);
  if (n < plan.skip || n - plan.skip >= plan.count) return false;
  // On stderr, so that a stray TB_FAULT is seen (stdout's first line is the host's address).
  std::fprintf(stderr, "TB_FAULT: %s, hit %llu, fails on purpose\n",
               kNames[static_cast<std::size_t>(point)].data(), static_cast<unsigned long long>(n));
  return true;
}

void arm_from_environment() noexcept {
  static std::atomic<bool> once{false};
  if (once.exchange(true)) return;
  const char* spec = std::getenv("TB_FAULT");
  if (spec == nullptr || *spec == '\0') return;
  std::string_view rest(spec);
  bool any = false;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    any |= parse_entry(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  detail::armed.store(any, std::memory_order_relaxed);
}

}  // namespace tb::net::fault
