#include "transport/session_frame.hpp"

#include <fmt/format.h>

#include "torchbridge/ir/codec.hpp"
#include "torchbridge/ir/format.hpp"

namespace tb::bridge {

FrameContent read_session_frame(const ir::Bytes& bytes, const FrameSession& session) {
  auto frame = ir::decode<ir::ClientFrame>(bytes);
  if (!frame) {
    return FrameRejected{
        fmt::format("session {:016x} ({}): undecodable frame of {} bytes, closing the session: {}",
                    session.id, session.peer, bytes.size(), frame.error().what()),
        "undecodable frame"};
  }
  FrameTasks out;
  out.tasks.reserve(frame.value().size());
  for (auto& message : frame.value()) {
    if (auto* task = std::get_if<ir::Task>(&message)) {
      if (!ir::task_on_wire(*task, session.profile->version)) {
        return FrameRejected{
            fmt::format("session {:016x} ({}): Task::{} is not a message of {}, closing",
                        session.id, session.peer, ir::task_name(*task),
                        ir::describe(*session.profile)),
            "task of another protocol"};
      }
      out.tasks.push_back(std::move(*task));
    } else if (auto* id = std::get_if<ir::SessionId>(&message)) {
      if (id->id != session.id) {
        return FrameRejected{
            fmt::format("session {:016x}: asked to close session {:016x}", session.id, id->id),
            "closing another session"};
      }
      out.close_requested = true;
      break;
    } else {
      return FrameRejected{
          fmt::format("session {:016x}: a second Init on an open session", session.id),
          "second Init"};
    }
  }
  return out;
}

}  // namespace tb::bridge
