#include "http_routes.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/beast/websocket.hpp>

#include "data_service.hpp"
#include "guard.hpp"
#include "host_state.hpp"
#include "metrics.hpp"
#include "torchbridge/version.hpp"
#include "ws_session.hpp"

namespace tb::bridge {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

HttpConnection::HttpConnection(HostState& host, boost::asio::ip::tcp::socket&& socket,
                               ConnectionSlot slot)
    : host_(host), stream_(std::move(socket)), slot_(std::move(slot)) {}

void HttpConnection::run() {
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
                               beast::error_code ignored;
                               self->stream_.socket().close(ignored);
                             });
                   });
}

void HttpConnection::route() {
  auto req = parser_->release();
  const std::string target(req.target());
  const std::string path = target.substr(0, target.find('?'));
  if (websocket::is_upgrade(req)) {
    if (path == "/session") {
      bool header_ok = false;
      if (host_.options.auth_token) {
        const auto auth = req[http::field::authorization];
        header_ok = constant_time_equal(auth, "Bearer " + *host_.options.auth_token);
      }
      std::make_shared<SessionConnection>(host_, stream_.release_socket(), std::move(slot_),
                                          header_ok)
          ->run(std::move(req));
      return;
    }
    if (path == "/data") {
      // Downloads carry no token (Burn's server sends none), so they get a budget of their own
      // inside the connection limit.
      if (host_.counters.data_connections_open.load() >=
          host_.options.limits.max_data_connections) {
        ++host_.counters.connections_refused;
        return respond(req, http::status::service_unavailable, "text/plain",
                       "too many /data connections\n");
      }
      std::make_shared<DataConnection>(host_, stream_.release_socket(), std::move(slot_),
                                       ConnectionSlot(host_.counters.data_connections_open))
          ->run(std::move(req));
      return;
    }
  }
  if (req.method() == http::verb::get && path == "/healthz") {
    return respond(req, http::status::ok, "text/plain", "ok\n");
  }
  if (req.method() == http::verb::get && path == "/metrics") {
    return respond(req, http::status::ok, "text/plain; version=0.0.4", metrics_text(host_));
  }
  respond(req, http::status::not_found, "text/plain",
          "torchbridge serves websocket /session and /data, GET /healthz, GET /metrics\n");
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
        beast::error_code ec;
        self->stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
      });
}

}  // namespace tb::bridge
