// A Burn 0.23 (protocol 6) session end to end over loopback: the bare handshake, then tagged
// messages both ways (framing.hpp), ReadTensors, the leaf and message sets of the version, and a
// 0.22.1 session on the same host at the same time.
#include <cstring>
#include <string>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/host_raw_client.hpp"
#include "transport/framing.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;
namespace framing = bridge::framing;

constexpr std::uint16_t kV6 = 6;

// A raw client speaking protocol 6's message layer.
class V6Client : public RawClient {
 public:
  bool open_v6(std::uint16_t port, std::uint64_t session_id) {
    if (open(port)) return false;
    if (send(encode(ClientFrame{SessionInit{kV6, SessionId{session_id}, 0, Bytes{}}}))) {
      return false;
    }
    // The answer to Init is bare.
    auto r = response();
    return r && std::holds_alternative<InitResponse>(r->content) &&
           std::get<InitResponse>(r->content).info.version == kV6;
  }
  // One message, whole behind its tag or as a head and segments, as burn-remote 0.23 sends it.
  boost::system::error_code send_message(const std::vector<std::uint8_t>& msgpack) {
    if (msgpack.size() <= framing::kMaxWhole) {
      // Reserved first: GCC 12 at C++20 warns (-Warray-bounds, a false positive) on the
      // reallocating insert into a one-byte vector.
      std::vector<std::uint8_t> whole;
      whole.reserve(msgpack.size() + 1);
      whole.push_back(framing::kWholeTag);
      whole.insert(whole.end(), msgpack.begin(), msgpack.end());
      return send(whole);
    }
    if (auto ec = send(head_of(msgpack.size()))) return ec;
    for (std::size_t at = 0; at < msgpack.size(); at += framing::kMaxFrame) {
      const std::size_t n = std::min(framing::kMaxFrame, msgpack.size() - at);
      if (auto ec = send(std::vector<std::uint8_t>(msgpack.begin() + at, msgpack.begin() + at + n)))
        return ec;
    }
    return {};
  }
  boost::system::error_code send_tasks_v6(std::vector<Task> tasks) {
    ClientFrame frame;
    for (auto& t : tasks) frame.emplace_back(std::move(t));
    return send_message(encode(frame));
  }
  static std::vector<std::uint8_t> head_of(std::uint64_t length) {
    std::vector<std::uint8_t> head{framing::kSegmentedTag};
    for (int i = 0; i < 8; ++i) head.push_back(static_cast<std::uint8_t>(length >> (8 * i)));
    return head;
  }
  // One answer, checked against the rules a 0.23 client reads them by; `frames` counts the
  // websocket messages it took.
  std::optional<TaskResponse> answer(std::size_t* frames = nullptr) {
    auto head = read();
    if (head.ec || head.bytes.empty()) return std::nullopt;
    EXPECT_LE(head.bytes.size(), framing::kMaxHead);
    std::vector<std::uint8_t> body;
    std::size_t count = 1;
    if (head.bytes[0] == framing::kWholeTag) {
      body.assign(head.bytes.begin() + 1, head.bytes.end());
    } else {
      auto parsed = framing::parse_head(head.bytes.data(), head.bytes.size());
      EXPECT_TRUE(parsed);
      if (!parsed) return std::nullopt;
      EXPECT_GT(parsed.value().length, framing::kMaxWhole) << "Burn segments only past 64 KiB";
      while (body.size() < parsed.value().length) {
        auto segment = read();
        if (segment.ec) return std::nullopt;
        EXPECT_LE(segment.bytes.size(), framing::kMaxFrame);
        EXPECT_FALSE(segment.bytes.empty());
        body.insert(body.end(), segment.bytes.begin(), segment.bytes.end());
        ++count;
      }
      EXPECT_EQ(body.size(), parsed.value().length);
    }
    if (frames) *frames = count;
    auto decoded = decode<TaskResponse>(Bytes::copy_of(body.data(), body.size()));
    EXPECT_TRUE(decoded) << (decoded ? "" : decoded.error().what());
    if (!decoded) return std::nullopt;
    return std::move(decoded).value();
  }
};

std::atomic<std::uint64_t> next_v6_session{0x6a2d'0000'0000'0001};

TensorIr f32_tensor(std::uint64_t id, std::uint64_t n) {
  return tir(id, {n}, DTypeKind::F32, TensorStatus::ReadOnly);
}

TEST(ProtocolV6, TaggedMessagesBothWaysAndReadTensorsInRequestOrder) {
  ConfiguredHost host(bridge::HostOptions{});
  V6Client c;
  ASSERT_TRUE(c.open_v6(host.port(), next_v6_session++));
  ASSERT_FALSE(
      c.send_tasks_v6({register_tensor(1, make_data({3}, DTypeKind::F32, {1, 2, 3})),
                       register_op(make_op<OpKind::NumericFloat_AddScalar>(
                           ScalarOpIr{tir(1, {3}), ScalarIr::f(1), out(2, {3})}, DTypeKind::F32)),
                       ReadTensorsTask{7, stream(), {f32_tensor(2, 3), f32_tensor(1, 3)}}}));
  std::size_t frames = 0;
  auto r = c.answer(&frames);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 7u);
  EXPECT_EQ(frames, 1u);
  const auto& read = std::get<ReadTensorsResponse>(r->content).result;
  ASSERT_EQ(read.index(), 0u) << std::get<1>(read).reason;
  const auto& data = std::get<0>(read);
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(values_of(data[0]), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(values_of(data[1]), (std::vector<double>{1, 2, 3}));
  // No tensors: an empty list.
  ASSERT_FALSE(c.send_tasks_v6({ReadTensorsTask{8, stream(), {}}}));
  r = c.answer();
  ASSERT_TRUE(r);
  EXPECT_TRUE(std::get<0>(std::get<ReadTensorsResponse>(r->content).result).empty());
  // All or nothing: one unknown tensor makes the whole answer an error naming it.
  ASSERT_FALSE(
      c.send_tasks_v6({ReadTensorsTask{9, stream(), {f32_tensor(1, 3), f32_tensor(99, 3)}}}));
  r = c.answer();
  ASSERT_TRUE(r);
  const auto& failed = std::get<ReadTensorsResponse>(r->content).result;
  ASSERT_EQ(failed.index(), 1u);
  EXPECT_THAT(std::get<1>(failed).reason, HasSubstr("#99"));
}

TEST(ProtocolV6, LargeMessagesAreSegmentedBothWays) {
  ConfiguredHost host(bridge::HostOptions{});
  V6Client c;
  ASSERT_TRUE(c.open_v6(host.port(), next_v6_session++));
  // 3 MiB up (a head and three segments), 3 MiB back the same way.
  const std::uint64_t n = 3 * (1 << 20) / 4;
  std::vector<double> values(n);
  for (std::uint64_t i = 0; i < n; ++i) values[i] = static_cast<double>(i % 1000);
  ASSERT_FALSE(c.send_tasks_v6({register_tensor(1, make_data({n}, DTypeKind::F32, values)),
                                ReadTensorsTask{1, stream(), {f32_tensor(1, n)}}}));
  std::size_t frames = 0;
  auto r = c.answer(&frames);
  ASSERT_TRUE(r);
  EXPECT_EQ(frames, 1u + 4u);  // head, then 3 MiB and a little in 1 MiB segments
  const auto& read = std::get<ReadTensorsResponse>(r->content).result;
  ASSERT_EQ(read.index(), 0u) << std::get<1>(read).reason;
  EXPECT_EQ(values_of(std::get<0>(read)[0]), values);
}

TEST(ProtocolV6, ADeclaredLengthOverTheLimitClosesBeforeAnythingIsCommitted) {
  bridge::HostOptions o;
  o.limits.max_message_bytes = 1 << 20;
  ConfiguredHost host(o);
  V6Client c;
  ASSERT_TRUE(c.open_v6(host.port(), next_v6_session++));
  ASSERT_FALSE(c.send(V6Client::head_of(std::uint64_t{1} << 40)));
  auto end = c.read();
  ASSERT_TRUE(end.closed()) << end.ec.message();
  EXPECT_EQ(end.close_code, 1009);  // too big
  EXPECT_TRUE(eventually([&] { return host.metrics().sessions_open == 0; }));
}

TEST(ProtocolV6, BrokenFramingEndsOnlyThatSession) {
  ConfiguredHost host(bridge::HostOptions{});
  const std::vector<std::vector<std::uint8_t>> bad = {
      {},                                      // no head
      {2, 0x90},                               // an unknown tag
      {1, 0, 1},                               // a length of the wrong size
      encode(ClientFrame{Task{SeedTask{1}}}),  // 0.22.1's bare framing
  };
  for (const auto& message : bad) {
    V6Client c;
    ASSERT_TRUE(c.open_v6(host.port(), next_v6_session++));
    ASSERT_FALSE(c.send(message));
    auto end = c.read();
    EXPECT_TRUE(end.closed()) << end.ec.message();
    EXPECT_EQ(end.close_code, 1008);
  }
  // An empty segment in the middle of a message.
  V6Client c;
  ASSERT_TRUE(c.open_v6(host.port(), next_v6_session++));
  ASSERT_FALSE(c.send(V6Client::head_of(100000)));
  ASSERT_FALSE(c.send({}));
  EXPECT_EQ(c.read().close_code, 1008);
  EXPECT_GE(host.metrics().frames_rejected, 5u);
}

TEST(ProtocolV6, EachVersionKeepsToItsOwnMessagesAndLeaves) {
  ConfiguredHost host(bridge::HostOptions{});
  {
    // 0.22.1's ReadTensor is not a message of protocol 6.
    V6Client c;
    ASSERT_TRUE(c.open_v6(host.port(), next_v6_session++));
    ASSERT_FALSE(c.send_tasks_v6({ReadTensorTask{1, stream(), f32_tensor(1, 3)}}));
    EXPECT_EQ(c.read().close_code, 1008);
  }
  {
    // 0.23's Fmod is not a leaf of protocol 2: its output says so.
    Session s(host.port(), 0);
    s.send({register_tensor(1, make_data({2}, DTypeKind::F32, {5, -5})),
            register_op(make_op<OpKind::Float_Fmod>(
                BinaryOpIr{tir(1, {2}), tir(1, {2}), out(2, {2})}, DTypeKind::F32))});
    auto r = s.read(tir(2, {2}));
    ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
    EXPECT_THAT(std::get<ExecutionError>(r).reason,
                HasSubstr("Float.Fmod is not an op of protocol 2"));
  }
  {
    // ...and it is one of protocol 6, with C's fmod (the dividend's sign).
    V6Client c;
    ASSERT_TRUE(c.open_v6(host.port(), next_v6_session++));
    ASSERT_FALSE(c.send_tasks_v6(
        {register_tensor(1, make_data({3}, DTypeKind::F32, {5.5, -5.5, 7})),
         register_tensor(2, make_data({3}, DTypeKind::F32, {2, 2, -3})),
         register_op(make_op<OpKind::Float_Fmod>(BinaryOpIr{tir(1, {3}), tir(2, {3}), out(3, {3})},
                                                 DTypeKind::F32)),
         register_op(make_op<OpKind::Float_FmodScalar>(
             ScalarOpIr{tir(1, {3}), ScalarIr::f(-2), out(4, {3})}, DTypeKind::F32)),
         ReadTensorsTask{1, stream(), {f32_tensor(3, 3), f32_tensor(4, 3)}}}));
    auto r = c.answer();
    ASSERT_TRUE(r);
    const auto& read = std::get<ReadTensorsResponse>(r->content).result;
    ASSERT_EQ(read.index(), 0u) << std::get<1>(read).reason;
    EXPECT_EQ(values_of(std::get<0>(read)[0]), (std::vector<double>{1.5, -1.5, 1}));
    EXPECT_EQ(values_of(std::get<0>(read)[1]), (std::vector<double>{1.5, -1.5, 1}));
  }
}

// A 0.22.1 session and a 0.23 session on one host at the same time, each in its own framing.
TEST(ProtocolV6, BothVersionsAtOnceOnOneHost) {
  ConfiguredHost host(bridge::HostOptions{});
  V6Client v6;
  ASSERT_TRUE(v6.open_v6(host.port(), next_v6_session++));
  Session v2(host.port(), 0);
  v2.send({ones(1, 4)});
  ASSERT_FALSE(v6.send_tasks_v6({ones(1, 4), ReadTensorsTask{3, stream(), {f32_tensor(1, 4)}}}));
  auto r2 = v2.read(tir(1, {4}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(r2));
  EXPECT_EQ(values_of(std::get<TensorData>(r2)), (std::vector<double>{1, 1, 1, 1}));
  auto r6 = v6.answer();
  ASSERT_TRUE(r6);
  EXPECT_EQ(values_of(std::get<0>(std::get<ReadTensorsResponse>(r6->content).result)[0]),
            (std::vector<double>{1, 1, 1, 1}));
  const auto m = host.metrics();
  ASSERT_EQ(m.sessions_by_protocol.size(), 2u);
  EXPECT_EQ(m.sessions_by_protocol[0].second, 1u);
  EXPECT_EQ(m.sessions_by_protocol[1].second, 1u);
}

}  // namespace
}  // namespace tb::test
