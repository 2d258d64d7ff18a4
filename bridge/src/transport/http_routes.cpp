#include "transport/http_routes.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/beast/websocket.hpp>

#include "cluster/relay.hpp"
#include "guard.hpp"
#include "host_state.hpp"
#include "metrics.hpp"
#include "torchbridge/version.hpp"
#include "transport/data_service.hpp"
#include "transport/request_policy.hpp"
#include "transport/routes.hpp"
#include "transport/ws_session.hpp"

namespace tb::bridge {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

namespace {

// The transfer scope a relaying member names (relay.hpp), taken only from a member: one that
// presented the token, or, on a federation without one, one at a member's address.
std::optional<std::string> relayed_scope(const HostState& host,
                                         const http::request<http::string_body>& req,
                                         bool header_ok, const std::string& peer) {
  const auto it = req.find(kRelayedScopeHeader);
  if (!host.options.federation || it == req.end()) return std::nullopt;
  if (host.options.auth_token ? !header_ok : !is_member_host(*host.options.federation, peer)) {
    spdlog::warn("{}: a relayed transfer scope from a peer that is no member, ignored", peer);
    return std::nullopt;
  }
  return std::string(it->value());
}

}  // namespace

HttpConnection::HttpConnection(HostState& host, tb::net::AnyStream&& stream, ConnectionSlots slot)
    : host_(host), stream_(std::move(stream)), slot_(std::move(slot)) {}

void HttpConnection::run() {
  if (!stream_.is_tls()) return read();
  // The handshake shares the request's 30 s: a client that connects and sends nothing holds its
  // slot no longer than a plain one.
  stream_.expires_after(std::chrono::seconds(30));
  stream_.async_handshake(
      boost::asio::ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
        if (ec) {
          const auto n = self->host_.counters.add(Count::kTlsHandshakesFailed);
          if ((n & (n - 1)) == 0) {  // 1, 2, 4, ...: a flood must not flood the log
            spdlog::info("{}: TLS handshake failed: {} ({} so far)",
                         peer_of(self->stream_.socket()), ec.message(), n);
          }
          return;
        }
        guarded([&] { self->read(); },
                [&](const std::string& what) {
                  spdlog::error("https: {}; the connection is dropped", what);
                  self->stream_.close();
                });
      });
}

void HttpConnection::read() {
  parser_.emplace();
  parser_->body_limit(4096);
  parser_->header_limit(16 * 1024);
  stream_.expires_after(std::chrono::seconds(30));
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) {
                     if (ec) return;
                     guarded([&] { self->route(); },
                             [&](const std::string& what) {
                               spdlog::error("http: {}; the connection is dropped", what);
                               self->stream_.close();
                             });
                   });
}

void HttpConnection::route() {
  auto req = parser_->release();
  if (auto why = refusal(host_.request_policy, headers_of(req))) {
    const auto n = host_.counters.add(Count::kRequestsRefused);
    if ((n & (n - 1)) == 0) {  // 1, 2, 4, ...: a page retrying must not flood the log
      spdlog::warn("{}: {} ({} so far)", peer_of(stream_.socket()), *why, n);
    }
    return respond(req, http::status::forbidden, "text/plain", *why + "\n");
  }
  const Route route = route_of(req.method(), req.target(), websocket::is_upgrade(req));
  if (route.kind == RouteKind::kSession || route.kind == RouteKind::kData) {
    bool header_ok = false;
    if (host_.options.auth_token) {
      const auto auth = req[http::field::authorization];
      header_ok = constant_time_equal(auth, "Bearer " + *host_.options.auth_token);
    }
    if (route.kind == RouteKind::kSession) {
      // The websocket stream keeps its own timers; the HTTP read's must not close it later.
      // (Every other answer, a refusal included, is written under the read's deadline.)
      stream_.expires_never();
      auto scope = relayed_scope(host_, req, header_ok, address_of(stream_.socket()));
      std::make_shared<SessionConnection>(host_, std::move(stream_), std::move(slot_), header_ok,
                                          std::move(scope))
          ->run(std::move(req));
      return;
    }
    // Downloads carry no token (Burn's server sends none), so they get a budget of their own
    // inside the connection limit.
    auto data_slot =
        host_.counters.try_open(Gauge::kDataConnections, host_.options.limits.max_data_connections);
    if (!data_slot) {
      host_.counters.add(Count::kConnectionsRefused);
      return respond(req, http::status::service_unavailable, "text/plain",
                     "too many /data connections\n");
    }
    stream_.expires_never();
    // A member: with a token, one that presented it; without, one at a member's address.
    const bool member = host_.options.federation &&
                        (host_.options.auth_token ? header_ok
                                                  : is_member_host(*host_.options.federation,
                                                                   address_of(stream_.socket())));
    std::make_shared<DataConnection>(host_, std::move(stream_), std::move(slot_),
                                     std::move(*data_slot), member)
        ->run(std::move(req));
    return;
  }
  switch (route.kind) {
    case RouteKind::kHealthz:
      return respond(req, http::status::ok, "text/plain", "ok\n");
    case RouteKind::kMetrics:
      return respond(req, http::status::ok, "text/plain; version=0.0.4", metrics_text(host_));
    case RouteKind::kModelList:
    case RouteKind::kModelAction:
    case RouteKind::kModelOther:
      return admin(req, route);
    default:
      return respond(req, http::status::not_found, "text/plain",
                     "torchbridge serves websocket /session and /data, GET /healthz, GET "
                     "/metrics\n");
  }
}

void HttpConnection::respond(const Request& req, http::status status, std::string content_type,
                             std::string body) {
  auto res = std::make_shared<http::response<http::string_body>>();
  res->version(req.version());
  res->result(status);
  res->set(http::field::server, fmt::format("torchbridge/{}", kVersion));
  res->set(http::field::content_type, content_type);
  res->keep_alive(false);
  res->body() = std::move(body);
  res->prepare_payload();
  http::async_write(
      stream_, *res, [self = shared_from_this(), res](beast::error_code, std::size_t) {
        if (self->stream_.is_tls()) {
          // close_notify, bounded: a peer that never answers it is dropped at the expiry.
          self->stream_.expires_after(std::chrono::seconds(5));
          self->stream_.async_shutdown([self](beast::error_code) { self->stream_.close(); });
          return;
        }
        beast::error_code ec;
        self->stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
      });
}

}  // namespace tb::bridge
