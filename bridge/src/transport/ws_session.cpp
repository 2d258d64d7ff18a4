#include "transport/ws_session.hpp"

#include <spdlog/spdlog.h>

#include "guard.hpp"
#include "host_state.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/version.hpp"
#include "transport/framing.hpp"
#include "transport/session_frame.hpp"
#include "transport/session_writer.hpp"

namespace tb::bridge {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

SessionConnection::SessionConnection(HostState& host, tb::net::AnyStream&& stream, GaugeSlot slot,
                                     bool header_authorized,
                                     std::optional<std::string> relayed_scope)
    : host_(host),
      ws_(std::move(stream)),
      init_timer_(ws_.get_executor()),
      slot_(std::move(slot)),
      peer_(peer_of(beast::get_lowest_layer(ws_).socket())),
      peer_address_(address_of(beast::get_lowest_layer(ws_).socket())),
      header_authorized_(header_authorized),
      relayed_scope_(std::move(relayed_scope)),
      reassembly_(host.options.limits.max_message_bytes) {}

SessionConnection::~SessionConnection() {
  guarded([&] { teardown(); }, [](const std::string&) {});
}

template <class Fn>
void SessionConnection::post(Fn fn) {
  net::post(ws_.get_executor(), [self = shared_from_this(), fn = std::move(fn)]() mutable {
    self->guard([&] { fn(*self); });
  });
}

void SessionConnection::guard(const std::function<void()>& fn) {
  guarded(fn, [&](const std::string& what) {
    host_.counters.add(Count::kSessionsFailed);
    spdlog::error("session {:016x} ({}): {}; ending the session", session_id_, peer_, what);
    guarded([&] { close_with(websocket::close_code::internal_error, "host error"); },
            [&](const std::string&) { close_now(); });
  });
}

void SessionConnection::run(http::request<http::string_body> req) {
  ws_.set_option(websocket::stream_base::timeout{std::chrono::seconds(30), std::chrono::seconds(60),
                                                 true});  // handshake, idle, pings
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
    res.set(http::field::server, fmt::format("torchbridge/{}", kVersion));
  }));
  ws_.read_message_max(
      std::min(host_.options.limits.max_init_bytes, host_.options.limits.max_message_bytes));
  ws_.binary(true);
  ws_.auto_fragment(false);
  beast::get_lowest_layer(ws_).expires_never();
  ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) {
    self->guard([&] { self->on_accept(ec); });
  });
  init_timer_.expires_after(host_.options.init_timeout);
  init_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->state_ != State::kHandshake) return;
    self->guard([&] {
      self->host_.counters.add(Count::kSessionsRefused);
      spdlog::warn("{}: no Init within {} ms, closing", self->peer_,
                   self->host_.options.init_timeout.count());
      if (!self->accepted_) return self->close_now();
      self->close_with(websocket::close_code::policy_error, "no Init in time");
    });
  });
}

void SessionConnection::send(Outgoing out) {
  post([out = std::move(out)](SessionConnection& self) mutable {
    self.queue_write(std::move(out));
  });
}

void SessionConnection::resume() {
  post([](SessionConnection& self) {
    if (!self.paused_) return;
    self.paused_.reset();
    if (self.state_ == State::kRunning) self.read();
  });
}

void SessionConnection::worker_done() {
  post([](SessionConnection& self) {
    self.worker_finished_ = true;
    self.maybe_close();
  });
}

void SessionConnection::end_with_error(std::string what) {
  post([what = std::move(what)](SessionConnection& self) {
    self.worker_finished_ = true;
    self.writer_.drop_unsent();
    // A close reason holds at most 123 bytes.
    self.close_with(websocket::close_code::internal_error, std::string_view(what).substr(0, 123));
  });
}

void SessionConnection::shutdown(std::function<void()> done) {
  post([done = std::move(done)](SessionConnection& self) {
    beast::error_code ec;
    beast::get_lowest_layer(self.ws_).socket().shutdown(tcp::socket::shutdown_both, ec);
    beast::get_lowest_layer(self.ws_).close();
    if (done) done();
  });
}

void SessionConnection::on_accept(beast::error_code ec) {
  if (ec) {
    spdlog::debug("{}: websocket accept failed: {}", peer_, ec.message());
    init_timer_.cancel();
    return;
  }
  accepted_ = true;
  read();
}

bool SessionConnection::tagged() const {
  return state_ == State::kRunning && profile_ && profile_->framing == ir::Framing::kTagged;
}

void SessionConnection::read() {
  if (!tagged()) {
    message_ =
        std::make_unique<tb::net::MessageBuffer>(ws_.read_message_max(), host_.message_blocks);
  } else {
    // A head, or the next segment into the same buffer (framing::Reassembly::read_limit).
    ws_.read_message_max(reassembly_.read_limit());
    if (!reassembly_.in_message()) {
      message_ =
          std::make_unique<tb::net::MessageBuffer>(reassembly_.read_limit(), host_.message_blocks);
    }
  }
  auto self = shared_from_this();
  tb::net::async_read_chunked(
      ws_, *message_,
      [this, self]() -> beast::error_code {
        // Charged as it arrives; a message that would take the host over its memory limit ends
        // this session (the sender can retry once the host has room).
        receiving_ = MemoryCharge(host_.account(), message_->size());
        if (host_.over_memory_limit()) {
          return make_error_code(boost::system::errc::not_enough_memory);
        }
        return {};
      },
      [this, self](beast::error_code ec) { guard([&] { on_message(ec); }); });
}

void SessionConnection::on_message(beast::error_code ec) {
  if (ec == boost::system::errc::not_enough_memory) {
    receiving_ = {};
    message_.reset();
    spdlog::warn("session {:016x} ({}): no memory for the message being received, closing",
                 session_id_, peer_);
    return close_with(websocket::close_code::try_again_later, "host memory full");
  }
  if (ec) {
    if (ec != websocket::error::closed && ec != net::error::operation_aborted &&
        ec != net::error::eof) {
      spdlog::info("session {:016x} ({}): connection ended: {}", session_id_, peer_, ec.message());
    }
    receiving_ = {};
    message_.reset();
    teardown();
    return;
  }
  if (tagged()) return on_tagged_message();
  const ir::Bytes bytes = message_->release();
  message_.reset();
  host_.counters.add(Count::kBytesIn, bytes.size());
  if (state_ == State::kHandshake) {
    receiving_ = {};
    handshake(bytes);
  } else if (state_ == State::kRunning) {
    dispatch(bytes);
  } else {
    receiving_ = {};
  }
}

void SessionConnection::reject_frame(std::string_view what) {
  host_.counters.add(Count::kFramesRejected);
  spdlog::warn("session {:016x} ({}): {}, closing the session", session_id_, peer_, what);
  receiving_ = {};
  message_.reset();
  reassembly_.reset();
  close_with(websocket::close_code::policy_error, "bad message framing");
}

void SessionConnection::on_tagged_message() {
  using Head = framing::Reassembly::HeadStep::Kind;
  using Segment = framing::Reassembly::SegmentStep::Kind;
  if (!reassembly_.in_message()) {
    const ir::Bytes head = message_->release();
    message_.reset();
    receiving_ = {};
    host_.counters.add(Count::kBytesIn, head.size());
    const auto step = reassembly_.on_head(head.data(), head.size());
    switch (step.kind) {
      case Head::kReject:
        return reject_frame(step.reason);
      case Head::kWhole:
        return dispatch(head.slice(1, head.size() - 1));
      case Head::kTooBig:
        host_.counters.add(Count::kFramesRejected);
        spdlog::warn("session {:016x} ({}): a message of {} bytes announced, over the limit of {}",
                     session_id_, peer_, step.length, reassembly_.max_message_bytes());
        return close_with(websocket::close_code::too_big, "message over the host's limit");
      case Head::kSegmented:
        // The buffer grows only as segments arrive.
        message_ = std::make_unique<tb::net::MessageBuffer>(static_cast<std::size_t>(step.length),
                                                            host_.message_blocks);
        return read();
    }
  }
  const std::size_t got = message_->size() - reassembly_.received();
  host_.counters.add(Count::kBytesIn, got);
  const auto step = reassembly_.on_segment(got);
  if (step.kind == Segment::kReject) return reject_frame(step.reason);
  if (step.kind == Segment::kMore) return read();
  const ir::Bytes bytes = message_->release();
  message_.reset();
  dispatch(bytes);
}

void SessionConnection::dispatch(const ir::Bytes& bytes) {
  // The received bytes count against the host until the worker has taken their tasks (a session
  // is bounded by max_queued_bytes; its own limit counts what its tasks make of them).
  MemoryCharge queued(host_.account(), bytes.size());
  receiving_ = {};
  auto content = read_session_frame(bytes, FrameSession{profile_, session_id_, peer_});
  if (auto* rejected = std::get_if<FrameRejected>(&content)) {
    host_.counters.add(Count::kFramesRejected);
    spdlog::warn("{}", rejected->log);
    return close_with(websocket::close_code::policy_error, rejected->close_reason);
  }
  auto& [tasks, close_requested] = std::get<FrameTasks>(content);
  host_.counters.add(Count::kTasks, tasks.size());
  if (close_requested || !worker_->try_run_inline(tasks)) {
    worker_->push(std::move(tasks), std::move(queued));
  }
  if (close_requested) {
    state_ = State::kClosing;
    worker_->close();
    return;
  }
  if (worker_->pause_if_full()) {
    paused_ = shared_from_this();
    return;  // resume() reads again
  }
  read();
}

void SessionConnection::queue_write(FramePtr frame) {
  Outgoing out;
  out.frame = std::move(frame);
  queue_write(std::move(out));
}

void SessionConnection::queue_write(Outgoing out) {
  if (state_ == State::kClosed) return;
  if (writer_.push(std::move(out))) write();
}

void SessionConnection::write() {
  ws_.async_write(writer_.next(), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
    self->guard([&] { self->on_write(ec, n); });
  });
}

void SessionConnection::on_write(beast::error_code ec, std::size_t n) {
  host_.counters.add(Count::kBytesOut, n);
  switch (writer_.written(static_cast<bool>(ec))) {
    case SessionWriter::After::kWrite:
      return write();
    case SessionWriter::After::kFailed:
      return teardown();
    case SessionWriter::After::kIdle:
      return maybe_close();
  }
}

void SessionConnection::maybe_close() {
  if (state_ != State::kClosing || !worker_finished_ || !writer_.idle()) return;
  close_with(websocket::close_code::normal, "");
}

void SessionConnection::close_with(websocket::close_code code, std::string_view reason) {
  if (state_ == State::kClosed || state_ == State::kRelayed) return;
  if (worker_) worker_->close();
  state_ = State::kClosed;
  ws_.async_close(websocket::close_reason(code, reason),
                  [self = shared_from_this()](beast::error_code) { self->teardown(); });
}

void SessionConnection::close_now() {
  if (state_ == State::kRelayed) return;
  state_ = State::kClosed;
  beast::error_code ec;
  beast::get_lowest_layer(ws_).socket().close(ec);
}

// The connection is gone: the worker runs what it has, frees the session's tensors and exits.
void SessionConnection::teardown() {
  if (torn_down_) return;
  torn_down_ = true;
  init_timer_.cancel();
  paused_.reset();
  if (worker_) worker_->close();
  state_ = State::kClosed;
  // Unsent answers give their places and bytes back now (a worker may be waiting on them).
  writer_.drop_unsent();
  if (session_id_) {
    host_.sessions.remove_connection(session_id_, this);
    // Collectives waiting on this session fail now rather than at their timeout.
    host_.collectives.session_ended(session_id_);
  }
}

}  // namespace tb::bridge
