// Who may use the host's routes, decided from the request's headers alone, before any route runs.
// A pure function, tested without sockets (tests/bridge/request_policy_test.cpp).
//
// Burn's client and ours send no `Origin`; browsers always send one. Without this check, any web
// page open in a browser on the same machine could open `/session` on a loopback host and run ops,
// read tensors and use memory (cross-site websocket hijacking), and a DNS-rebinding page could
// reach every route under a name of its own. So:
//   - a request carrying an `Origin` is refused unless the origin is on the allowlist
//     (--allow-origin, empty by default);
//   - on a loopback bind, a request whose `Host` is not a loopback name or address is refused.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::bridge {

struct RequestPolicy {
  // Origins a browser page may connect from, exactly as browsers send them ("https://app.example",
  // "http://localhost:8080"); compared without regard to case.
  std::vector<std::string> allowed_origins;
  // The host listens on a loopback address only: its clients name it by a loopback name.
  bool loopback_bind = true;
};

// The request's headers that decide; nullopt where the request has none.
struct RequestHeaders {
  std::optional<std::string_view> origin;
  std::optional<std::string_view> host;
};

// Why the request is refused (for the 403 body and the log), or nullopt when it may go on.
std::optional<std::string> refusal(const RequestPolicy& policy, const RequestHeaders& headers);

// The host part of a `Host` header value: "127.0.0.1:3000" -> "127.0.0.1", "[::1]:3000" -> "::1",
// "localhost" -> "localhost".
std::string_view host_without_port(std::string_view host);

}  // namespace tb::bridge
