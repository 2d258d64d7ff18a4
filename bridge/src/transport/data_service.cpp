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
DataConnection::DataConnection(HostState& host, tb::net::AnyStream&& stream, ConnectionSlots slot,
                               GaugeSlot data_slot, bool member)
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
    // wait for its close frame as long again.
    self->abort();
  });
}

void DataConnection::abort() {
  // The pending read ends, and with it the connection.
  ended_ = true;
  timer_.cancel();
  ws_.next_layer().close();
}

// A handler that threw: no close handshake, since the exception may have left one of Beast's
// operations half started with the stream's write lock taken (docs/decisions.md, "exceptions stop
// at one boundary"), and a close frame would wait behind it until the idle timeout.
void DataConnection::on_exception(const std::string& what) {
  spdlog::error("/data: {}; closing the connection", what);
  abort();
}

// One read is always outstanding, also while a request waits for its tensor: a client that goes
// away is noticed at once, and its request and connection slot are freed then, not at the
// transfer timeout.
void DataConnection::read() {
  buffer_.clear();
  ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
    guarded([&] { self->on_read(ec); }, [&](const std::string& what) { self->on_exception(what); });
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
              [&](const std::string& what) { self->on_exception(what); });
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
    self->host_.counters.add(Count::kBytesOut, n);
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
  s.async_handshake(net::ssl::stream_base::client, std::move(done));
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

namespace {

// One download as a line of steps, each starting one asynchronous operation whose completion
// starts the next (then()); the first error ends the line and names the step it happened in.
class Download {
 public:
  enum class Stage {
    kResolving,
    kConnecting,
    kTlsHandshake,
    kOpening,
    kRequesting,
    kWaiting,
    kDone
  };

  Download(const ir::Address& peer, std::uint64_t key, net::ssl::context* tls,
           std::uint64_t max_message_bytes, std::shared_ptr<ir::BlockCache> blocks)
      : secure_(peer.scheme == "wss"),
        host_(tb::net::unbracketed(peer.host)),
        port_(std::to_string(peer.port.value_or(secure_ ? 443 : 80))),
        target_(peer.host + ":" + port_),
        ws_(secure_ ? tb::net::AnyStream(beast::tcp_stream(ioc_), *tls)
                    : tb::net::AnyStream(beast::tcp_stream(ioc_))),
        buffer_(max_message_bytes, std::move(blocks)),
        request_(ir::encode(ir::DataMessage{ir::TensorRequestMessage{key}})) {
    ws_.read_message_max(max_message_bytes);
    ws_.binary(true);
  }

  Status prepare(const std::optional<std::string>& bearer, std::chrono::milliseconds timeout) {
    if (secure_) TB_TRY(tb::net::prepare_client(ws_.next_layer().tls(), host_));
    if (bearer) {
      ws_.set_option(
          websocket::stream_base::decorator([token = *bearer](websocket::request_type& req) {
            req.set(beast::http::field::authorization, "Bearer " + token);
          }));
    }
    beast::get_lowest_layer(ws_).expires_after(timeout);
    return ok();
  }

  // Runs the steps to the end, or until `cancel` becomes true (the host stopping).
  void run(const std::atomic<bool>* cancel) {
    resolve();
    while (!ioc_.stopped()) {
      ioc_.run_for(std::chrono::milliseconds(50));
      if (!cancelled_ && cancel && cancel->load()) {
        cancelled_ = true;
        resolver_.cancel();
        beast::get_lowest_layer(ws_).close();  // pending operations complete with an error
      }
    }
  }

  Result<ir::TensorData> result(std::uint64_t key, std::chrono::milliseconds timeout) {
    const auto where = [&] {
      return fmt::format("downloading transfer {:#x} from {}:{}", key, host_, port_);
    };
    if (cancelled_ && stage_ != Stage::kDone) {
      return make_error(ErrorCode::kIo, "{}: the host is stopping", where());
    }
    if (failure_ || stage_ != Stage::kDone) {
      std::string why = failure_ == beast::error::timeout
                            ? fmt::format("timed out after {} ms", timeout.count())
                            : failure_.message();
      if (failure_ == websocket::error::closed && !ws_.reason().reason.empty()) {
        why = fmt::format("the peer closed /data: {}", std::string_view(ws_.reason().reason));
      }
      return make_error(ErrorCode::kIo, "{}: {} while {}", where(), why, stage_name());
    }
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    TB_TRY_ASSIGN(auto message, ir::decode<ir::DataMessage>(buffer_.release()));
    if (!std::holds_alternative<ir::TensorMessage>(message)) {
      return make_error(ErrorCode::kDecode, "the peer answered a TensorRequest with a request");
    }
    return std::move(std::get<ir::TensorMessage>(message).data);
  }

 private:
  // A completion handler that starts `next` unless the operation failed.
  auto then(void (Download::*next)()) {
    return [this, next](beast::error_code ec, auto&&...) {
      if (ec) return void(failure_ = ec);
      (this->*next)();
    };
  }
  void resolve() {
    resolver_.async_resolve(host_, port_,
                            [this](beast::error_code ec, tcp::resolver::results_type results) {
                              if (ec) return void(failure_ = ec);
                              endpoints_ = std::move(results);
                              connect();
                            });
  }
  void connect() {
    stage_ = Stage::kConnecting;
    ws_.next_layer().lowest().async_connect(endpoints_, then(&Download::secure));
  }
  void secure() {
    stage_ = secure_ ? Stage::kTlsHandshake : Stage::kOpening;
    tls_handshake(ws_.next_layer(), then(&Download::open));
  }
  void open() {
    stage_ = Stage::kOpening;
    ws_.async_handshake(target_, "/data", then(&Download::request));
  }
  void request() {
    stage_ = Stage::kRequesting;
    ws_.async_write(net::buffer(request_), then(&Download::wait));
  }
  void wait() {
    stage_ = Stage::kWaiting;
    tb::net::async_read_chunked(
        ws_, buffer_, [] { return beast::error_code{}; }, then(&Download::finish));
  }
  void finish() {
    stage_ = Stage::kDone;
    // A closing handshake, not a bare reset: Burn's /data server panics on a peer that drops the
    // socket without one. Its answer is not waited for long.
    beast::get_lowest_layer(ws_).expires_after(std::chrono::seconds(1));
    ws_.async_close(websocket::close_code::normal, [](beast::error_code) {});
  }
  std::string_view stage_name() const {
    switch (stage_) {
      case Stage::kResolving:
        return "resolving";
      case Stage::kConnecting:
        return "connecting";
      case Stage::kTlsHandshake:
        return "TLS handshake";
      case Stage::kOpening:
        return "opening /data";
      case Stage::kRequesting:
        return "requesting";
      case Stage::kWaiting:
        return "waiting for the tensor";
      case Stage::kDone:
        break;
    }
    return "done";
  }

  const bool secure_;
  const std::string host_, port_, target_;
  net::io_context ioc_;
  tcp::resolver resolver_{ioc_};
  tcp::resolver::results_type endpoints_;
  websocket::stream<tb::net::AnyStream> ws_;
  // The peer's answer: memory committed as it arrives, never from the length it declares.
  tb::net::MessageBuffer buffer_;
  std::vector<std::uint8_t> request_;
  Stage stage_ = Stage::kResolving;
  beast::error_code failure_;
  bool cancelled_ = false;
};

}  // namespace

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
  std::shared_ptr<net::ssl::context> system_roots;
  if (peer.scheme == "wss" && !tls) {
    TB_TRY_ASSIGN(system_roots, tb::net::client_context(""));
    tls = system_roots.get();
  }
  Download download(peer, key, tls, max_message_bytes, std::move(blocks));
  TB_TRY(download.prepare(bearer, timeout));
  download.run(cancel);
  return download.result(key, timeout);
}

}  // namespace tb::bridge
