// The one instantiation of every TLS and TCP operation under AnyStream (any_stream.hpp says why).
#include "any_stream.hpp"

#include <new>

#include "fault.hpp"

namespace tb::net {

void AnyStream::read_some(BufferPrefix<boost::asio::mutable_buffer> buffers, IoHandler handler) {
  std::visit([&](auto& s) { s.async_read_some(buffers, std::move(handler)); }, s_);
}

void AnyStream::write_some(BufferPrefix<boost::asio::const_buffer> buffers, IoHandler handler) {
  if (fault::hit(fault::Point::kStreamWrite)) throw std::bad_alloc();
  std::visit([&](auto& s) { s.async_write_some(buffers, std::move(handler)); }, s_);
}

void AnyStream::handshake(boost::asio::ssl::stream_base::handshake_type type, DoneHandler handler) {
  tls().async_handshake(type, std::move(handler));
}

void AnyStream::shutdown(DoneHandler handler) {
  tls().async_shutdown(std::move(handler));
}

void AnyStream::teardown_async(boost::beast::role_type role, DoneHandler handler) {
  std::visit(
      [&](auto& next) {
        using boost::beast::websocket::async_teardown;
        async_teardown(role, next, std::move(handler));
      },
      s_);
}

void teardown(boost::beast::role_type role, AnyStream& s, boost::system::error_code& ec) {
  std::visit(
      [&](auto& next) {
        using boost::beast::websocket::teardown;
        teardown(role, next, ec);
      },
      s.s_);
}

}  // namespace tb::net
