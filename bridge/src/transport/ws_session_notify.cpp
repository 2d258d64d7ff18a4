// SessionConnection's hand-overs: what its worker (or Host::stop) asks of the network thread, and
// the last-resort guard every handler runs under. None of the notifications throws, so none can
// end a worker's last-resort handler with std::terminate; one that cannot be posted for want of
// memory is retried, then done at the network thread's next tick (docs/reliability.md).
#include <algorithm>
#include <array>
#include <thread>

#include <spdlog/spdlog.h>

#include "guard.hpp"
#include "host_state.hpp"
#include "net/fault.hpp"
#include "transport/ws_session.hpp"

namespace tb::bridge {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

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

}  // namespace tb::bridge
