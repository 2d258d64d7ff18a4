// Hostile and broken clients against a live host on loopback: malformed frames and handshakes,
// clients that vanish mid-frame, mid-upload and mid-read, sessions reaching for each other's
// tensors, authorization, every configured limit, and stopping while sessions wait. Each one is
// answered or closed cleanly, the other sessions keep working, and nothing leaks.
#include <chrono>

#include <gmock/gmock.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/host_raw_client.hpp"
#include "torchbridge/ir/profile.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;
namespace websocket = boost::beast::websocket;

std::atomic<std::uint64_t> next_session{0xfa17'0000'0000'0001};
std::uint64_t new_session_id() {
  return next_session++;
}

Task add_scalar(std::uint64_t in, std::uint64_t out_id, Dims dims, double s) {
  return register_op(make_op<OpKind::NumericFloat_AddScalar>(
      ScalarOpIr{tir(in, dims), ScalarIr::f(s), out(out_id, dims)}, DTypeKind::F32));
}
Task drop(std::uint64_t id, Dims dims) {
  return register_op(
      make_op<OpKind::Drop_Op>(tir(id, std::move(dims), DTypeKind::F32, TensorStatus::ReadWrite)));
}

std::vector<double> read_values(Session& s, std::uint64_t id, Dims dims,
                                TensorStatus status = TensorStatus::ReadWrite) {
  auto r = s.read(tir(id, std::move(dims), DTypeKind::F32, status));
  if (!std::holds_alternative<TensorData>(r)) {
    ADD_FAILURE() << "read #" << id << ": " << std::get<ExecutionError>(r).reason;
    return {};
  }
  return values_of(std::get<TensorData>(r));
}

std::string read_error(Session& s, std::uint64_t id, Dims dims) {
  auto r = s.read(tir(id, std::move(dims)));
  if (!std::holds_alternative<ExecutionError>(r)) {
    ADD_FAILURE() << "read #" << id << " succeeded; an error was expected";
    return {};
  }
  return std::get<ExecutionError>(r).reason;
}

// The session still computes correctly (and frees what it made).
void expect_healthy(Session& s, std::uint64_t id) {
  SCOPED_TRACE("sentinel session");
  s.send({register_tensor(id, make_data({3}, DTypeKind::F32, {1, 2, 3})),
          add_scalar(id, id + 1, {3}, 1), drop(id, {3})});
  EXPECT_EQ(read_values(s, id + 1, {3}), (std::vector<double>{2, 3, 4}));
}

// A valid frame: a tensor and an op on it.
std::vector<std::uint8_t> valid_frame() {
  ClientFrame f{Task{register_tensor(1, make_data({4}, DTypeKind::F32, {1, 2, 3, 4}))},
                Task{add_scalar(1, 2, {4}, 1)}};
  return encode(f);
}

std::vector<std::uint8_t> bytes_of(std::initializer_list<int> b) {
  std::vector<std::uint8_t> v;
  for (int x : b) v.push_back(static_cast<std::uint8_t>(x));
  return v;
}
std::vector<std::uint8_t> operator+(std::vector<std::uint8_t> a, const std::string& s) {
  a.insert(a.end(), s.begin(), s.end());
  return a;
}
std::vector<std::uint8_t> operator+(std::vector<std::uint8_t> a,
                                    const std::vector<std::uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Malformed {
  std::string name;
  std::vector<std::uint8_t> bytes;
};

// Frames an open session may send that are not a frame of Burn's protocol.
std::vector<Malformed> malformed_frames(std::uint64_t own_session) {
  std::vector<Malformed> c;
  const auto good = valid_frame();
  c.push_back({"empty message", {}});
  c.push_back({"truncated to 1 byte", {good.begin(), good.begin() + 1}});
  c.push_back({"truncated to half", {good.begin(), good.begin() + good.size() / 2}});
  c.push_back({"truncated by 1 byte", {good.begin(), good.end() - 1}});
  c.push_back({"trailing bytes", good + bytes_of({0xc0})});
  c.push_back({"reserved msgpack byte", bytes_of({0xc1})});
  c.push_back({"a string, not a frame", bytes_of({0xa5}) + std::string("hello")});
  c.push_back({"an integer, not a frame", bytes_of({0x2a})});
  c.push_back({"a map, not a frame", bytes_of({0x80})});
  c.push_back({"a nil message", bytes_of({0x91, 0xc0})});
  c.push_back({"a float where a message goes", bytes_of({0x91, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0})});
  c.push_back(
      {"array32 declaring 2^32-1 messages", bytes_of({0xdd, 0xff, 0xff, 0xff, 0xff, 0x90})});
  c.push_back({"map32 declaring 2^32-1 entries", bytes_of({0x91, 0xdf, 0xff, 0xff, 0xff, 0xff})});
  c.push_back({"str32 declaring 4 GiB", bytes_of({0x91, 0xdb, 0xff, 0xff, 0xff, 0xf0, 0x41})});
  c.push_back({"bin32 declaring 4 GiB", bytes_of({0x91, 0xc6, 0xff, 0xff, 0xff, 0xf0, 0x41})});
  c.push_back({"a Task with an unknown variant", bytes_of({0x91, 0x81, 0xa4}) +
                                                     std::string("Task") + bytes_of({0x81, 0xa5}) +
                                                     std::string("Bogus") + bytes_of({0xc0})});
  c.push_back({"an unknown message variant",
               bytes_of({0x91, 0x81, 0xa5}) + std::string("Bogus") + bytes_of({0xc0})});
  c.push_back({"an unknown operation",
               bytes_of({0x91, 0x81, 0xa4}) + std::string("Task") + bytes_of({0x81, 0xb1}) +
                   std::string("RegisterOperation") + bytes_of({0x92, 0x91, 0x00, 0x81, 0xa8}) +
                   std::string("NotAnOpX") + bytes_of({0xc0})});
  {
    // 100 000 nested arrays: a recursive decoder without a depth bound overflows its stack.
    std::vector<std::uint8_t> deep(100000, 0x91);
    deep.push_back(0xc0);
    c.push_back({"100000 nested arrays", deep});
    std::vector<std::uint8_t> maps;
    for (int i = 0; i < 50000; ++i) {
      maps.push_back(0x81);
      maps.push_back(0xa1);
      maps.push_back('k');
    }
    maps.push_back(0xc0);
    c.push_back({"50000 nested maps", bytes_of({0x91}) + maps});
  }
  c.push_back({"a second Init", encode(ClientFrame{SessionInit{
                                    kProtocolVersion, SessionId{own_session}, 0, Bytes()}})});
  c.push_back({"closing another session", encode(ClientFrame{SessionId{own_session + 1000}})});
  return c;
}

TEST(HostFault, MalformedFramesCloseOnlyTheirSession) {
  TestHost host(1);
  Session sentinel(host.port(), 0);
  expect_healthy(sentinel, 10);
  const std::uint64_t rejected_before = host.host().metrics().frames_rejected;
  const std::size_t cases = malformed_frames(0).size();
  std::uint64_t id = 100;
  for (std::size_t i = 0; i < cases; ++i) {
    const std::uint64_t session = new_session_id();
    const auto m = malformed_frames(session)[i];
    SCOPED_TRACE(m.name);
    RawClient c;
    ASSERT_TRUE(c.open_session(host.port(), session));
    ASSERT_FALSE(c.send(m.bytes));
    const auto r = c.read(10s);
    ASSERT_TRUE(r.closed()) << "the host should close with a reason, got: " << r.ec.message();
    EXPECT_EQ(r.close_code, static_cast<std::uint16_t>(websocket::close_code::policy_error));
    EXPECT_FALSE(r.close_reason.empty());
    expect_healthy(sentinel, id += 10);
  }
  EXPECT_EQ(host.host().metrics().frames_rejected - rejected_before, cases);
  EXPECT_TRUE(eventually([&] { return host.host().metrics().sessions_open == 1; }));
}

TEST(HostFault, BadHandshakesAreRefusedWithBurnsRefusals) {
  TestHost host(1);
  Session sentinel(host.port(), 0);
  struct Case {
    std::string name;
    std::vector<std::uint8_t> bytes;
    SessionRefusal refusal;
  };
  // A refusal names the newest version served (Burn's client prints it to its user).
  const SessionRefusal incompatible{RefusalKind::IncompatibleProtocol, kProfiles.back().version};
  const std::vector<Case> cases = {
      {"garbage", bytes_of({0xc1, 0x00}), incompatible},
      {"empty message", {}, incompatible},
      {"an empty frame", encode(ClientFrame{}), incompatible},
      {"a Task before Init", encode(ClientFrame{Task{SyncBackendTask{1, stream()}}}), incompatible},
      {"two Inits",
       encode(ClientFrame{SessionInit{kProtocolVersion, SessionId{1}, 0, Bytes()},
                          SessionInit{kProtocolVersion, SessionId{2}, 0, Bytes()}}),
       incompatible},
      {"protocol version 1",
       encode(ClientFrame{SessionInit{1, SessionId{new_session_id()}, 0, Bytes()}}), incompatible},
      // Between the two served versions (2 and 6).
      {"protocol version 5",
       encode(ClientFrame{SessionInit{5, SessionId{new_session_id()}, 0, Bytes()}}), incompatible},
      {"protocol version 65535",
       encode(ClientFrame{SessionInit{65535, SessionId{new_session_id()}, 0, Bytes()}}),
       incompatible},
      {"device 7 of 1",
       encode(ClientFrame{SessionInit{kProtocolVersion, SessionId{new_session_id()}, 7, Bytes()}}),
       {RefusalKind::NoSuchDevice, 1}},
  };
  std::uint64_t id = 100;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RawClient client;
    ASSERT_FALSE(client.open(host.port()));
    ASSERT_FALSE(client.send(c.bytes));
    auto r = client.response();
    ASSERT_TRUE(r);
    ASSERT_TRUE(std::holds_alternative<InitRefusedResponse>(r->content));
    EXPECT_EQ(std::get<InitRefusedResponse>(r->content).refusal, c.refusal);
    EXPECT_TRUE(client.read().ended()) << "the host closes after refusing";
    expect_healthy(sentinel, id += 10);
  }
  {
    SCOPED_TRACE("an upgrade on an unknown path");
    RawClient client;
    EXPECT_TRUE(client.open(host.port(), "/nope"));
  }
  {
    SCOPED_TRACE("an Init reusing an open session's id");
    RawClient a, b;
    const std::uint64_t session = new_session_id();
    ASSERT_TRUE(a.open_session(host.port(), session));
    EXPECT_FALSE(b.open_session(host.port(), session));
    auto r = b.read();
    EXPECT_TRUE(r.ended());
  }
  expect_healthy(sentinel, id += 10);
}

// Connects, does part of something, and vanishes; `mode` picks what.
void vanish(std::uint16_t port, int mode) {
  RawClient c;
  if (mode == 0) {  // before the websocket upgrade completes
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::socket s(ioc);
    boost::system::error_code ec;
    s.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
    const std::string half = "GET /session HTTP/1.1\r\nHost: x\r\nUpgr";
    boost::asio::write(s, boost::asio::buffer(half), ec);
    return;
  }
  if (mode == 1) {  // upgraded, no Init
    EXPECT_FALSE(c.open(port));
    return;
  }
  ASSERT_TRUE(c.open_session(port, new_session_id()));
  switch (mode) {
    case 2: {  // mid-frame: a frame header announcing 1000 bytes, then 10 of them
      auto raw = bytes_of({0x82, 0x80 | 126, 0x03, 0xe8, 1, 2, 3, 4});
      raw.resize(raw.size() + 10, 0x55);
      EXPECT_FALSE(c.send_raw(raw));
      break;
    }
    case 3: {  // mid-message: the first fragment of a message
      const auto frame = valid_frame();
      EXPECT_FALSE(c.send_partial_message({frame.begin(), frame.begin() + frame.size() / 2}));
      break;
    }
    case 4: {  // mid-upload: a 1 MiB tensor, the connection gone as soon as it is sent
      std::vector<double> v(256 * 1024, 1.5);
      EXPECT_FALSE(c.send_tasks({register_tensor(1, make_data({256, 1024}, DTypeKind::F32, v)),
                                 add_scalar(1, 2, {256, 1024}, 1)}));
      break;
    }
    case 5: {  // mid-read: asks for 1 MiB and reads none of it
      std::vector<double> v(256 * 1024, 2.5);
      EXPECT_FALSE(c.send_tasks({register_tensor(1, make_data({256, 1024}, DTypeKind::F32, v)),
                                 add_scalar(1, 2, {256, 1024}, 1),
                                 ReadTensorTask{1, stream(), tir(2, {256, 1024})},
                                 ReadTensorTask{2, stream(), tir(1, {256, 1024})}}));
      // Gone once the answers have begun to arrive: the host is writing them.
      EXPECT_TRUE(eventually([&] { return c.unread_bytes() > 0; }));
      break;
    }
    default:
      break;
  }
}

TEST(HostFault, ClientsVanishingMidwayLeaveNoTensorsAndNoDescriptors) {
  TestHost host(1);
  {
    // Warm up: the host's lazily created descriptors exist before the baseline is taken.
    Session warm(host.port(), 0);
    expect_healthy(warm, 1);
  }
  Session sentinel(host.port(), 0);
  expect_healthy(sentinel, 10);
  ASSERT_TRUE(eventually([&] { return host.host().metrics().sessions_open == 1; }));
  const int fds_before = open_fds();
  constexpr int kRounds = 240;  // 40 of each of the six ways to vanish
  std::uint64_t id = 100;
  for (int i = 0; i < kRounds; ++i) {
    SCOPED_TRACE(i);
    vanish(host.port(), i % 6);
    if (i % 40 == 39) expect_healthy(sentinel, id += 10);
  }
  expect_healthy(sentinel, id += 10);
  // Everything the vanished sessions made is freed; only the sentinel remains, holding nothing.
  EXPECT_TRUE(eventually(
      [&] {
        const auto m = host.host().metrics();
        return m.sessions_open == 1 && m.live_tensors == 0 && m.live_bytes == 0;
      },
      30s))
      << "sessions open: " << host.host().metrics().sessions_open
      << ", live tensors: " << host.host().metrics().live_tensors;
  EXPECT_GE(host.host().metrics().sessions_total, 4u * kRounds / 6);
  EXPECT_TRUE(eventually([&] { return open_fds() <= fds_before; }, 30s))
      << "descriptors before: " << fds_before << ", after: " << open_fds();
}

TEST(HostFault, ASessionCannotReadOrFreeAnotherSessionsTensors) {
  TestHost host(1);
  Session a(host.port(), 0), b(host.port(), 0);
  a.send({register_tensor(5, make_data({2}, DTypeKind::F32, {1, 2})),
          register_tensor(6, make_data({1}, DTypeKind::F32, {42}))});
  b.send({register_tensor(5, make_data({3}, DTypeKind::F32, {7, 8, 9}))});
  // The same id names a different tensor in each session.
  EXPECT_EQ(read_values(a, 5, {2}, TensorStatus::ReadOnly), (std::vector<double>{1, 2}));
  EXPECT_EQ(read_values(b, 5, {3}, TensorStatus::ReadOnly), (std::vector<double>{7, 8, 9}));
  // b cannot see a's #6, nor consume it through an op, nor drop it.
  EXPECT_THAT(read_error(b, 6, {1}), HasSubstr("#6"));
  b.send({add_scalar(6, 7, {1}, 1), drop(6, {1}), drop(5, {3})});
  EXPECT_THAT(read_error(b, 7, {1}), HasSubstr("#6"));
  EXPECT_EQ(read_values(a, 6, {1}, TensorStatus::ReadOnly), (std::vector<double>{42}));
  EXPECT_EQ(read_values(a, 5, {2}, TensorStatus::ReadOnly), (std::vector<double>{1, 2}));
  // Nor close a's session.
  RawClient c;
  const std::uint64_t session = new_session_id();
  ASSERT_TRUE(c.open_session(host.port(), session));
  ASSERT_FALSE(c.send(encode(ClientFrame{SessionId{session + 1}})));
  EXPECT_TRUE(c.read().closed());
  EXPECT_EQ(read_values(a, 5, {2}), (std::vector<double>{1, 2}));
}

bridge::HostOptions with_token(std::string token) {
  bridge::HostOptions o;
  o.auth_token = std::move(token);
  return o;
}

TEST(HostFault, AuthorizationRefusesWrongOrMissingTokensAndAcceptsRightOnes) {
  ConfiguredHost host(with_token("s3cret-token"));
  const SessionRefusal unauthorized{RefusalKind::Unauthorized, 0};
  auto refused = [&](RawClient& c, const std::string& token) {
    EXPECT_FALSE(
        c.send(encode(ClientFrame{SessionInit{kProtocolVersion, SessionId{new_session_id()}, 0,
                                              Bytes::copy_of(token.data(), token.size())}})));
    auto r = c.response();
    return r && std::holds_alternative<InitRefusedResponse>(r->content) &&
           std::get<InitRefusedResponse>(r->content).refusal == unauthorized;
  };
  for (const std::string bad : {"", "s3cret-tokeN", "s3cret-token ", "s3cret", "x"}) {
    SCOPED_TRACE("handshake token \"" + bad + "\"");
    RawClient c;
    ASSERT_FALSE(c.open(host.port()));
    EXPECT_TRUE(refused(c, bad));
    EXPECT_TRUE(c.read().ended());
  }
  for (const std::string bad : {"Bearer wrong", "s3cret-token", "Bearer s3cret-token2"}) {
    SCOPED_TRACE("header \"" + bad + "\"");
    RawClient c;
    ASSERT_FALSE(c.open(host.port(), "/session", bad));
    EXPECT_TRUE(refused(c, ""));
  }
  EXPECT_EQ(host.metrics().sessions_refused, 8u);
  EXPECT_EQ(host.metrics().sessions_total, 0u);
  {
    RawClient c;
    EXPECT_TRUE(c.open_session(host.port(), new_session_id(), 0, "s3cret-token"));
  }
  {
    RawClient c;
    ASSERT_FALSE(c.open(host.port(), "/session", std::string("Bearer s3cret-token")));
    ASSERT_FALSE(c.send(encode(
        ClientFrame{SessionInit{kProtocolVersion, SessionId{new_session_id()}, 0, Bytes()}})));
    auto r = c.response();
    ASSERT_TRUE(r);
    EXPECT_TRUE(std::holds_alternative<InitResponse>(r->content));
  }
  EXPECT_EQ(host.metrics().sessions_total, 2u);
}

// ---- Limits ------------------------------------------------------------------------------------

TEST(HostLimits, AMessageOverTheLimitClosesThatSessionWithTooBig) {
  bridge::HostOptions o;
  o.limits.max_message_bytes = 64 * 1024;
  ConfiguredHost host(o);
  Session sentinel(host.port(), 0);
  RawClient c;
  ASSERT_TRUE(c.open_session(host.port(), new_session_id()));
  std::vector<double> v(32 * 1024, 1);  // 128 KiB of f32
  // The host may close before the whole message is written: the send can fail either way.
  (void)c.send_tasks({register_tensor(1, make_data({32 * 1024}, DTypeKind::F32, v))});
  const auto r = c.read();
  ASSERT_TRUE(r.ended());
  if (r.closed()) {
    EXPECT_EQ(r.close_code, static_cast<std::uint16_t>(websocket::close_code::too_big));
  }
  expect_healthy(sentinel, 10);
}

TEST(HostLimits, ATensorOverThePerTensorLimitIsAnErrorForThatTensorOnly) {
  bridge::HostOptions o;
  o.limits.max_tensor_bytes = 1024;
  ConfiguredHost host(o);
  Session s(host.port(), 0);
  std::vector<double> v(512, 1);  // 2 KiB of f32
  s.send({register_tensor(1, make_data({512}, DTypeKind::F32, v)),
          register_tensor(2, make_data({256}, DTypeKind::F32, std::vector<double>(256, 3)))});
  EXPECT_THAT(read_error(s, 1, {512}),
              HasSubstr("RegisterTensor #1: a tensor of 2048 bytes, over the host's per-tensor "
                        "limit of 1024 bytes"));
  // An op whose output would be too big does not run (nothing is allocated).
  s.send({add_scalar(2, 3, {256}, 1),
          register_op(make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{out(4, {1 << 20, 1 << 20})},
                                                       DTypeKind::F32)),
          register_op(
              make_op<OpKind::BaseFloat_Zeros>(CreationOpIr{out(5, {1 << 9})}, DTypeKind::F32))});
  EXPECT_THAT(read_error(s, 4, {1 << 20, 1 << 20}),
              HasSubstr("output #4 of shape [1048576, 1048576] (f32) would take 4398046511104 "
                        "bytes, over the host's per-tensor limit of 1024 bytes"));
  EXPECT_THAT(read_error(s, 5, {1 << 9}), HasSubstr("per-tensor limit"));
  EXPECT_EQ(read_values(s, 3, {256}), std::vector<double>(256, 4));
  expect_healthy(s, 10);
}

TEST(HostLimits, AShapeWhoseSizeOverflowsIsRefusedByTheDefaultLimit) {
  TestHost host(1);
  Session s(host.port(), 0);
  const Dims huge = {std::uint64_t{1} << 40, std::uint64_t{1} << 40, 16};
  s.send(
      {register_op(make_op<OpKind::BaseFloat_Ones>(CreationOpIr{out(1, huge)}, DTypeKind::F32))});
  EXPECT_THAT(read_error(s, 1, huge), HasSubstr("more than 2^64 bytes"));
  expect_healthy(s, 10);
}

TEST(HostLimits, LiveBytesOverTheSessionLimitFailTheNewTensorOnly) {
  bridge::HostOptions o;
  o.limits.max_session_bytes = 4096;
  ConfiguredHost host(o);
  Session s(host.port(), 0), other(host.port(), 0);
  const auto kib = [](double x) {
    return make_data({256}, DTypeKind::F32, std::vector<double>(256, x));
  };
  s.send({register_tensor(1, kib(1)), register_tensor(2, kib(2)), register_tensor(3, kib(3)),
          register_tensor(4, kib(4)), register_tensor(5, kib(5))});
  EXPECT_THAT(read_error(s, 5, {256}), HasSubstr("over the host's limit of 4096 bytes"));
  s.send({add_scalar(1, 6, {256}, 1)});
  EXPECT_THAT(read_error(s, 6, {256}), HasSubstr("over the host's limit of 4096 bytes"));
  // Freeing makes room again; other sessions have their own budget.
  s.send({drop(4, {256}), register_tensor(7, kib(7))});
  EXPECT_EQ(read_values(s, 7, {256}, TensorStatus::ReadOnly), std::vector<double>(256, 7));
  other.send({register_tensor(1, kib(9)), register_tensor(2, kib(9)), register_tensor(3, kib(9))});
  EXPECT_EQ(read_values(other, 3, {256}), std::vector<double>(256, 9));
}

TEST(HostLimits, SessionsOverTheLimitAreClosedWithAReasonUntilOneLeaves) {
  bridge::HostOptions o;
  o.limits.max_sessions = 2;
  ConfiguredHost host(o);
  auto a = std::make_unique<RawClient>();
  RawClient b;
  ASSERT_TRUE(a->open_session(host.port(), new_session_id()));
  ASSERT_TRUE(b.open_session(host.port(), new_session_id()));
  {
    RawClient c;
    EXPECT_FALSE(c.open_session(host.port(), new_session_id()));
    // open_session consumed the close: the connection is over.
    EXPECT_TRUE(c.read().ended());
  }
  EXPECT_EQ(host.metrics().sessions_refused, 1u);
  a.reset();
  EXPECT_TRUE(eventually([&] { return host.metrics().sessions_open == 1; }));
  RawClient d;
  EXPECT_TRUE(d.open_session(host.port(), new_session_id()));
}

TEST(HostLimits, TheSessionLimitsCloseReasonSaysWhy) {
  bridge::HostOptions o;
  o.limits.max_sessions = 1;
  ConfiguredHost host(o);
  RawClient a, b;
  ASSERT_TRUE(a.open_session(host.port(), new_session_id()));
  ASSERT_FALSE(b.open(host.port()));
  ASSERT_FALSE(b.send(
      encode(ClientFrame{SessionInit{kProtocolVersion, SessionId{new_session_id()}, 0, Bytes()}})));
  const auto r = b.read();
  ASSERT_TRUE(r.closed());
  EXPECT_EQ(r.close_code, static_cast<std::uint16_t>(websocket::close_code::try_again_later));
  EXPECT_EQ(r.close_reason, "too many sessions");
}

TEST(HostLimits, AConnectionThatNeverSendsItsInitIsClosedAfterTheInitTimeout) {
  bridge::HostOptions o;
  o.init_timeout = std::chrono::milliseconds(300);
  ConfiguredHost host(o);
  RawClient idle;
  ASSERT_FALSE(idle.open(host.port()));
  // The client answers the host's pings while it waits (read() runs its io_context): without the
  // deadline this connection would stay open for ever.
  const auto start = std::chrono::steady_clock::now();
  const auto r = idle.read(std::chrono::seconds(5));
  ASSERT_TRUE(r.closed()) << r.ec.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  EXPECT_EQ(r.close_code, static_cast<std::uint16_t>(websocket::close_code::policy_error));
  EXPECT_EQ(r.close_reason, "no Init in time");
  EXPECT_EQ(host.metrics().sessions_refused, 1u);
  // A session that did send its Init outlives the deadline.
  Session s(host.port(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  expect_healthy(s, 10);
}

// A host with an idle timeout of 300 ms, and a session open on it.
struct IdleSession {
  static bridge::HostOptions options() {
    bridge::HostOptions o;
    o.idle_timeout = std::chrono::milliseconds(300);
    return o;
  }
  ConfiguredHost host{options()};
  RawClient client;
  IdleSession() { EXPECT_TRUE(client.open_session(host.port(), new_session_id())); }
};

// The host pings a silent session after half the idle timeout and closes it when the ping goes
// unanswered for the other half (transport/idle_watch.hpp). This client runs no io_context while
// it waits, so it answers nothing, as a client whose machine went away would not.
TEST(HostLimits, ASilentClientThatAnswersNoPingIsClosedAfterTheIdleTimeout) {
  IdleSession dead;
  ASSERT_EQ(dead.host.metrics().sessions_open, 1u);
  EXPECT_TRUE(eventually([&] { return dead.host.metrics().sessions_open == 0; }, 3s))
      << "a client silent for ten idle timeouts is still served";
  EXPECT_TRUE(dead.client.read(2s).ended());
}

// A client that answers the host's pings stays, however long it sends nothing: its reads run
// while it waits.
TEST(HostLimits, AnIdleClientThatAnswersPingsOutlivesTheIdleTimeout) {
  IdleSession idle;
  // Five idle timeouts: this read ends at its own deadline, not because the host closed.
  const auto r = idle.client.read(1500ms);
  EXPECT_EQ(r.ec, boost::beast::error::timeout) << r.ec.message();
  EXPECT_EQ(idle.host.metrics().sessions_failed, 0u);
}

TEST(HostLimits, AnOversizedFirstMessageIsRefusedBeforeTheClientIsAuthorized) {
  bridge::HostOptions o;
  o.limits.max_init_bytes = 1024;
  ConfiguredHost host(o);
  RawClient c;
  ASSERT_FALSE(c.open(host.port()));
  (void)c.send(std::vector<std::uint8_t>(64 * 1024, 0x90));
  const auto r = c.read();
  ASSERT_TRUE(r.ended());
  if (r.closed()) {
    EXPECT_EQ(r.close_code, static_cast<std::uint16_t>(websocket::close_code::too_big));
  }
  // Past its Init a session gets the full message size.
  Session s(host.port(), 0);
  std::vector<double> v(16 * 1024, 2);  // 64 KiB of f32
  s.send({register_tensor(1, make_data({16 * 1024}, DTypeKind::F32, v))});
  EXPECT_EQ(read_values(s, 1, {16 * 1024}), v);
}

TEST(HostLimits, ConnectionsOverTheLimitAreClosedAtOnceUntilOneLeaves) {
  bridge::HostOptions o;
  o.limits.max_connections = 3;
  ConfiguredHost host(o);
  Session working(host.port(), 0);
  auto idle_a = std::make_unique<RawClient>();
  RawClient idle_b;
  ASSERT_FALSE(idle_a->open(host.port()));
  ASSERT_FALSE(idle_b.open(host.port()));
  EXPECT_TRUE(eventually([&] { return host.metrics().connections_open == 3; }));
  {
    RawClient over;
    EXPECT_TRUE(over.open(host.port()));  // the upgrade fails: the host closed the socket
  }
  EXPECT_EQ(host.metrics().connections_refused, 1u);
  expect_healthy(working, 10);
  idle_a.reset();
  EXPECT_TRUE(eventually([&] { return host.metrics().connections_open == 2; }));
  Session late(host.port(), 0);
  expect_healthy(late, 20);
  EXPECT_THAT(host.host().metrics_text(), HasSubstr("torchbridge_connections_refused_total 1\n"));
}

TEST(HostLimits, TheGraphCacheEvictsTheOldestGraph) {
  bridge::HostOptions o;
  o.limits.max_graphs_per_session = 2;
  ConfiguredHost host(o);
  Session s(host.port(), 0);
  const auto rel = [](std::uint64_t id, TensorStatus st) {
    return TensorIr{TensorId{id}, Shape{{1}}, st, DTypeKind::F32};
  };
  const std::vector<OperationIr> graph = {make_op<OpKind::Float_Exp>(
      UnaryOpIr{rel(0, TensorStatus::ReadOnly), rel(1, TensorStatus::NotInit)}, DTypeKind::F32)};
  const auto bind = [](std::uint64_t in, std::uint64_t out_id) {
    GraphBindings b;
    b.tensors = {{TensorId{0}, TensorId{in}}, {TensorId{1}, TensorId{out_id}}};
    b.shapes = {1, 2};
    return b;
  };
  s.send({register_tensor(1, make_data({2}, DTypeKind::F32, {0, 0}))});
  for (std::uint64_t g = 1; g <= 3; ++g) {
    s.send({RegisterAndExecuteGraphTask{stream(), g, graph, bind(1, 10 + g)}});
  }
  EXPECT_EQ(read_values(s, 13, {2}), (std::vector<double>{1, 1}));
  s.send({ExecuteGraphTask{stream(), 3, bind(1, 20)}, ExecuteGraphTask{stream(), 1, bind(1, 21)}});
  EXPECT_EQ(read_values(s, 20, {2}), (std::vector<double>{1, 1}));
  EXPECT_THAT(read_error(s, 21, {2}), HasSubstr("graph 1 was never registered"));
}

// ---- Stopping ----------------------------------------------------------------------------------

// Host::stop used to wait out the transfer timeout (60 s by default) for a session blocked on the
// other side of a transfer that will now never come.
constexpr auto kStopBound = 5s;

// `setup` sends what blocks the session's worker in a wait that only the transfer timeout or
// stop() ends; `waiting(host)` holds once the worker has got there. (Each wait also checks the
// host's stopping flag before it blocks, so a stop that came first would end it too: the check
// that the worker got there is what makes these tests exercise the wake-up.)
template <class Setup, class Waiting>
std::chrono::steady_clock::duration time_to_stop(int devices, Setup setup, Waiting waiting) {
  bridge::HostOptions o;
  o.transfer_timeout = 60s;
  ConfiguredHost host(o, devices);
  RawClient c;
  EXPECT_TRUE(c.open_session(host.port(), new_session_id()));
  setup(c);
  EXPECT_TRUE(eventually([&] { return waiting(host.host()); })) << "the worker never got there";
  const auto start = std::chrono::steady_clock::now();
  host.host().stop();
  return std::chrono::steady_clock::now() - start;
}

TEST(HostStop, WakesASessionWaitingForASameHostTransfer) {
  // The registration before it has run (the host counts a task's tensors once it ends): the
  // worker has gone on to the transfer's rendezvous.
  EXPECT_LT(time_to_stop(
                1,
                [](RawClient& c) {
                  c.send_tasks({register_tensor(1, make_data({1}, DTypeKind::F32, {1})),
                                register_local(4242, 2)});
                },
                [](bridge::Host& h) { return h.metrics().live_tensors == 1; }),
            kStopBound);
}

TEST(HostStop, WakesASessionWaitingForAnAllReduce) {
  EXPECT_LT(
      time_to_stop(
          2,
          [](RawClient& c) {
            c.send_tasks({register_tensor(1, make_data({1}, DTypeKind::F32, {1})),
                          register_op(make_op<OpKind::Distributed_AllReduce>(AllReduceOpIr{
                              tir(1, {1}), out(2, {1}), ReduceOperation::Sum, {{0, 0}, {0, 1}}}))});
          },
          // Device 1's session never comes: the worker waits in the round it began.
          [](bridge::Host& h) { return executed(h, "Distributed.AllReduce") == 1; }),
      kStopBound);
}

TEST(HostStop, WakesASessionWaitingForADownload) {
  bridge::HostOptions o;
  o.transfer_timeout = 60s;
  ConfiguredHost source(o);  // never exposes the transfer
  const Peer peer{PeerKind::WebSocket, Address{"ws", "127.0.0.1", source.port()}, {}};
  // The worker's download has reached the source's /data route and waits for its answer.
  EXPECT_LT(time_to_stop(
                1, [&](RawClient& c) { c.send_tasks({register_remote(77, peer, 1)}); },
                [&](bridge::Host&) { return source.metrics().data_connections_open == 1; }),
            kStopBound);
  const auto start = std::chrono::steady_clock::now();
  source.host().stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, kStopBound);
}

TEST(HostStop, DropsQueuedWorkInsteadOfRunningIt) {
  bridge::HostOptions o;
  ConfiguredHost host(o);
  RawClient c;
  ASSERT_TRUE(c.open_session(host.port(), new_session_id()));
  // Many slow tasks queued: stop must not run them all.
  std::vector<Task> tasks = {
      register_tensor(1, make_data({512, 512}, DTypeKind::F32, std::vector<double>(512 * 512, 1)))};
  for (int i = 0; i < 2000; ++i)
    tasks.push_back(register_op(make_op<OpKind::Float_Matmul>(
        MatmulOpIr{tir(1, {512, 512}), tir(1, {512, 512}), out(2 + i, {512, 512})},
        DTypeKind::F32)));
  ASSERT_FALSE(c.send_tasks(std::move(tasks)));
  EXPECT_TRUE(eventually([&] { return executed(host.host(), "Float.Matmul") > 0; }))
      << "the worker began on the queue";
  const auto start = std::chrono::steady_clock::now();
  host.host().stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, kStopBound);
}

}  // namespace
}  // namespace tb::test
