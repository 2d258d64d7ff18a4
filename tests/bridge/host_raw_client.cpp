#include "bridge/host_raw_client.hpp"

#include <fstream>
#include <sstream>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "torchbridge/decimal.hpp"

namespace tb::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

struct RawClient::Impl {
  Impl() : ws(ioc) {}

  // Runs one asynchronous operation to its end or to `timeout`, whichever comes first.
  template <class Op>
  beast::error_code run(std::chrono::milliseconds timeout, Op op) {
    beast::error_code result = net::error::would_block;
    beast::get_lowest_layer(ws).expires_after(timeout);
    op([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    return result;
  }

  net::io_context ioc;
  websocket::stream<beast::tcp_stream> ws;
};

bool RawClient::Reply::closed() const {
  return ec == websocket::error::closed;
}
bool RawClient::Reply::ended() const {
  return ec && ec != beast::error::timeout;
}

RawClient::RawClient() : impl_(std::make_unique<Impl>()) {}
RawClient::~RawClient() {
  drop();
}

beast::error_code RawClient::open(std::uint16_t port, const std::string& path,
                                  std::optional<std::string> authorization) {
  auto& ws = impl_->ws;
  const net::ip::tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), port);
  auto ec =
      impl_->run(5s, [&](auto done) { beast::get_lowest_layer(ws).async_connect(endpoint, done); });
  if (ec) return ec;
  if (authorization) {
    ws.set_option(
        websocket::stream_base::decorator([a = *authorization](websocket::request_type& req) {
          req.set(beast::http::field::authorization, a);
        }));
  }
  ec = impl_->run(
      5s, [&](auto done) { ws.async_handshake(fmt::format("127.0.0.1:{}", port), path, done); });
  ws.binary(true);
  ws.read_message_max(std::uint64_t{1} << 31);
  return ec;
}

bool RawClient::open_session(std::uint16_t port, std::uint64_t session_id, std::uint32_t device,
                             const std::string& token) {
  if (open(port)) return false;
  if (send(encode(ClientFrame{SessionInit{kProtocolVersion, SessionId{session_id}, device,
                                          Bytes::copy_of(token.data(), token.size())}}))) {
    return false;
  }
  auto r = response();
  return r && std::holds_alternative<InitResponse>(r->content);
}

beast::error_code RawClient::send(const std::vector<std::uint8_t>& bytes,
                                  std::chrono::milliseconds timeout) {
  return impl_->run(timeout, [&](auto done) { impl_->ws.async_write(net::buffer(bytes), done); });
}

beast::error_code RawClient::send_tasks(std::vector<Task> tasks) {
  ClientFrame frame;
  for (auto& t : tasks) frame.emplace_back(std::move(t));
  return send(encode(frame));
}

beast::error_code RawClient::send_partial_message(const std::vector<std::uint8_t>& bytes) {
  return impl_->run(
      5s, [&](auto done) { impl_->ws.async_write_some(false, net::buffer(bytes), done); });
}

beast::error_code RawClient::send_raw(const std::vector<std::uint8_t>& bytes) {
  return impl_->run(5s, [&](auto done) {
    net::async_write(beast::get_lowest_layer(impl_->ws).socket(), net::buffer(bytes), done);
  });
}

RawClient::Reply RawClient::read(std::chrono::milliseconds timeout) {
  Reply r;
  beast::flat_buffer buffer;
  r.ec = impl_->run(timeout, [&](auto done) { impl_->ws.async_read(buffer, done); });
  if (!r.ec) {
    const auto d = buffer.data();
    const auto* p = static_cast<const std::uint8_t*>(d.data());
    r.bytes.assign(p, p + d.size());
  } else if (r.closed()) {
    r.close_code = static_cast<std::uint16_t>(impl_->ws.reason().code);
    r.close_reason = std::string(impl_->ws.reason().reason);
  }
  return r;
}

std::optional<TaskResponse> RawClient::response(std::chrono::milliseconds timeout) {
  auto r = read(timeout);
  if (r.ec) return std::nullopt;
  auto decoded = decode<TaskResponse>(Bytes::copy_of(r.bytes.data(), r.bytes.size()));
  if (!decoded) return std::nullopt;
  return std::move(decoded).value();
}

std::size_t RawClient::unread_bytes() {
  beast::error_code ec;
  const std::size_t n = beast::get_lowest_layer(impl_->ws).socket().available(ec);
  return ec ? 0 : n;
}

void RawClient::drop() {
  beast::error_code ec;
  auto& s = beast::get_lowest_layer(impl_->ws).socket();
  if (!s.is_open()) return;
  s.shutdown(net::ip::tcp::socket::shutdown_both, ec);
  s.close(ec);
}

std::uint64_t bytes_in_flight_to(std::uint16_t port) {
  std::uint64_t total = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // "sl local_address rem_address st tx_queue:rx_queue ...", addresses as HEXIP:HEXPORT.
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues;
      if (!(fields >> slot >> local >> remote >> state >> queues)) continue;
      const auto port_of = [](const std::string& address) {
        return std::stoul(address.substr(address.rfind(':') + 1), nullptr, 16);
      };
      const auto colon = queues.find(':');
      const std::uint64_t tx = std::stoull(queues.substr(0, colon), nullptr, 16);
      const std::uint64_t rx = std::stoull(queues.substr(colon + 1), nullptr, 16);
      // A listening socket's rx_queue counts connections waiting for accept(), not bytes.
      constexpr const char* kListen = "0A";
      if (port_of(local) == port && state != kListen) total += rx;
      if (port_of(remote) == port) total += tx;
    }
  }
  return total;
}

std::string get_metrics_text(std::uint16_t port) {
  namespace http = beast::http;
  beast::error_code ec;
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.expires_after(5s);
  stream.connect({net::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return {};
  http::request<http::empty_body> request{http::verb::get, "/metrics", 11};
  request.set(http::field::host, "127.0.0.1");
  http::write(stream, request, ec);
  if (ec) return {};
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response, ec);
  if (ec || response.result() != http::status::ok) return {};
  return response.body();
}

std::optional<std::uint64_t> metric_value(std::uint16_t port, const std::string& name) {
  std::istringstream lines(get_metrics_text(port));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(name + " ", 0) == 0) {
      return parse_decimal(std::string_view(line).substr(name.size() + 1));
    }
  }
  return std::nullopt;
}

}  // namespace tb::test
