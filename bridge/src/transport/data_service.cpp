#include "transport/data_service.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "guard.hpp"
#include "host_state.hpp"
#include "net/message_buffer.hpp"
#include "net/tls.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::bridge {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

std::vector<net::const_buffer> buffers_of(const OutFrame& frame) {
  std::vector<net::const_buffer> buffers;
  buffers.reserve(frame.segments.size());
  for (const auto& s : frame.segments) buffers.emplace_back(s.data(), s.size());
  return buffers;
}

// ---- Serving: another host downloads a tensor this host exposed. ------------------------------
DataConnection::DataConnection(HostState& host, tb::net::AnyStream&& stream, ConnectionSlot slot,
                               ConnectionSlot data_slot, bool member)
    : host_(host),
      ws_(std::move(stream)),
      timer_(ws_.get_executor()),
      slot_(std::move(slot)),
      data_slot_(std::move(data_slot)),
      member_(member) {}

void DataConnection::run(beast::http::request<beast::http::string_body> req) {
  ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  ws_.read_message_max(64 * 1024);
  ws_.binary(true);
  beast::get_lowest_layer(ws_).expires_never();
  ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) {
    if (ec) return;
    self->await_request();
    self->read();
  });
}

// A /data connection needs no token (Burn's server sends none), so one that sends no request must
// not hold its slot: it has --init-timeout-ms to send one, after the upgrade and after each answer
// (issue 39, finding 6: 64 silent sockets held every slot for Beast's 300 s idle timeout).
void DataConnection::await_request() {
  timer_.expires_after(host_.options.init_timeout);
  timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->waiting_ || self->ended_) return;
    // No close handshake: a peer that sends nothing would not answer one either, and Beast would
    // wait for its close frame as long again. The pending read ends, and with it the connection.
    self->ended_ = true;
    self->ws_.next_layer().close();
  });
}

// One read is always outstanding, also while a request waits for its tensor: a client that goes
// away is noticed at once, and its request and connection slot are freed then, not at the
// transfer timeout.
void DataConnection::read() {
  buffer_.clear();
  ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
    guarded([&] { self->on_read(ec); },
            [&](const std::string& what) {
              spdlog::error("/data: {}; closing the connection", what);
              self->close(websocket::close_code::internal_error, "internal error");
            });
  });
}

void DataConnection::on_read(beast::error_code ec) {
  if (ec) {
    ended_ = true;
    timer_.cancel();
    if (waiting_) {
      host_.data.cancel(ticket_, make_error(ErrorCode::kIo, "the downloading peer went away"));
    }
    return;
  }
  if (waiting_) return close(websocket::close_code::policy_error, "one request at a time");
  on_request();
  if (!ended_) read();
}

void DataConnection::on_request() {
  const auto& d = buffer_.data();
  auto message = ir::decode<ir::DataMessage>(ir::Bytes::copy_of(d.data(), d.size()));
  if (!message || !std::holds_alternative<ir::TensorRequestMessage>(message.value())) {
    spdlog::warn("/data: expected a TensorRequest: {}",
                 message ? "got a Tensor" : message.error().what());
    return close(websocket::close_code::policy_error, "expected TensorRequest");
  }
  const std::uint64_t key = std::get<ir::TensorRequestMessage>(message.value()).transfer_id;
  waiting_ = true;
  auto self = shared_from_this();
  ticket_ = host_.data.when_exposed(key, member_, [self](DataStore::Payload p) {
    net::post(self->ws_.get_executor(), [self, p = std::move(p)]() mutable {
      self->timer_.cancel();
      guarded([&] { self->respond(std::move(p)); },
              [&](const std::string& what) {
                spdlog::error("/data: {}; closing the connection", what);
                self->close(websocket::close_code::internal_error, "internal error");
              });
    });
  });
  timer_.expires_after(host_.options.transfer_timeout);
  timer_.async_wait([self, ticket = ticket_, key](beast::error_code ec) {
    if (ec) return;
    self->host_.data.cancel(
        ticket, make_error(ErrorCode::kTimeout, "transfer {:#x} was not exposed in time", key));
  });
}

void DataConnection::respond(DataStore::Payload payload) {
  waiting_ = false;
  ticket_ = 0;
  if (ended_) return;
  if (!payload) {
    spdlog::warn("/data: {}", payload.error().what());
    // The downloading host reports the reason (a close reason holds at most 123 bytes).
    return close(websocket::close_code::internal_error, payload.error().what().substr(0, 123));
  }
  frame_ = std::move(payload).value();
  write_buffers_ = buffers_of(*frame_);
  ws_.async_write(write_buffers_, [self = shared_from_this()](beast::error_code, std::size_t n) {
    self->host_.counters.bytes_out += n;
    self->frame_.reset();
    self->write_buffers_.clear();
    if (!self->ended_) self->await_request();
  });
}

void DataConnection::close(websocket::close_code code, std::string_view reason) {
  if (ended_) return;
  ended_ = true;
  timer_.cancel();
  ws_.async_close(websocket::close_reason(code, reason),
                  [self = shared_from_this()](beast::error_code) {});
}

// ---- Downloading: this host fetches a tensor another host exposed. ---------------------------
namespace {
// The client side of a TLS stream's handshake; at once for a plain one.
template <class Done>
void tls_handshake(tb::net::AnyStream& s, Done done) {
  if (!s.is_tls()) return done(beast::error_code{});
  s.tls().async_handshake(net::ssl::stream_base::client, std::move(done));
}
}  // namespace

Result<ir::TensorData> WebSocketDownloader::download(const ir::Address& peer, std::uint64_t key) {
  return download_tensor(peer, key, options_.transfer_timeout, options_.limits.max_message_bytes,
                         &stopping_, tls_.get(), std::nullopt, blocks_);
}

Result<ir::TensorData> WebSocketDownloader::download_from_member(const ir::Address& peer,
                                                                 std::uint64_t key) {
  return download_tensor(peer, key, options_.transfer_timeout, options_.limits.max_message_bytes,
                         &stopping_, tls_.get(), options_.auth_token, blocks_);
}

Result<ir::TensorData> download_tensor(const ir::Address& peer, std::uint64_t key,
                                       std::chrono::milliseconds timeout,
                                       std::uint64_t max_message_bytes,
                                       const std::atomic<bool>* cancel,
                                       boost::asio::ssl::context* tls,
                                       const std::optional<std::string>& bearer,
                                       std::shared_ptr<ir::BlockCache> blocks) {
  if (peer.scheme != "ws" && peer.scheme != "wss") {
    return make_error(ErrorCode::kUnsupported,
                      "cannot download from {}://: only ws and wss are spoken", peer.scheme);
  }
  const bool secure = peer.scheme == "wss";
  const std::string host(tb::net::unbracketed(peer.host));
  const std::string port = std::to_string(peer.port.value_or(secure ? 443 : 80));
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  std::shared_ptr<net::ssl::context> system_roots;
  if (secure && !tls) {
    TB_TRY_ASSIGN(system_roots, tb::net::client_context(""));
    tls = system_roots.get();
  }
  beast::tcp_stream tcp(ioc);
  websocket::stream<tb::net::AnyStream> ws(secure ? tb::net::AnyStream(std::move(tcp), *tls)
                                                  : tb::net::AnyStream(std::move(tcp)));
  if (secure) TB_TRY(tb::net::prepare_client(ws.next_layer().tls(), host));
  // The peer's answer: memory committed as it arrives, never from the length it declares.
  tb::net::MessageBuffer buffer(max_message_bytes, std::move(blocks));
  beast::error_code failure;
  const char* stage = "resolving";
  std::vector<std::uint8_t> request = ir::encode(ir::DataMessage{ir::TensorRequestMessage{key}});
  ws.read_message_max(max_message_bytes);
  ws.binary(true);
  if (bearer) {
    ws.set_option(websocket::stream_base::decorator([&bearer](websocket::request_type& req) {
      req.set(beast::http::field::authorization, "Bearer " + *bearer);
    }));
  }
  beast::get_lowest_layer(ws).expires_after(timeout);

  resolver.async_resolve(
      host, port, [&](beast::error_code ec, tcp::resolver::results_type results) {
        if (ec) return void(failure = ec);
        stage = "connecting";
        ws.next_layer().lowest().async_connect(
            results, [&](beast::error_code ec, const tcp::endpoint&) {
              if (ec) return void(failure = ec);
              stage = secure ? "TLS handshake" : "opening /data";
              tls_handshake(ws.next_layer(), [&](beast::error_code ec) {
                if (ec) return void(failure = ec);
                stage = "opening /data";
                ws.async_handshake(peer.host + ":" + port, "/data", [&](beast::error_code ec) {
                  if (ec) return void(failure = ec);
                  stage = "requesting";
                  ws.async_write(net::buffer(request), [&](beast::error_code ec, std::size_t) {
                    if (ec) return void(failure = ec);
                    stage = "waiting for the tensor";
                    tb::net::async_read_chunked(
                        ws, buffer, [] { return beast::error_code{}; },
                        [&](beast::error_code ec) {
                          if (ec) return void(failure = ec);
                          stage = "done";
                          // A closing handshake, not a bare reset: Burn's /data server panics on a
                          // peer that drops the socket without one. Its answer is not waited for
                          // long.
                          beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(1));
                          ws.async_close(websocket::close_code::normal, [](beast::error_code) {});
                        });
                  });
                });
              });
            });
      });
  bool cancelled = false;
  while (!ioc.stopped()) {
    ioc.run_for(std::chrono::milliseconds(50));
    if (!cancelled && cancel && cancel->load()) {
      cancelled = true;
      resolver.cancel();
      beast::get_lowest_layer(ws).close();  // pending operations complete with an error
    }
  }
  if (cancelled && std::string_view(stage) != "done") {
    return make_error(ErrorCode::kIo, "downloading transfer {:#x} from {}:{}: the host is stopping",
                      key, host, port);
  }
  if (failure || std::string_view(stage) != "done") {
    std::string why = failure == beast::error::timeout
                          ? fmt::format("timed out after {} ms", timeout.count())
                          : failure.message();
    if (failure == websocket::error::closed && !ws.reason().reason.empty()) {
      why = fmt::format("the peer closed /data: {}", std::string_view(ws.reason().reason));
    }
    return make_error(ErrorCode::kIo, "downloading transfer {:#x} from {}:{}: {} while {}", key,
                      host, port, why, stage);
  }
  beast::error_code ignored;
  beast::get_lowest_layer(ws).socket().close(ignored);
  TB_TRY_ASSIGN(auto message, ir::decode<ir::DataMessage>(buffer.release()));
  if (!std::holds_alternative<ir::TensorMessage>(message)) {
    return make_error(ErrorCode::kDecode, "the peer answered a TensorRequest with a request");
  }
  return std::move(std::get<ir::TensorMessage>(message).data);
}

}  // namespace tb::bridge
