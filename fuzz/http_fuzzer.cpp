// libFuzzer target for the HTTP side of the port: the bytes of a request, parsed as the host parses
// one (Beast's request_parser with HttpConnection::read's limits), then the request policy under a
// loopback and an open bind (request_policy.hpp), and the route (routes.hpp). Checks that an
// origin off the allowlist is always refused and a refusal quotes only printable text, that the
// host name is a part of the Host header, and that every route is taken exactly when its method,
// path and upgrade say so: no route but the admin ones matches anything but its exact path, and a
// model name that passes the repository's rule stays one folder inside the repository. The input
// also goes to route_of directly as a target, whatever its bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "canonical.hpp"
#include "repository_scan.hpp"
#include "transport/request_policy.hpp"
#include "transport/routes.hpp"

namespace {

namespace http = boost::beast::http;
using tb::bridge::RouteKind;
using tb::fuzz::require;

const tb::bridge::RequestPolicy kLoopback{{"https://app.example", "http://localhost:8080"}, true};
const tb::bridge::RequestPolicy kOpen{{"https://app.example", "http://localhost:8080"}, false};

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

void check_policy(const tb::bridge::RequestPolicy& policy,
                  const tb::bridge::RequestHeaders& headers) {
  const auto why = tb::bridge::refusal(policy, headers);
  const bool origin_ok =
      !headers.origin ||
      std::any_of(policy.allowed_origins.begin(), policy.allowed_origins.end(),
                  [&](const std::string& o) { return equal_ignoring_case(o, *headers.origin); });
  require(origin_ok || why, "an origin off the allowlist let through");
  require(!origin_ok || policy.loopback_bind || !why, "an open bind refused an allowed request");
  require(!origin_ok || headers.host || !why, "a request without Host refused for its host");
  if (why) {
    require(std::all_of(why->begin(), why->end(), [](char c) { return c >= 0x20 && c < 0x7f; }),
            "a refusal quoting unprintable bytes (the log and the 403 body show it)");
  }
}

void check_host(std::string_view host) {
  const std::string_view name = tb::bridge::host_without_port(host);
  require(name.data() >= host.data() && name.data() + name.size() <= host.data() + host.size(),
          "a host name outside its Host header");
}

// Every route is taken exactly when its method, path and upgrade say so.
void check_route(http::verb method, std::string_view target, bool upgrade) {
  const tb::bridge::Route route = tb::bridge::route_of(method, target, upgrade);
  const std::string_view path = target.substr(0, target.find('?'));
  const bool get = method == http::verb::get;
  const std::string_view models = "/v1/models/";
  const bool under_models = path.substr(0, models.size()) == models;
  const bool action = under_models &&
                      path == std::string(models) + route.model + "/" + route.action &&
                      (route.action == "load" || route.action == "unload");
  require((route.kind == RouteKind::kSession) == (upgrade && path == "/session"), "/session");
  require((route.kind == RouteKind::kData) == (upgrade && path == "/data"), "/data");
  if (!(upgrade && (path == "/session" || path == "/data"))) {
    require((route.kind == RouteKind::kHealthz) == (get && path == "/healthz"), "/healthz");
    require((route.kind == RouteKind::kMetrics) == (get && path == "/metrics"), "/metrics");
    require((route.kind == RouteKind::kModelList) == (path == "/v1/models"), "/v1/models");
    require(under_models ==
                (route.kind == RouteKind::kModelAction || route.kind == RouteKind::kModelOther),
            "/v1/models/...");
  }
  if (route.kind == RouteKind::kModelList) require(route.method_ok == get, "GET /v1/models");
  if (route.kind != RouteKind::kModelAction) {
    require(route.model.empty() && route.action.empty(), "a model named off its route");
    return;
  }
  require(action, "a model action that is not /v1/models/NAME/{load,unload}");
  require(route.method_ok == (method == http::verb::post), "POST /v1/models/NAME/ACTION");
  // The control takes only a valid name; one that is stays a folder of the repository.
  if (tb::bridge::models::valid_model_name(route.model)) {
    const std::filesystem::path root("/repository");
    const auto at = (root / route.model).lexically_normal();
    require(at.parent_path() == root && at.filename() == route.model,
            "a valid model name that leaves its folder");
  }
}

void check_request(const http::request<http::string_body>& req) {
  const tb::bridge::RequestHeaders headers = tb::bridge::headers_of(req);
  check_policy(kLoopback, headers);
  check_policy(kOpen, headers);
  if (headers.host) check_host(*headers.host);
  check_route(req.method(), req.target(), boost::beast::websocket::is_upgrade(req));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  if (size > 0) {
    check_route(static_cast<http::verb>(data[0] % 8), std::string_view(input).substr(1),
                data[0] & 0x80);
  }
  http::request_parser<http::string_body> parser;
  parser.body_limit(4096);  // as HttpConnection::read
  parser.header_limit(16 * 1024);
  boost::beast::error_code ec;
  std::size_t at = 0;
  while (!parser.is_done()) {
    const std::size_t used = parser.put(boost::asio::buffer(input.data() + at, size - at), ec);
    at += used;
    if (ec == http::error::need_more && used > 0) continue;
    if (ec == http::error::need_more) parser.put_eof(ec);
    if (ec) return 0;
    if (used == 0 && !parser.is_done()) return 0;
  }
  check_request(parser.release());
  return 0;
}
