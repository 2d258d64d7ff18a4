// Opening a client Session: the socket (TCP, TLS, the websocket upgrade), the Init and its answer,
// then the network thread that reads every later answer.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "net/secure_random.hpp"
#include "net/tls.hpp"
#include "session.hpp"
#include "session_io.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::client::detail {
namespace {

using tcp = net::ip::tcp;

// A client masks every byte it sends into this buffer, then writes it: Beast's default of 4 KiB
// made an upload one system call per 4 KiB.
constexpr std::size_t kWriteBufferBytes = 256 * 1024;

}  // namespace

Status Session::open() {
  TB_TRY(connect_socket());
  TB_TRY(greet());
  start_io();
  return ok();
}

Status Session::connect_socket() {
  auto& io = *io_;
  const auto where = describe();
  const auto timeout = options_.connect_timeout;
  const bool secure = io.ws.next_layer().is_tls();
  const std::string port = peer_.port ? std::to_string(*peer_.port) : secure ? "443" : "80";
  const std::string host(tb::net::unbracketed(peer_.host));

  // Host names here are loopback or numeric in practice; the resolver answers at once for those.
  tcp::resolver resolver(io.ioc);
  beast::error_code resolve_ec;
  const auto endpoints = resolver.resolve(host, port, resolve_ec);
  if (resolve_ec) {
    return make_error(ErrorCode::kIo, "{}: cannot resolve the host: {}", where,
                      resolve_ec.message());
  }
  auto ec = run_bounded(io.ioc, io.ws, timeout, [&](auto done) {
    io.ws.next_layer().lowest().async_connect(endpoints, done);
  });
  if (ec) return make_error(ErrorCode::kIo, "{}: cannot connect: {}", where, ec.message());
  beast::get_lowest_layer(io.ws).socket().set_option(tcp::no_delay(true), ec);
  if (secure) {
    TB_TRY(tb::net::prepare_client(io.ws.next_layer().tls(), host));
    ec = run_bounded(io.ioc, io.ws, timeout, [&](auto done) {
      io.ws.next_layer().async_handshake(net::ssl::stream_base::client, done);
    });
    if (ec) {
      return make_error(ErrorCode::kIo, "{}: TLS handshake failed: {}", where, ec.message());
    }
  }

  const std::string host_header =
      peer_.port ? fmt::format("{}:{}", peer_.host, *peer_.port) : peer_.host;
  ec = run_bounded(io.ioc, io.ws, timeout,
                   [&](auto done) { io.ws.async_handshake(host_header, "/session", done); });
  if (ec) {
    return make_error(ErrorCode::kIo, "{}: websocket upgrade on /session failed: {}", where,
                      ec.message());
  }
  io.ws.binary(true);
  // Burn's client writes each message as one frame and accepts messages of any size.
  io.ws.auto_fragment(false);
  io.ws.read_message_max(0);
  io.ws.write_buffer_bytes(kWriteBufferBytes);
  return ok();
}

Status Session::greet() {
  auto& io = *io_;
  const auto where = describe();
  const auto timeout = options_.connect_timeout;
  // The handshake: one frame holding exactly one Init, answered first with id 0.
  session_id_ = options_.session_id ? *options_.session_id : tb::net::secure_random_u64();
  const std::vector<std::uint8_t> credential(options_.credential.begin(),
                                             options_.credential.end());
  const ir::ClientFrame init{
      ir::SessionInit{ir::kProtocolVersion, ir::SessionId{session_id_}, index_,
                      ir::Bytes::copy_of(credential.data(), credential.size())}};
  const auto init_bytes = ir::encode(init);
  auto ec = run_bounded(io.ioc, io.ws, timeout,
                        [&](auto done) { io.ws.async_write(net::buffer(init_bytes), done); });
  if (ec) return make_error(ErrorCode::kIo, "{}: sending Init failed: {}", where, ec.message());
  ec = run_bounded(io.ioc, io.ws, timeout,
                   [&](auto done) { io.ws.async_read(io.read_buffer, done); });
  if (ec == beast::error::timeout) {
    return make_error(ErrorCode::kTimeout, "{}: no answer to Init within {} ms", where,
                      timeout.count());
  }
  if (ec) {
    return make_error(ErrorCode::kIo, "{}: the host closed the session before answering Init ({})",
                      where, ec.message());
  }
  const auto d = io.read_buffer.data();
  auto reply = ir::decode<ir::TaskResponse>(ir::Bytes::copy_of(d.data(), d.size()));
  io.read_buffer.consume(io.read_buffer.size());
  if (!reply) {
    return with_context(reply.error(), fmt::format("{}: the answer to Init", where));
  }
  return accept_init_answer(reply.value());
}

Status Session::accept_init_answer(const ir::TaskResponse& reply) {
  const auto where = describe();
  if (const auto* refused = std::get_if<ir::InitRefusedResponse>(&reply.content)) {
    switch (refused->refusal.kind) {
      case ir::RefusalKind::Unauthorized:
        return make_error(ErrorCode::kUnauthorized, "{}: the host refused the credential", where);
      case ir::RefusalKind::NoSuchDevice:
        return make_error(ErrorCode::kNotFound, "{}: the host has {} device(s), no device {}",
                          where, refused->refusal.value, index_);
      case ir::RefusalKind::IncompatibleProtocol:
        return make_error(ErrorCode::kUnsupported,
                          "{}: the host speaks protocol version {}, this client {}", where,
                          refused->refusal.value, ir::kProtocolVersion);
    }
  }
  const auto* init_reply = std::get_if<ir::InitResponse>(&reply.content);
  if (!init_reply) {
    return make_error(ErrorCode::kDecode, "{}: expected the Init answer, got {}", where,
                      ir::response_name(reply.content));
  }
  if (init_reply->info.version != ir::kProtocolVersion) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: the host speaks protocol version {}, this client {}", where,
                      init_reply->info.version, ir::kProtocolVersion);
  }
  info_ = init_reply->info;

  return ok();
}

struct Session::Reader {
  Session* self;
  void operator()(beast::error_code ec) const {
    auto& io = *self->io_;
    if (ec) {
      const bool ours = io.close_started;
      // Ours (the read stops at the bound), or Beast's (a read would pass it).
      if (ec == boost::system::errc::message_size || ec == websocket::error::buffer_overflow) {
        self->fail(Error{ErrorCode::kLimit,
                         fmt::format("an answer is over SessionOptions::max_message_bytes ({} "
                                     "bytes): the session is closed",
                                     self->options_.max_message_bytes),
                         self->describe()});
        return;
      }
      self->fail(ours ? Error{ErrorCode::kIo, "the session was closed", self->describe()}
                      : Error{ErrorCode::kIo, fmt::format("the connection ended: {}", ec.message()),
                              self->describe()});
      return;
    }
    auto reply = ir::decode<ir::TaskResponse>(io.message->release());
    // Like Burn's demux: an undecodable answer or an unknown id is dropped; the caller
    // waiting for it times out.
    if (reply) {
      std::shared_ptr<Pending> pending;
      {
        std::lock_guard lock(self->mutex_);
        auto it = self->pending_.find(reply.value().id);
        if (it != self->pending_.end()) {
          pending = std::move(it->second);
          self->pending_.erase(it);
        }
      }
      if (pending) pending->promise.set_value(std::move(reply.value().content));
    }
    read(self);
  }
  static void read(Session* self) {
    auto& io = *self->io_;
    // Past the bound the message is not read on: its size alone ends the session.
    const std::size_t max = self->options_.max_message_bytes;
    tb::net::async_read_chunked(
        io.ws, *io.message,
        [&io, max] {
          return io.message->size() >= max && !io.ws.is_message_done()
                     ? make_error_code(boost::system::errc::message_size)
                     : beast::error_code();
        },
        Reader{self});
  }
};

void Session::start_io() {
  auto& io = *io_;
  // From here on the socket idles as long as the program does: no timeouts, no pings (Burn's
  // peers send none either).
  beast::get_lowest_layer(io.ws).expires_never();
  io.ws.set_option(websocket::stream_base::timeout{websocket::stream_base::none(),
                                                   websocket::stream_base::none(), false});

  io.message =
      std::make_unique<tb::net::MessageBuffer>(options_.max_message_bytes, message_blocks());
  io.guard.emplace(io.ioc.get_executor());
  io.ioc.restart();
  Reader::read(this);
  io.sweep();
  // A handler that throws (each handles what it expects; this is the last resort) ends this
  // session with that error, never the program, and the loop runs on so the close completes.
  io.thread = std::thread([this] {
    tb::net::run_guarded(io_->ioc, [this](const std::string& what) noexcept {
      try {
        fail(Error{
            ErrorCode::kInternal,
            fmt::format("the client's network thread: {}", what.empty() ? "an exception" : what),
            describe()});
      } catch (...) {
      }
    });
  });
}

}  // namespace tb::client::detail
