// When a session's websocket has been silent too long: the rule of Beast's idle timeout with
// keep-alive pings, without Beast's timer. Beast re-arms a timer at every read (a cancel, an
// aborted handler and often a timerfd update): 4% of the network threads' CPU for a plain client,
// which reads about 4,500 small messages per LU 500 (docs/benchmarks.md). Here a read only sets a
// flag, and the connection asks `tick` every half of the idle timeout. Socket-free: the connection
// does what it answers.
#pragma once

namespace tb::bridge {

class IdleWatch {
 public:
  enum class Action { kNone, kPing, kClose };

  // Bytes arrived: a message, part of one, or a control frame (a pong).
  void heard() { heard_ = true; }

  // Every half idle timeout. `reading`: a read is pending. A session paused for back-pressure, or
  // closing, reads nothing, so its silence says nothing about the client: it is never pinged or
  // closed for it (Beast's timer closed a session paused for longer than the timeout, since the
  // pong to its ping was never read). Silence for a whole period sends a ping; silence for the
  // period after it closes, so a dead client goes after one to one and a half idle timeouts.
  Action tick(bool reading) {
    if (heard_ || !reading) {
      heard_ = false;
      pinged_ = false;
      return Action::kNone;
    }
    if (!pinged_) {
      pinged_ = true;
      return Action::kPing;
    }
    return Action::kClose;
  }

 private:
  bool heard_ = false;
  bool pinged_ = false;
};

}  // namespace tb::bridge
