#include "bridge/bridge_test_util.hpp"

#include <atomic>

#include "bridge/host_raw_client.hpp"

namespace tb::test {

Session::Session(std::uint16_t port, std::uint32_t device)
    : client_(std::make_unique<RawClient>()) {
  if (auto ec = client_->open(port)) {
    ADD_FAILURE() << "connect and websocket handshake: " << ec.message();
    return;
  }
  static std::atomic<std::uint64_t> sessions{0x5e55'0000'0000'0001};
  ClientFrame init{SessionInit{kProtocolVersion, SessionId{sessions++}, device, Bytes()}};
  if (auto ec = client_->send(encode(init), 5s)) {
    ADD_FAILURE() << "sending Init: " << ec.message();
    return;
  }
  open_ = true;
  auto r = receive(5s);
  if (!r || !std::holds_alternative<InitResponse>(r->content)) {
    ADD_FAILURE() << "the host did not answer the handshake with Init";
    open_ = false;
  }
}

// Burn's client closes with Close(session id); a socket close is the same teardown here.
Session::~Session() = default;

void Session::send(std::vector<Task> tasks) {
  ASSERT_TRUE(open_);
  if (auto ec = client_->send_tasks(std::move(tasks))) {
    open_ = false;
    FAIL() << "sending a frame: " << ec.message();
  }
}

std::optional<TaskResponse> Session::receive(std::chrono::milliseconds timeout) {
  if (!open_) return std::nullopt;
  auto reply = client_->read(timeout);
  if (reply.ec) {
    open_ = false;
    ADD_FAILURE() << "no response within " << timeout.count() << " ms: " << reply.ec.message();
    return std::nullopt;
  }
  auto r = decode<TaskResponse>(Bytes::copy_of(reply.bytes.data(), reply.bytes.size()));
  if (!r) {
    ADD_FAILURE() << "undecodable response: " << r.error().what();
    return std::nullopt;
  }
  return std::move(r).value();
}

WireResult<TensorData> Session::read(const TensorIr& t, std::chrono::milliseconds timeout) {
  const RequestId id = next_request();
  send({ReadTensorTask{id, stream(), t}});
  auto r = receive(timeout);
  if (!r) return ExecutionError{ExecutionErrorKind::Generic, "no response"};
  EXPECT_EQ(r->id, id);
  if (!std::holds_alternative<ReadTensorResponse>(r->content)) {
    return ExecutionError{ExecutionErrorKind::Generic, "not a ReadTensor response"};
  }
  return std::get<ReadTensorResponse>(r->content).result;
}

WireResult<std::monostate> Session::sync(std::chrono::milliseconds timeout) {
  const RequestId id = next_request();
  send({SyncBackendTask{id, stream()}});
  auto r = receive(timeout);
  if (!r) return ExecutionError{ExecutionErrorKind::Generic, "no response"};
  EXPECT_EQ(r->id, id);
  if (!std::holds_alternative<SyncBackendResponse>(r->content)) {
    return ExecutionError{ExecutionErrorKind::Generic, "not a SyncBackend response"};
  }
  return std::get<SyncBackendResponse>(r->content).result;
}

std::uint8_t Session::dtype_usage(const DType& dtype) {
  const RequestId id = next_request();
  send({DTypeUsageTask{id, dtype}});
  auto r = receive();
  if (!r || !std::holds_alternative<DTypeUsageResponse>(r->content)) {
    ADD_FAILURE() << "no DTypeUsage response";
    return 0xFF;
  }
  return std::get<DTypeUsageResponse>(r->content).usage.bits;
}

}  // namespace tb::test
