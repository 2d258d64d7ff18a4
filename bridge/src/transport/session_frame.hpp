// What one frame of an open session asks for, apart from the socket: its tasks, in order, and
// whether it ends with the session's Close; or why the session must close instead (undecodable, a
// task of another protocol, a Close of another session, a second Init). A pure function of the
// bytes and the session, tested without a connection (tests/bridge/session_frame_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "torchbridge/ir/bytes.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/ir/protocol.hpp"

namespace tb::bridge {

// The session a frame arrived on.
struct FrameSession {
  const ir::ProtocolProfile* profile = nullptr;
  std::uint64_t id = 0;
  std::string_view peer;  // for the log
};

struct FrameTasks {
  std::vector<ir::Task> tasks;
  // The frame closes the session after its tasks (Burn's service drop).
  bool close_requested = false;
};
struct FrameRejected {
  std::string log;                // the host's warning
  std::string_view close_reason;  // the websocket close's reason
};
using FrameContent = std::variant<FrameTasks, FrameRejected>;

FrameContent read_session_frame(const ir::Bytes& bytes, const FrameSession& session);

}  // namespace tb::bridge
