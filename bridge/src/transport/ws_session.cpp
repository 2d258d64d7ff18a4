#include "transport/ws_session.hpp"

#include <algorithm>
#include <array>
#include <thread>

#include <spdlog/spdlog.h>

#include "guard.hpp"
#include "host_state.hpp"
#include "net/fault.hpp"
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

namespace {
// The connection whose handler this thread is running, if any: a notification from inside it
// (an answer made inline, on the network thread) runs at once instead of being posted.
thread_local const SessionConnection* running_here = nullptr;

struct RunningHere {
  const SessionConnection* saved;
  explicit RunningHere(const SessionConnection* c) : saved(running_here) { running_here = c; }
  ~RunningHere() { running_here = saved; }
};

// A post that could not be allocated is tried again after 1, 2, 4, ... ms (about a second in all):
// under memory pressure, what failed sessions and trimmed caches free is often enough.
constexpr int kPostAttempts = 10;
}  // namespace

template <class Fn>
bool SessionConnection::post(Fn fn, Missed missed) noexcept {
  if (running_here == this) {
    guard([&] { fn(*this); });
    return true;
  }
  // Boxed once, so that a post whose allocation failed can be tried again with it.
  std::shared_ptr<Fn> box;
  for (int attempt = 1;; ++attempt) {
    try {
      if (!box) box = std::make_shared<Fn>(std::move(fn));
      if (tb::net::fault::hit(tb::net::fault::Point::kPost)) throw std::bad_alloc();
      net::post(ws_.get_executor(),
                [self = shared_from_this(), box] { self->guard([&] { (*box)(*self); }); });
      return true;
    } catch (const std::bad_alloc&) {
      if (attempt == kPostAttempts) break;
      host_.message_blocks->trim();
      std::this_thread::sleep_for(std::chrono::milliseconds(1 << (attempt - 1)));
    } catch (...) {
      break;
    }
  }
  // The network thread finds it at its next tick (on_idle_tick).
  missed_.fetch_or(static_cast<unsigned>(missed));
  return false;
}

void SessionConnection::guard(const std::function<void()>& fn) {
  RunningHere here(this);
  guarded(fn, [&](const std::string& what) {
    host_.counters.add(Count::kSessionsFailed);
    spdlog::error("session {:016x} ({}): {}; ending the session", session_.id, origin_.peer, what);
    // No close handshake: the exception may have left one of Beast's operations half started,
    // holding the stream's write or read lock, and a close would wait for that lock for ever
    // (its suspended handler holding the connection, which would never be freed). The client
    // sees the connection end.
    if (state_ == State::kRelayed) return;
    close_now();
    teardown();
  });
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

bool SessionConnection::send(Outgoing out) noexcept {
  return post(
      [out = std::move(out)](SessionConnection& self) mutable { self.queue_write(std::move(out)); },
      Missed::kAnswer);
}

bool SessionConnection::resume() noexcept {
  return post([](SessionConnection& self) { self.on_resume(); }, Missed::kResume);
}

void SessionConnection::on_resume() {
  if (!paused_) return;
  paused_.reset();
  if (state_ == State::kRunning) read();
}

void SessionConnection::worker_done() noexcept {
  post([](SessionConnection& self) { self.on_worker_done(); }, Missed::kDone);
}

void SessionConnection::on_worker_done() {
  worker_finished_ = true;
  maybe_close();
}

void SessionConnection::end_with_error(std::string_view what) noexcept {
  // A close reason holds at most 123 bytes; kept in place, so that the notification needs no
  // allocation beyond its post.
  std::array<char, 123> reason{};
  const std::size_t n = std::min(what.size(), reason.size());
  std::copy_n(what.data(), n, reason.begin());
  post([reason,
        n](SessionConnection& self) { self.on_worker_failed(std::string_view(reason.data(), n)); },
       Missed::kEnd);
}

void SessionConnection::on_worker_failed(std::string_view reason) {
  worker_finished_ = true;
  writer_.drop_unsent();
  close_with(websocket::close_code::internal_error, reason);
}

// What the worker could not post (out of memory for every attempt), done late but done: the
// client is never left waiting on an answer that was lost or on a session whose worker is gone.
void SessionConnection::on_missed(unsigned missed) {
  spdlog::warn(
      "session {:016x} ({}): its worker could not reach the network thread (out of "
      "memory); acting now",
      session_.id, origin_.peer);
  if (missed & static_cast<unsigned>(Missed::kAnswer | Missed::kEnd)) {
    return on_worker_failed(missed & static_cast<unsigned>(Missed::kAnswer)
                                ? "an answer was lost: the host ran out of memory"
                                : "the host ran out of memory");
  }
  if (missed & static_cast<unsigned>(Missed::kDone)) on_worker_done();
  if (missed & static_cast<unsigned>(Missed::kResume)) on_resume();
}

void SessionConnection::shutdown(std::function<void()> done) {
  post(
      [done = std::move(done)](SessionConnection& self) {
        beast::error_code ec;
        beast::get_lowest_layer(self.ws_).socket().shutdown(tcp::socket::shutdown_both, ec);
        beast::get_lowest_layer(self.ws_).close();
        if (done) done();
      },
      Missed::kEnd);
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
