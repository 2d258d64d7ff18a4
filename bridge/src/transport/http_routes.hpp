// The HTTP side of the port: reads one request and routes it. Websocket upgrades on `/session`
// and `/data` become those connections; `GET /healthz`, `GET /metrics` and the admin routes
// (`/v1/models`, admin_routes.cpp) are answered here.
#pragma once

#include <memory>
#include <optional>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "net/any_stream.hpp"
#include "transport/listener.hpp"
#include "transport/routes.hpp"

namespace tb::bridge {

struct HostState;

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(HostState& host, tb::net::AnyStream&& stream, ConnectionSlots slot);
  // Runs the TLS handshake (TLS hosts), then reads the request.
  void run();

 private:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  void read();
  void route();
  // `/v1/models` and `/v1/models/NAME/{load,unload}` (admin_routes.cpp).
  void admin(const Request& req, const Route& route);
  void respond(const Request& req, boost::beast::http::status status, std::string content_type,
               std::string body);

  HostState& host_;
  tb::net::AnyStream stream_;
  ConnectionSlots slot_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
};

}  // namespace tb::bridge
