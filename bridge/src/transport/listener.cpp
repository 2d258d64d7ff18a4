#include "transport/listener.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "guard.hpp"
#include "host_state.hpp"
#include "transport/http_routes.hpp"

namespace tb::bridge {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

std::string peer_of(const tcp::socket& s) {
  boost::system::error_code ec;
  const auto ep = s.remote_endpoint(ec);
  return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

std::string address_of(const tcp::socket& s) {
  boost::system::error_code ec;
  const auto ep = s.remote_endpoint(ec);
  return ec ? std::string("?") : ep.address().to_string();
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

Status Listener::listen(const std::string& host, std::uint16_t port) {
  boost::system::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "invalid listen address \"{}\": {}", host,
                      ec.message());
  }
  const tcp::endpoint endpoint(address, port);
  protocol_ = endpoint.protocol();
  acceptor_.open(protocol_, ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot listen on {}:{}: {}", host, port, ec.message());
  return ok();
}

std::uint16_t Listener::port() const {
  boost::system::error_code ec;
  const auto ep = acceptor_.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void Listener::close() {
  net::dispatch(acceptor_.get_executor(), [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
}

void Listener::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    on_accept(ec, std::move(socket));
  });
}

void Listener::on_accept(boost::system::error_code ec, tcp::socket socket) {
  if (host_.stopping || !acceptor_.is_open()) {
    boost::system::error_code ignored;
    socket.close(ignored);
    return;
  }
  if (ec) {
    if (ec != net::error::operation_aborted && !host_.stopping) {
      spdlog::warn("accept: {}", ec.message());
    }
    if (!acceptor_.is_open()) return;
    return accept();
  }
  guarded(
      [&] {
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        socket.set_option(net::socket_base::keep_alive(true), ignored);
        // Only this handler adds connections (one accept at a time), yet try_open tests and
        // takes a place in one step all the same.
        auto open =
            host_.counters.try_open(Gauge::kConnections, host_.options.limits.max_connections);
        if (!open) {
          const auto n = host_.counters.add(Count::kConnectionsRefused);
          // Logged at 1, 2, 4, 8, ...: a flood of refusals must not become a flood of log lines.
          if ((n & (n - 1)) == 0) {
            spdlog::warn(
                "{}: connection refused: {} connections open, the limit ({} refused so far)",
                peer_of(socket), host_.options.limits.max_connections, n);
          }
          socket.close(ignored);
          return;
        }
        // The descriptor moves to its network thread's context; from here on every handler of the
        // connection runs on that thread.
        auto [thread, on_thread] = host_.counters.open_on_least_loaded_thread();
        beast::tcp_stream tcp(tcp::socket(pool_.context(thread), protocol_, socket.release()));
        auto stream = host_.tls_server ? tb::net::AnyStream(std::move(tcp), *host_.tls_server)
                                       : tb::net::AnyStream(std::move(tcp));
        std::make_shared<HttpConnection>(host_, std::move(stream),
                                         ConnectionSlots{std::move(*open), std::move(on_thread)})
            ->run();
      },
      [&](const std::string& what) {
        spdlog::error("accept: {}; the connection is dropped", what);
        boost::system::error_code ignored;
        socket.close(ignored);
      });
  accept();
}

}  // namespace tb::bridge
