// The `/session` websocket of one Burn session: reads messages (memory committed as their bytes
// arrive), decodes them, runs the handshake, hands tasks to the session's worker, and writes the
// answers through a single-writer queue (session_writer.hpp). Every handler runs on the
// connection's network thread and under the last-resort guard: an exception ends this session
// (its socket closed), never the process.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "memory.hpp"
#include "net/any_stream.hpp"
#include "session/session_worker.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/ir/protocol.hpp"
#include "transport/frame_capture.hpp"
#include "transport/idle_watch.hpp"
#include "transport/listener.hpp"
#include "transport/session_inbound.hpp"
#include "transport/session_writer.hpp"

namespace tb::bridge {

struct HostState;

class SessionConnection : public std::enable_shared_from_this<SessionConnection> {
 public:
  // `relayed_scope`: the transfer scope a federation member that relays this session named.
  SessionConnection(HostState& host, tb::net::AnyStream&& stream, ConnectionSlots slot,
                    bool header_authorized, std::optional<std::string> relayed_scope = {});
  ~SessionConnection();

  void run(boost::beast::http::request<boost::beast::http::string_body> req);

  // The worker's notifications, from any thread. None throws: a post that cannot be allocated is
  // retried for a few seconds, and one that never goes is done at the network thread's next tick
  // (every half idle timeout). From inside this connection's own handler they run at once.
  // Queue one answer; false when it could not be handed over (the session then ends).
  bool send(Outgoing out) noexcept;
  // Its task queue drained below the limit.
  bool resume() noexcept;
  // Everything ran and was freed; close once the answers are out.
  void worker_done() noexcept;
  // It failed unexpectedly; the session ends with an internal-error close giving `what`.
  void end_with_error(std::string_view what) noexcept;
  // From Host::stop(): `done` runs once the socket is closed (on this connection's network thread).
  void shutdown(std::function<void()> done = {});

 private:
  // kAccepting: the websocket handshake is under way. kHandshake: waiting for Init. kRelayed: the
  // websocket was handed to a Relay (another member owns the device).
  enum class State { kAccepting, kHandshake, kRunning, kClosing, kClosed, kRelayed };
  // Who opened the connection: what the handshake decides from, besides the Init.
  struct Origin {
    std::string peer;     // "address:port", for log lines
    std::string address;  // without the port: part of the transfer scope
    bool header_authorized = false;
    std::optional<std::string> relayed_scope;
  };
  // The session this connection carries, once the handshake opened it.
  struct Opened {
    std::uint64_t id = 0;
    std::shared_ptr<SessionWorker> worker;
    const ir::ProtocolProfile* profile = nullptr;
  };

  // What the worker could not post, for the next tick.
  enum Missed : unsigned { kAnswer = 1u << 0, kResume = 1u << 1, kDone = 1u << 2, kEnd = 1u << 3 };

  // Runs `fn` on the connection's network thread under the guard (at once, when called there from
  // inside one of its handlers); false, with `missed` noted for the next tick, when it could not.
  template <class Fn>
  bool post(Fn fn, Missed missed) noexcept;
  // Runs a handler; an exception ends the session, closing the socket without a close handshake.
  void guard(const std::function<void()>& fn);
  void on_resume();
  void on_worker_done();
  void on_worker_failed(std::string_view reason);
  void on_missed(unsigned missed);

  void on_accept(boost::beast::error_code ec);
  // Every half idle timeout while the connection lives: pings a silent client, closes a dead one.
  void watch_idle();
  void on_idle_tick();
  void read();
  void on_message(boost::beast::error_code ec);
  bool tagged() const;
  void reject_frame(std::string_view what);
  void refuse(ir::SessionRefusal refusal, const std::string& reason);
  // The decision is handshake.hpp's; these apply it (ws_session_open.cpp).
  void handshake(const ir::Bytes& bytes);
  void open_session(const SessionWorker::Identity& identity);
  // Registers the session; false (and the websocket closing with the reason) when refused.
  bool admit(const SessionWorker::Identity& identity, const std::shared_ptr<SessionWorker>& worker);
  void relay(std::uint32_t device, const ir::Bytes& init, std::string scope);
  void dispatch(const ir::Bytes& bytes);
  void queue_write(Outgoing out);
  void queue_write(FramePtr frame);
  void write();
  void on_write(boost::beast::error_code ec, std::size_t n);
  void maybe_close();
  void close_with(boost::beast::websocket::close_code code, std::string_view reason);
  void close_now();
  void teardown();

  HostState& host_;
  boost::beast::websocket::stream<tb::net::AnyStream> ws_;
  boost::asio::steady_timer init_timer_;
  boost::asio::steady_timer idle_timer_;
  IdleWatch idle_;
  bool pinging_ = false;  // a ping is being written (Beast takes one at a time)
  ConnectionSlots slot_;
  const Origin origin_;
  Inbound inbound_;
  SessionWriter writer_;
  Opened session_;
  // Set while reading is paused for back-pressure: with no read, write or timer pending, nothing
  // else holds the connection (the registry's pointer is weak), and it would close itself.
  std::shared_ptr<SessionConnection> paused_;
  // Set where the operator asked for the session's frames on disk (TB_CAPTURE_DIR).
  std::unique_ptr<FrameCapture> capture_;
  State state_ = State::kAccepting;
  std::atomic<unsigned> missed_{0};
  bool worker_finished_ = false;
  bool torn_down_ = false;
};

}  // namespace tb::bridge
