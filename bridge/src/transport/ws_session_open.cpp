// SessionConnection's opening: the handshake's decision (handshake.hpp) applied, the session
// admitted to the registry, its worker started and the Init answered.
#include <spdlog/spdlog.h>

#include "cluster/relay.hpp"
#include "host_state.hpp"
#include "net/tls.hpp"
#include "torchbridge/ir/codec.hpp"
#include "torchbridge/ir/format.hpp"
#include "torchbridge/ir/profile.hpp"
#include "transport/handshake.hpp"
#include "transport/ws_session.hpp"

namespace tb::bridge {

namespace websocket = boost::beast::websocket;

void SessionConnection::refuse(ir::SessionRefusal refusal, const std::string& reason) {
  host_.counters.add(Count::kSessionsRefused);
  spdlog::warn("{}: session refused ({}): {}", origin_.peer, ir::to_string(refusal), reason);
  queue_write(
      OutFrame::of_bytes(ir::encode(ir::TaskResponse{ir::InitRefusedResponse{refusal}, 0})));
  state_ = State::kClosing;
  worker_finished_ = true;
  maybe_close();
}

void SessionConnection::handshake(const ir::Bytes& bytes) {
  auto decision = decide_handshake(
      bytes,
      HandshakeFacts{&host_.options.auth_token, origin_.header_authorized, host_.device_count()});
  if (auto* refused = std::get_if<HandshakeRefused>(&decision)) {
    return refuse(refused->refusal, refused->reason);
  }
  auto& accepted = std::get<HandshakeAccepted>(decision);
  if (host_.options.auth_token && !ws_.next_layer().is_tls() &&
      !tb::net::is_loopback(origin_.address)) {
    const auto n = host_.counters.add(Count::kPlainCredentials);
    if ((n & (n - 1)) == 0) {  // 1, 2, 4, ...
      spdlog::warn(
          "{}: a credential arrived over plain ws:// from another machine ({} so far): serve "
          "with --tls-cert/--tls-key so that tokens and tensors are not sent in the clear",
          origin_.peer, n);
    }
  }
  // In a federation, the member a client reached first names the scope for every member.
  std::string scope = transfer_scope(origin_.address, origin_.header_authorized,
                                     accepted.init.authorization.view());
  if (host_.options.federation)
    scope = origin_.relayed_scope ? *origin_.relayed_scope : federation_scope(scope);
  if (!host_.local_device(accepted.init.device_index)) {
    return relay(accepted.init.device_index, bytes, std::move(scope));
  }
  SessionWorker::Identity identity;
  identity.session_id = accepted.init.session_id.id;
  identity.device_index = accepted.init.device_index;
  identity.transfer_scope = std::move(scope);
  identity.profile = accepted.profile;
  open_session(identity);
}

bool SessionConnection::admit(const SessionWorker::Identity& identity,
                              const std::shared_ptr<SessionWorker>& worker) {
  // Burn's refusals have no "busy" or "taken": these end with a websocket close whose reason
  // says why.
  switch (host_.sessions.admit(identity.session_id, shared_from_this(), worker,
                               host_.options.limits.max_sessions)) {
    case SessionRegistry::Admission::kStopping:
      close_with(websocket::close_code::going_away, "host stopping");
      return false;
    case SessionRegistry::Admission::kFull:
      host_.counters.add(Count::kSessionsRefused);
      spdlog::warn("{}: session refused: {} sessions open, the limit", origin_.peer,
                   host_.options.limits.max_sessions);
      close_with(websocket::close_code::try_again_later, "too many sessions");
      return false;
    case SessionRegistry::Admission::kIdInUse:
      host_.counters.add(Count::kSessionsRefused);
      spdlog::warn("{}: session {:016x} is already bound to another connection", origin_.peer,
                   identity.session_id);
      close_with(websocket::close_code::policy_error, "session id in use");
      return false;
    case SessionRegistry::Admission::kAdmitted:
      break;
  }
  return true;
}

void SessionConnection::open_session(const SessionWorker::Identity& identity) {
  auto worker = std::make_shared<SessionWorker>(host_, identity, weak_from_this());
  if (!admit(identity, worker)) return;
  session_.id = identity.session_id;
  if (auto started = worker->start(); !started) {
    host_.sessions.withdraw(session_.id);
    host_.counters.add(Count::kSessionsRefused);
    spdlog::error("{}: session {:016x} refused: {}", origin_.peer, session_.id,
                  started.error().what());
    session_.id = 0;
    return close_with(websocket::close_code::try_again_later, "host out of resources");
  }
  session_.worker = std::move(worker);
  host_.counters.add(Count::kSessionsTotal);
  init_timer_.cancel();
  ws_.read_message_max(host_.options.limits.max_message_bytes);
  backend::Backend* device = host_.local_device(identity.device_index);
  const ir::ProtocolProfile* profile = identity.profile;
  ir::SessionInfo info{profile->version, device->settings(), host_.device_count(), std::nullopt};
  // The answer to Init is bare in every version (a client on another version reads its refusal
  // the same way); the writes queue is empty here, so it is written bare at once and the session's
  // framing applies from the next answer on.
  session_.profile = profile;
  queue_write(OutFrame::of_bytes(ir::encode(ir::TaskResponse{ir::InitResponse{info}, 0})));
  writer_.set_tagged(profile->framing == ir::Framing::kTagged);
  state_ = State::kRunning;
  capture_ = FrameCapture::from_env(session_.id, profile->version);
  spdlog::info("session {:016x} opened from {} on device {} ({}), {}", session_.id, origin_.peer,
               identity.device_index, device->device_name(), ir::describe(*profile));
  read();
}

}  // namespace tb::bridge
