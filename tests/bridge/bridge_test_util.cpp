#include "bridge/bridge_test_util.hpp"

namespace tb::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

template <class Op>
beast::error_code Session::run(std::chrono::milliseconds timeout, Op op) {
  beast::error_code result = net::error::would_block;
  beast::get_lowest_layer(ws_).expires_after(timeout);
  op([&result](beast::error_code ec, auto&&...) { result = ec; });
  ioc_.restart();
  ioc_.run();
  return result;
}

Session::Session(std::uint16_t port, std::uint32_t device) : ws_(ioc_) {
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), port);
  auto ec = run(5s, [&](auto done) { beast::get_lowest_layer(ws_).async_connect(endpoint, done); });
  if (ec) {
    ADD_FAILURE() << "connect: " << ec.message();
    return;
  }
  ec = run(5s, [&](auto done) {
    ws_.async_handshake(fmt::format("127.0.0.1:{}", port), "/session", done);
  });
  if (ec) {
    ADD_FAILURE() << "websocket handshake: " << ec.message();
    return;
  }
  ws_.binary(true);
  static std::atomic<std::uint64_t> sessions{0x5e55'0000'0000'0001};
  ClientFrame init{SessionInit{kProtocolVersion, SessionId{sessions++}, device, Bytes()}};
  const auto frame = encode(init);
  ec = run(5s, [&](auto done) { ws_.async_write(net::buffer(frame), done); });
  if (ec) {
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

Session::~Session() {
  if (!open_) return;
  // Burn's client closes with Close(session id); a socket close is the same teardown here.
  beast::error_code ec;
  beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ec);
  beast::get_lowest_layer(ws_).close();
}

void Session::send(std::vector<Task> tasks) {
  ASSERT_TRUE(open_);
  ClientFrame frame;
  for (auto& t : tasks) frame.emplace_back(std::move(t));
  const auto bytes = encode(frame);
  const auto ec = run(10s, [&](auto done) { ws_.async_write(net::buffer(bytes), done); });
  if (ec) {
    open_ = false;
    FAIL() << "sending a frame: " << ec.message();
  }
}

std::optional<TaskResponse> Session::receive(std::chrono::milliseconds timeout) {
  if (!open_) return std::nullopt;
  beast::flat_buffer buffer;
  const auto ec = run(timeout, [&](auto done) { ws_.async_read(buffer, done); });
  if (ec) {
    open_ = false;
    ADD_FAILURE() << "no response within " << timeout.count() << " ms: " << ec.message();
    return std::nullopt;
  }
  const auto d = buffer.data();
  auto r = decode<TaskResponse>(Bytes::copy_of(d.data(), d.size()));
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
