#include "transport/request_policy.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "net/tls.hpp"

namespace tb::bridge {

namespace {

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// A loopback name: localhost (and its subdomains, which resolvers keep on loopback, RFC 6761),
// 127.0.0.0/8 or ::1. A trailing dot is the same name.
bool loopback_name(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  std::string lower(host);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  constexpr std::string_view kLocal = ".localhost";
  if (lower.size() > kLocal.size() &&
      lower.compare(lower.size() - kLocal.size(), kLocal.size(), kLocal) == 0) {
    return true;
  }
  return tb::net::is_loopback(lower);
}

// What a log line may show of a header a stranger chose: printable ASCII, at most 100 characters.
std::string printable(std::string_view v) {
  std::string out;
  for (const char c : v.substr(0, 100)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

}  // namespace

std::string_view host_without_port(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    return close == std::string_view::npos ? host : host.substr(1, close - 1);
  }
  const auto colon = host.find(':');
  // More than one colon and no brackets: a bare IPv6 address, no port.
  if (colon != std::string_view::npos && host.find(':', colon + 1) == std::string_view::npos) {
    return host.substr(0, colon);
  }
  return host;
}

std::optional<std::string> refusal(const RequestPolicy& policy, const RequestHeaders& headers) {
  if (headers.origin) {
    const bool allowed =
        std::any_of(policy.allowed_origins.begin(), policy.allowed_origins.end(),
                    [&](const std::string& o) { return equal_ignoring_case(o, *headers.origin); });
    if (!allowed) {
      return fmt::format(
          "a request from the web page origin \"{}\" is refused: browsers' pages may use this "
          "host only from an origin given with --allow-origin",
          printable(*headers.origin));
    }
  }
  if (policy.loopback_bind && headers.host && !loopback_name(host_without_port(*headers.host))) {
    return fmt::format(
        "a request for the host name \"{}\" is refused: this host listens on loopback only and "
        "answers only to loopback names (localhost, 127.0.0.1, [::1])",
        printable(*headers.host));
  }
  return std::nullopt;
}

}  // namespace tb::bridge
