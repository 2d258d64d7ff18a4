// The session layer against a scripted host: Burn's handshake bytes, its flush rules, request
// ids, tensor statuses and Drop, and bounded failures (timeouts, refusals, disconnects).
#include "torchbridge/client/device.hpp"

#include <chrono>

#include <gtest/gtest.h>

#include "client/fake_host.hpp"
#include "torchbridge/client/tensor.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
using client::Device;
using client::SessionOptions;
using client::Tensor;

std::vector<std::uint8_t> hex(std::string_view text) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < text.size(); i += 3) {
    out.push_back(
        static_cast<std::uint8_t>(std::stoi(std::string(text.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

const ir::Task& task_at(const ir::ClientFrame& frame, std::size_t i) {
  return std::get<ir::Task>(frame.at(i));
}

const ir::OperationIr& op_at(const ir::ClientFrame& frame, std::size_t i) {
  return std::get<ir::RegisterOperationTask>(task_at(frame, i)).op;
}

SessionOptions pinned(std::uint64_t id = 0x0123456789abcdefULL) {
  SessionOptions o;
  o.session_id = id;
  return o;
}

TEST(ClientSession, HandshakeIsBurnsInitFrame) {
  FakeHost host(FakeHost::answer_all, FakeHost::flex_init(3));
  auto device = Device::connect(host.address(), 0, pinned());
  ASSERT_TRUE(device) << device.error().what();
  // burn-protocol vector frame_init_v2: [Init{2, session 0x0123456789abcdef, device 0, auth ""}].
  ASSERT_GE(host.frames().size(), 1u);
  EXPECT_EQ(host.frames()[0],
            hex("91 81 a4 49 6e 69 74 94 02 91 cf 01 23 45 67 89 ab cd ef 00 c4 00"));
  EXPECT_EQ(device.value().device_count(), 3u);
  EXPECT_EQ(device.value().float_dtype(), ir::DType(ir::DTypeKind::F32));
  EXPECT_EQ(device.value().int_dtype(), ir::DType(ir::DTypeKind::I32));
  EXPECT_EQ(device.value().address(), host.address());
}

TEST(ClientSession, CredentialTravelsInInit) {
  FakeHost host(FakeHost::answer_all, FakeHost::flex_init());
  auto options = pinned(7);
  options.credential = "tok";
  auto device = Device::connect(host.address(), 1, options);
  ASSERT_TRUE(device) << device.error().what();
  // frame_init_v2_token.
  EXPECT_EQ(host.frames().at(0), hex("91 81 a4 49 6e 69 74 94 02 91 07 01 c4 03 74 6f 6b"));
}

TEST(ClientSession, FlushRulesRequestIdsStatusesAndClose) {
  FakeHost host(FakeHost::answer_all, FakeHost::flex_init());
  auto device = Device::connect(host.address(), 0, pinned()).value();

  // RegisterTensor goes out at once, alone.
  auto a = Tensor::from_vector<float>(device, {1, 2, 3});
  ASSERT_TRUE(host.wait_frames(2));
  {
    auto frames = host.task_frames();
    ASSERT_EQ(frames.size(), 1u);
    ASSERT_EQ(frames[0].size(), 1u);
    EXPECT_TRUE(std::holds_alternative<ir::RegisterTensorTask>(task_at(frames[0], 0)));
  }
  // Three ops stay batched; the sync takes them along as one frame of four messages.
  auto b = a + 1.0;             // a kept: ReadOnly
  auto c = std::move(b) * 2.0;  // b's last reference: ReadWrite
  auto d = c - a;               // both kept
  ASSERT_TRUE(device.sync());
  {
    auto frames = host.task_frames();
    ASSERT_EQ(frames.size(), 2u);
    const auto& f = frames[1];
    ASSERT_EQ(f.size(), 4u);
    EXPECT_EQ(op_at(f, 0).as<ir::ScalarOpIr>().lhs.status, ir::TensorStatus::ReadOnly);
    EXPECT_EQ(op_at(f, 1).as<ir::ScalarOpIr>().lhs.status, ir::TensorStatus::ReadWrite);
    EXPECT_EQ(op_at(f, 2).as<ir::BinaryOpIr>().lhs.status, ir::TensorStatus::ReadOnly);
    EXPECT_EQ(op_at(f, 2).as<ir::BinaryOpIr>().rhs.status, ir::TensorStatus::ReadOnly);
    EXPECT_EQ(op_at(f, 0).as<ir::ScalarOpIr>().out.status, ir::TensorStatus::NotInit);
    // Burn's request ids start at 0 (the handshake's answer id 0 is not a request).
    EXPECT_EQ(std::get<ir::SyncBackendTask>(task_at(f, 3)).request_id, 0u);
  }
  // Four fire-and-forget ops fill a batch by themselves.
  auto e1 = d + 1.0;
  auto e2 = d + 2.0;
  auto e3 = d + 3.0;
  auto e4 = d + 4.0;
  ASSERT_TRUE(host.wait_frames(4));
  EXPECT_EQ(host.task_frames().at(2).size(), 4u);

  // A read of the last reference is ReadWrite and sends no Drop afterwards.
  auto read = std::move(e1).to_vector<float>();
  ASSERT_TRUE(read) << read.error().what();
  EXPECT_EQ(read.value().size(), 3u);
  {
    auto frames = host.task_frames();
    const auto& r = std::get<ir::ReadTensorTask>(task_at(frames.back(), 0));
    EXPECT_EQ(r.tensor.status, ir::TensorStatus::ReadWrite);
    EXPECT_EQ(r.request_id, 1u);
  }
  // Dropping the last reference sends Drop (batched), then Close ends the last frame.
  const auto e2_id = e2.id();
  { auto gone = std::move(e2); }
  device.close();
  auto frames = host.task_frames();
  ASSERT_FALSE(frames.empty());
  const auto& last = frames.back();
  ASSERT_GE(last.size(), 2u);
  const auto& drop = op_at(last, last.size() - 2);
  EXPECT_EQ(drop.kind, ir::OpKind::Drop_Op);
  EXPECT_EQ(drop.as<ir::TensorIr>().id, e2_id);
  EXPECT_EQ(drop.as<ir::TensorIr>().status, ir::TensorStatus::ReadWrite);
  EXPECT_EQ(drop.as<ir::TensorIr>().shape.dims, (ir::Dims{3}));
  ASSERT_TRUE(std::holds_alternative<ir::SessionId>(last.back()));
  EXPECT_EQ(std::get<ir::SessionId>(last.back()).id, 0x0123456789abcdefULL);
  EXPECT_FALSE(device.connected());
  auto after = device.sync();
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, ErrorCode::kIo);
}

TEST(ClientSession, UnansweredRequestTimesOut) {
  FakeHost host([](const ir::ClientFrame&) { return std::vector<ir::TaskResponse>{}; },
                FakeHost::flex_init());
  auto device = Device::connect(host.address(), 0).value();
  const auto start = std::chrono::steady_clock::now();
  auto s = device.sync(200ms);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kTimeout);
  EXPECT_NE(s.error().what().find("SyncBackend"), std::string::npos) << s.error().what();
  EXPECT_LT(elapsed, 5s);
  // The session stays usable after a timeout.
  EXPECT_TRUE(device.connected());
}

TEST(ClientSession, DisconnectFailsPendingAndLaterCalls) {
  FakeHost host([](const ir::ClientFrame&) { return std::nullopt; }, FakeHost::flex_init());
  auto device = Device::connect(host.address(), 0).value();
  const auto start = std::chrono::steady_clock::now();
  auto s = device.sync(30s);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kIo) << s.error().what();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_FALSE(device.connected());
  auto t = Tensor::from_vector<float>(device, {1, 2});
  auto read = t.to_vector<float>(30s);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::kIo);
}

TEST(ClientSession, UnansweredHandshakeTimesOut) {
  FakeHost host(FakeHost::answer_all, std::nullopt);
  SessionOptions options;
  options.connect_timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  auto device = Device::connect(host.address(), 0, options);
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().code, ErrorCode::kTimeout) << device.error().what();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(ClientSession, RefusalsAreErrors) {
  FakeHost host(
      FakeHost::answer_all,
      ir::TaskResponse{
          ir::InitRefusedResponse{ir::SessionRefusal{ir::RefusalKind::NoSuchDevice, 2}}, 0});
  auto device = Device::connect(host.address(), 5);
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().code, ErrorCode::kNotFound);
  EXPECT_NE(device.error().what().find("no device 5"), std::string::npos) << device.error().what();
}

TEST(ClientSession, NothingListeningIsAnError) {
  std::uint16_t port = 0;
  {
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor a(
        ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    port = a.local_endpoint().port();
  }
  auto device = Device::connect("127.0.0.1:" + std::to_string(port));
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().code, ErrorCode::kIo) << device.error().what();
}

TEST(ClientSession, AddressesParseAsBurnParsesThem) {
  auto a = client::parse_address("WS://LocalHost:3000/session?x");
  ASSERT_TRUE(a);
  EXPECT_EQ(a.value().scheme, "ws");
  EXPECT_EQ(a.value().host, "LocalHost");
  EXPECT_EQ(a.value().port, std::optional<std::uint16_t>(3000));
  auto b = client::parse_address("127.0.0.1:7373");
  ASSERT_TRUE(b);
  EXPECT_EQ(client::format_address(b.value()), "ws://127.0.0.1:7373");
  auto v6 = client::parse_address("ws://[::1]:80");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6.value().host, "[::1]");
  auto tls = client::parse_address("WSS://example.org:443");
  ASSERT_TRUE(tls);
  EXPECT_EQ(client::format_address(tls.value()), "wss://example.org:443");
  EXPECT_FALSE(client::parse_address("http://example.org:80"));
  EXPECT_FALSE(client::parse_address("ws://:3000"));
}

TEST(ClientSession, InvalidArgumentsGiveErrorTensors) {
  FakeHost host(FakeHost::answer_all, FakeHost::flex_init());
  auto device = Device::connect(host.address(), 0).value();
  auto a = Tensor::from_vector<float>(device, {1, 2, 3, 4}, {2, 2});
  auto b = Tensor::from_vector<float>(device, {1, 2, 3}, {3, 1});
  auto bad = client::matmul(a, b);
  ASSERT_NE(bad.error(), nullptr);
  // Errors flow through later ops and come back from reads, with nothing sent for them.
  auto later = client::sum(bad * 2.0);
  auto read = later.to_vector<float>();
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(read.error().what().find("matmul"), std::string::npos) << read.error().what();
  EXPECT_FALSE(Tensor::from_vector<float>(device, {1, 2, 3}, {2, 2}).ok());
  EXPECT_FALSE(client::reshape(a, {3, -1}).ok());
  EXPECT_FALSE(client::cat({a, b}, 0).ok());
  EXPECT_FALSE(client::sum_dim(a, 2).ok());
  EXPECT_FALSE((a + Tensor()).ok());
  auto wrong_dtype = Tensor::from_vector<float>(device, {1, 2});
  auto as_int = wrong_dtype.to_vector<std::int32_t>();
  ASSERT_FALSE(as_int);
  EXPECT_NE(as_int.error().what().find("f32"), std::string::npos) << as_int.error().what();
}

}  // namespace
}  // namespace tb::test
