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

SessionConnection::SessionConnection(HostState& host, tb::net::AnyStream&& stream,
                                     ConnectionSlots slot, bool header_authorized,
                                     std::optional<std::string> relayed_scope)
    : host_(host),
      ws_(std::move(stream)),
      init_timer_(ws_.get_executor()),
      idle_timer_(ws_.get_executor()),
      slot_(std::move(slot)),
      origin_{peer_of(beast::get_lowest_layer(ws_).socket()),
              address_of(beast::get_lowest_layer(ws_).socket()), header_authorized,
              std::move(relayed_scope)},
      inbound_(host.options.limits.max_message_bytes, host.message_blocks) {}

SessionConnection::~SessionConnection() {
  guarded([&] { teardown(); }, [](const std::string&) {});
}

void SessionConnection::run(http::request<http::string_body> req) {
  // Beast times the websocket handshakes (opening and closing) only: its idle timeout re-armed a
  // timer at every read, and IdleWatch keeps the same rule without one (watch_idle).
  ws_.set_option(websocket::stream_base::timeout{std::chrono::seconds(30),
                                                 websocket::stream_base::none(), false});
  // Every frame the client sends is a sign of life, pongs included (Beast answers its pings).
  ws_.control_callback([this](websocket::frame_type, beast::string_view) { idle_.heard(); });
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
    if (ec || (self->state_ != State::kAccepting && self->state_ != State::kHandshake)) return;
    self->guard([&] {
      self->host_.counters.add(Count::kSessionsRefused);
      spdlog::warn("{}: no Init within {} ms, closing", self->origin_.peer,
                   self->host_.options.init_timeout.count());
      if (self->state_ == State::kAccepting) return self->close_now();
      self->close_with(websocket::close_code::policy_error, "no Init in time");
    });
  });
}

void SessionConnection::on_accept(beast::error_code ec) {
  if (ec) {
    spdlog::debug("{}: websocket accept failed: {}", origin_.peer, ec.message());
    init_timer_.cancel();
    return;
  }
  if (state_ == State::kAccepting) state_ = State::kHandshake;
  read();
  watch_idle();
}

void SessionConnection::watch_idle() {
  // Without an idle timeout the tick still comes, for what the worker could not post.
  const auto timeout = host_.options.idle_timeout;
  idle_timer_.expires_after(timeout.count() > 0 ? timeout / 2 : std::chrono::seconds(30));
  // Weak: a pending tick does not keep a finished connection alive (its destructor cancels it).
  idle_timer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    self->guard([&] { self->on_idle_tick(); });
  });
}

void SessionConnection::on_idle_tick() {
  if (state_ == State::kClosed || state_ == State::kRelayed || torn_down_) return;
  if (const unsigned missed = missed_.exchange(0)) {
    on_missed(missed);
    if (state_ == State::kClosed || torn_down_) return;
  }
  if (host_.options.idle_timeout.count() <= 0) return watch_idle();
  const bool reading = (state_ == State::kHandshake || state_ == State::kRunning) && !paused_;
  switch (idle_.tick(reading)) {
    case IdleWatch::Action::kNone:
      break;
    case IdleWatch::Action::kPing:
      if (pinging_) break;
      pinging_ = true;
      ws_.async_ping({}, [weak = weak_from_this()](beast::error_code) {
        if (auto self = weak.lock()) self->pinging_ = false;
      });
      break;
    case IdleWatch::Action::kClose:
      spdlog::info("session {:016x} ({}): silent for {} ms, its ping unanswered; closing",
                   session_.id, origin_.peer, host_.options.idle_timeout.count());
      // No close handshake: a client that answers no ping would not answer a close frame either.
      return close_now();
  }
  watch_idle();
}

bool SessionConnection::tagged() const {
  return state_ == State::kRunning && session_.profile &&
         session_.profile->framing == ir::Framing::kTagged;
}

void SessionConnection::read() {
  ws_.read_message_max(inbound_.prepare(tagged(), ws_.read_message_max()));
  auto self = shared_from_this();
  tb::net::async_read_chunked(
      ws_, inbound_.buffer(),
      [this, self]() -> beast::error_code {
        idle_.heard();
        // Charged as it arrives; a message that would take the host over its memory limit ends
        // this session (the sender can retry once the host has room). Its first read always
        // gets in (Inbound::past_first_read).
        inbound_.charge(host_.account());
        if (inbound_.past_first_read() && host_.over_memory_limit()) {
          return make_error_code(boost::system::errc::not_enough_memory);
        }
        return {};
      },
      [this, self](beast::error_code ec) { guard([&] { on_message(ec); }); });
}

void SessionConnection::on_message(beast::error_code ec) {
  if (ec == boost::system::errc::not_enough_memory) {
    inbound_.drop();
    spdlog::warn("session {:016x} ({}): no memory for the message being received, closing",
                 session_.id, origin_.peer);
    return close_with(websocket::close_code::try_again_later, "host memory full");
  }
  if (ec) {
    if (ec != websocket::error::closed && ec != net::error::operation_aborted &&
        ec != net::error::eof) {
      spdlog::info("session {:016x} ({}): connection ended: {}", session_.id, origin_.peer,
                   ec.message());
    }
    inbound_.drop();
    teardown();
    return;
  }
  using Step = Inbound::Step::Kind;
  auto step = inbound_.on_read(tagged());
  host_.counters.add(Count::kBytesIn, step.arrived);
  switch (step.kind) {
    case Step::kMore:
      return read();
    case Step::kReject:
      return reject_frame(step.reason);
    case Step::kTooBig:
      host_.counters.add(Count::kFramesRejected);
      spdlog::warn("session {:016x} ({}): a message of {} bytes announced, over the limit of {}",
                   session_.id, origin_.peer, step.length, inbound_.max_message_bytes());
      return close_with(websocket::close_code::too_big, "message over the host's limit");
    case Step::kMessage:
      break;
  }
  if (state_ == State::kHandshake) {
    inbound_.release_charge();
    handshake(step.message);
  } else if (state_ == State::kRunning) {
    dispatch(step.message);
  } else {
    inbound_.release_charge();
  }
}

void SessionConnection::reject_frame(std::string_view what) {
  host_.counters.add(Count::kFramesRejected);
  spdlog::warn("session {:016x} ({}): {}, closing the session", session_.id, origin_.peer, what);
  inbound_.drop();
  close_with(websocket::close_code::policy_error, "bad message framing");
}

void SessionConnection::dispatch(const ir::Bytes& bytes) {
  // The received bytes count against the host until the worker has taken their tasks (a session
  // is bounded by max_queued_bytes; its own limit counts what its tasks make of them).
  MemoryCharge queued(host_.account(), bytes.size());
  inbound_.release_charge();
  if (capture_) capture_->write(bytes);
  auto content =
      read_session_frame(bytes, FrameSession{session_.profile, session_.id, origin_.peer});
  if (auto* rejected = std::get_if<FrameRejected>(&content)) {
    host_.counters.add(Count::kFramesRejected);
    spdlog::warn("{}", rejected->log);
    return close_with(websocket::close_code::policy_error, rejected->close_reason);
  }
  auto& [tasks, close_requested] = std::get<FrameTasks>(content);
  host_.counters.add(Count::kTasks, tasks.size());
  if (close_requested || !session_.worker->try_run_inline(tasks)) {
    session_.worker->push(std::move(tasks), std::move(queued));
  }
  if (close_requested) {
    state_ = State::kClosing;
    session_.worker->close();
    return;
  }
  if (session_.worker->pause_if_full()) {
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
  if (session_.worker) session_.worker->close();
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
  idle_timer_.cancel();
  paused_.reset();
  if (session_.worker) session_.worker->close();
  state_ = State::kClosed;
  // Unsent answers give their places and bytes back now (a worker may be waiting on them).
  writer_.drop_unsent();
  if (session_.id) {
    host_.sessions.remove_connection(session_.id, this);
    // Collectives waiting on this session fail now rather than at their timeout.
    host_.collectives.session_ended(session_.id);
  }
}

}  // namespace tb::bridge
