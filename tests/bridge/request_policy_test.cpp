// Web pages on the same machine (issue 39, finding 1): a request carrying a browser's `Origin` not
// on --allow-origin, or naming the loopback host by a non-loopback `Host` (DNS rebinding), is
// refused on every route (`/session`, `/data`, `/healthz`, `/metrics`) before the route runs.
// Before, a page at https://evil.example could open /session on a loopback host and run ops.
// The decision is a pure function (request_policy.hpp), tested first without sockets.
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "bridge/host_raw_client.hpp"
#include "transport/request_policy.hpp"

namespace tb::test {
namespace {

using bridge::refusal;
using bridge::RequestHeaders;
using bridge::RequestPolicy;
using ::testing::HasSubstr;

TEST(RequestPolicy, AnOriginNotAllowedIsRefused) {
  const RequestPolicy policy{{}, true};
  EXPECT_TRUE(refusal(policy, RequestHeaders{"https://evil.example", "127.0.0.1:3000"}));
  EXPECT_TRUE(refusal(policy, RequestHeaders{"null", "127.0.0.1:3000"}));
  EXPECT_TRUE(refusal(policy, RequestHeaders{"", std::nullopt}));
  EXPECT_FALSE(refusal(policy, RequestHeaders{std::nullopt, "127.0.0.1:3000"}))
      << "Burn's client sends no Origin";
  const RequestPolicy allowing{{"https://app.example"}, true};
  EXPECT_FALSE(refusal(allowing, RequestHeaders{"https://app.example", "localhost:3000"}));
  EXPECT_FALSE(refusal(allowing, RequestHeaders{"HTTPS://APP.example", "localhost:3000"}));
  EXPECT_TRUE(refusal(allowing, RequestHeaders{"https://app.example.evil", "localhost"}));
  EXPECT_TRUE(refusal(allowing, RequestHeaders{"http://app.example", "localhost"}));
  EXPECT_THAT(*refusal(policy, RequestHeaders{"https://evil.example", std::nullopt}),
              HasSubstr("--allow-origin"));
}

TEST(RequestPolicy, OnALoopbackBindOnlyLoopbackHostNamesAreServed) {
  const RequestPolicy loopback{{}, true};
  for (const char* host :
       {"127.0.0.1", "127.0.0.1:3000", "127.1.2.3:80", "localhost", "LOCALHOST:3000", "localhost.",
        "app.localhost:3000", "[::1]:3000", "[::1]", "::1"}) {
    EXPECT_FALSE(refusal(loopback, RequestHeaders{std::nullopt, host})) << host;
  }
  for (const char* host :
       {"evil.example", "evil.example:3000", "10.0.0.1:3000", "", "localhost.evil",
        "127.0.0.1.evil.example", "[::2]:3000", "0.0.0.0:3000"}) {
    EXPECT_TRUE(refusal(loopback, RequestHeaders{std::nullopt, host})) << host;
  }
  // A host bound to another address is named by whatever its clients resolve; the token guards it.
  const RequestPolicy wide{{}, false};
  EXPECT_FALSE(refusal(wide, RequestHeaders{std::nullopt, "gpu-box.internal:3000"}));
  EXPECT_TRUE(refusal(wide, RequestHeaders{"https://evil.example", "gpu-box.internal:3000"}));
}

TEST(RequestPolicy, HostWithoutPort) {
  EXPECT_EQ(bridge::host_without_port("127.0.0.1:3000"), "127.0.0.1");
  EXPECT_EQ(bridge::host_without_port("[::1]:3000"), "::1");
  EXPECT_EQ(bridge::host_without_port("::1"), "::1");
  EXPECT_EQ(bridge::host_without_port("localhost"), "localhost");
  EXPECT_EQ(bridge::host_without_port("[::1"), "[::1");
}

namespace http = boost::beast::http;
using Headers = std::vector<std::pair<http::field, std::string>>;

// One request on a fresh connection: its status code (0 when nothing came back). `upgrade` adds a
// websocket upgrade's headers.
int status_of(std::uint16_t port, const std::string& target, const Headers& headers, bool upgrade) {
  boost::asio::io_context ioc;
  boost::beast::tcp_stream stream(ioc);
  stream.expires_after(10s);
  boost::system::error_code ec;
  stream.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return 0;
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  if (upgrade) {
    req.set(http::field::connection, "Upgrade");
    req.set(http::field::upgrade, "websocket");
    req.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
    req.set(http::field::sec_websocket_version, "13");
  }
  for (const auto& [field, value] : headers) req.set(field, value);
  http::write(stream, req, ec);
  if (ec) return 0;
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> res;
  res.skip(false);
  http::read_header(stream, buffer, res, ec);
  return ec ? 0 : static_cast<int>(res.get().result_int());
}

struct Route {
  const char* path;
  bool upgrade;
  int served;  // the status when the request may go on
};
constexpr Route kRoutes[] = {{"/session", true, 101},
                             {"/data", true, 101},
                             {"/healthz", false, 200},
                             {"/metrics", false, 200}};

TEST(RequestPolicy, EveryRouteRefusesAWebPageAndARebindingName) {
  ConfiguredHost host(bridge::HostOptions{});
  for (const auto& r : kRoutes) {
    SCOPED_TRACE(r.path);
    EXPECT_EQ(status_of(host.port(), r.path, {}, r.upgrade), r.served);
    EXPECT_EQ(
        status_of(host.port(), r.path, {{http::field::origin, "https://evil.example"}}, r.upgrade),
        403);
    EXPECT_EQ(status_of(host.port(), r.path, {{http::field::host, "evil.example:3000"}}, r.upgrade),
              403);
  }
  EXPECT_EQ(host.metrics().requests_refused, 8u);
  // The host goes on serving Burn's clients.
  Session s(host.port(), 0);
  EXPECT_FALSE(std::holds_alternative<ExecutionError>(s.sync()));
}

TEST(RequestPolicy, AnAllowedOriginIsServed) {
  bridge::HostOptions o;
  o.allowed_origins = {"http://localhost:8080"};
  ConfiguredHost host(o);
  for (const auto& r : kRoutes) {
    SCOPED_TRACE(r.path);
    EXPECT_EQ(
        status_of(host.port(), r.path, {{http::field::origin, "http://localhost:8080"}}, r.upgrade),
        r.served);
    EXPECT_EQ(
        status_of(host.port(), r.path, {{http::field::origin, "http://localhost:8081"}}, r.upgrade),
        403);
  }
}

}  // namespace
}  // namespace tb::test
