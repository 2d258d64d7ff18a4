// A TCP stream that is plain or TLS, chosen per connection at run time. It is the one transport of
// the host's HTTP, websocket and /data connections and of the clients (ours and the host's own
// downloads), so none of them is a template over its transport and a plain host pays one variant
// dispatch per read or write (Beast's advanced_server_flex doubles every session class instead).
// A model of Asio's AsyncReadStream/AsyncWriteStream, with the customization points Beast's
// websocket stream needs (teardown, close on timeout).
#pragma once

#include <chrono>
#include <utility>
#include <variant>

#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

namespace tb::net {

class AnyStream {
 public:
  using Plain = boost::beast::tcp_stream;
  using Tls = boost::beast::ssl_stream<boost::beast::tcp_stream>;
  using executor_type = Plain::executor_type;

  explicit AnyStream(Plain plain) : s_(std::in_place_type<Plain>, std::move(plain)) {}
  // TLS over `plain`, in `context` (which must outlive the stream).
  AnyStream(Plain plain, boost::asio::ssl::context& context)
      : s_(std::in_place_type<Tls>, std::move(plain), context) {}

  bool is_tls() const { return std::holds_alternative<Tls>(s_); }
  Tls& tls() { return std::get<Tls>(s_); }

  Plain& lowest() {
    return std::visit(
        [](auto& s) -> Plain& {
          if constexpr (std::is_same_v<std::decay_t<decltype(s)>, Plain>) {
            return s;
          } else {
            return s.next_layer();
          }
        },
        s_);
  }
  boost::asio::ip::tcp::socket& socket() { return lowest().socket(); }
  template <class Duration>
  void expires_after(Duration d) {
    lowest().expires_after(d);
  }
  void expires_never() { lowest().expires_never(); }
  void close() { lowest().close(); }

  executor_type get_executor() noexcept { return lowest().get_executor(); }

  template <class MutableBuffers, class Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    std::visit([&](auto& s) { s.async_read_some(buffers, std::forward<Handler>(handler)); }, s_);
  }
  template <class ConstBuffers, class Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    std::visit([&](auto& s) { s.async_write_some(buffers, std::forward<Handler>(handler)); }, s_);
  }

  // Beast's websocket close: a TLS close_notify, then the TCP shutdown.
  friend void teardown(boost::beast::role_type role, AnyStream& s, boost::system::error_code& ec) {
    std::visit(
        [&](auto& next) {
          using boost::beast::websocket::teardown;
          teardown(role, next, ec);
        },
        s.s_);
  }
  template <class Handler>
  friend void async_teardown(boost::beast::role_type role, AnyStream& s, Handler&& handler) {
    std::visit(
        [&](auto& next) {
          using boost::beast::websocket::async_teardown;
          async_teardown(role, next, std::forward<Handler>(handler));
        },
        s.s_);
  }
  // What Beast's websocket timeout closes.
  friend void beast_close_socket(AnyStream& s) { s.close(); }

 private:
  std::variant<Plain, Tls> s_;
};

}  // namespace tb::net
