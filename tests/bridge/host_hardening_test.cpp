// The hardening findings against a host in this process (issue 16): answers that are never read,
// memory held outside the tensors, exposures, same-host transfer scopes, `/data` clients that go
// away, collectives naming absent devices, answers over the client's message limit, and frame
// headers declaring huge messages. Findings that need the allocator to fail run in a child process
// under an address-space limit (memory_pressure_test.cpp).
#include <cstdlib>
#include <string>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/host_raw_client.hpp"
#include "torchbridge/ir/block_cache.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

std::atomic<std::uint64_t> next_hardening_session{0x4a2d'0000'0000'0001};
std::uint64_t new_hardening_session_id() {
  return next_hardening_session++;
}

void expect_computes(std::uint16_t port) {
  SCOPED_TRACE("a sentinel session");
  Session s(port, 0);
  s.send({register_tensor(1, make_data({3}, DTypeKind::F32, {1, 2, 3})),
          register_op(make_op<OpKind::NumericFloat_AddScalar>(
              ScalarOpIr{tir(1, {3}), ScalarIr::f(1), out(2, {3})}, DTypeKind::F32))});
  auto r = s.read(tir(2, {3}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(r)) << std::get<ExecutionError>(r).reason;
  EXPECT_EQ(values_of(std::get<TensorData>(r)), (std::vector<double>{2, 3, 4}));
}

// Finding 9: 256 unread reads of a 4 MiB tensor grew the host by 1,029 MiB. Answers now borrow the
// tensor's storage, at most 64 wait for the socket, and the session's tasks wait behind them.
TEST(HostHardening, UnreadAnswersAreBoundedAndTheSessionWaitsForItsClient) {
  ConfiguredHost host(bridge::HostOptions{});
  RawClient c;
  ASSERT_TRUE(c.open_session(host.port(), new_hardening_session_id()));
  const std::uint64_t n = kMiB;  // 4 MiB of f32
  ASSERT_FALSE(c.send_tasks({ones(1, n)}));
  ASSERT_FALSE(c.send_tasks({SyncBackendTask{1, stream()}}));
  ASSERT_TRUE(c.response());
  const std::uint64_t rss_before = status_bytes("VmRSS");
  std::vector<Task> reads;
  for (RequestId r = 0; r < 256; ++r) reads.push_back(read_task(100 + r, 1, n));
  ASSERT_FALSE(c.send_tasks(std::move(reads)));
  // Nothing is read: the answers fill the queue's 64 places, and then the session waits for its
  // client, what the host holds within the queue's bound.
  EXPECT_TRUE(eventually([&] { return host.metrics().held_bytes >= 64 * 4 * kMiB; }))
      << "the answer queue never filled";
  const auto m = host.metrics();
  EXPECT_LE(m.held_bytes, 65 * 4 * kMiB) << "queued answers are bounded by the answer queue";
  if (!kAddressSanitizer) {
    EXPECT_LT(status_bytes("VmRSS"), rss_before + 200 * kMiB)
        << "answers borrow the tensor's storage";
  }
  // Then every answer arrives, in order, none lost.
  for (RequestId r = 0; r < 256; ++r) {
    auto resp = c.response(20s);
    ASSERT_TRUE(resp) << "answer " << r;
    EXPECT_EQ(resp->id, 100 + r);
    const auto& rt = std::get<ReadTensorResponse>(resp->content);
    ASSERT_TRUE(std::holds_alternative<TensorData>(rt.result));
    EXPECT_EQ(std::get<TensorData>(rt.result).bytes.size(), 4 * kMiB);
  }
  EXPECT_TRUE(eventually([&] { return host.metrics().held_bytes == 0; }));
}

// Finding 10: queued answers did not count against --max-session-bytes.
TEST(HostHardening, QueuedAnswersCountAgainstTheSessionLimit) {
  bridge::HostOptions o;
  o.limits.max_session_bytes = 64 * kMiB;
  ConfiguredHost host(o);
  RawClient c;
  ASSERT_TRUE(c.open_session(host.port(), new_hardening_session_id()));
  ASSERT_FALSE(c.send_tasks({ones(1, kMiB)}));  // 4 MiB
  std::vector<Task> reads;
  for (RequestId r = 0; r < 48; ++r) reads.push_back(read_task(10 + r, 1, kMiB));
  ASSERT_FALSE(c.send_tasks(std::move(reads)));
  // The session waits for its client once the queued answers leave no room for the next one
  // beside its 4 MiB of tensor: 14 answers (56 MiB) queued.
  EXPECT_TRUE(eventually([&] { return host.metrics().held_bytes >= 56 * kMiB; }))
      << "the answers never filled the session's limit";
  // 4 MiB of tensor plus at most 60 MiB of answers (and the one answer that always goes).
  EXPECT_LE(host.metrics().held_bytes, 64 * kMiB);
  for (RequestId r = 0; r < 48; ++r) ASSERT_TRUE(c.response(20s)) << "answer " << r;
}

// Finding 10: 16 exposed copies pinned 768 MiB outside every limit, after their session had gone,
// downloadable for ever. They are charged, limited, expired and freed with their session.
TEST(HostHardening, ExposedCopiesAreChargedExpireAndGoWithTheirSession) {
  bridge::HostOptions o;
  o.limits.max_session_bytes = 64 * kMiB;
  o.transfer_timeout = 600ms;
  ConfiguredHost host(o);
  const Peer target{PeerKind::WebSocket, Address{"ws", "127.0.0.1", host.port()}, {}};
  {
    Session s(host.port(), 0);
    s.send({ones(1, 4 * kMiB)});  // 16 MiB
    std::vector<Task> exposes;
    for (std::uint64_t k = 0; k < 16; ++k) {
      exposes.push_back(expose_remote(tir(1, {4 * kMiB}, DTypeKind::F32, TensorStatus::ReadOnly),
                                      1000 + k, target));
    }
    s.send(std::move(exposes));
    auto sync = s.sync();
    ASSERT_TRUE(std::holds_alternative<ExecutionError>(sync));
    EXPECT_THAT(std::get<ExecutionError>(sync).reason, HasSubstr("--max-session-bytes"));
    // Within the limit: the tensor and three copies.
    EXPECT_LE(host.metrics().held_bytes, 48 * kMiB);
    EXPECT_GT(host.metrics().held_bytes, 0u);
    // Unclaimed exposures expire after the transfer timeout, while the session lives on.
    EXPECT_TRUE(eventually([&] { return host.metrics().held_bytes == 0; }, 5s));
    s.send(
        {expose_remote(tir(1, {4 * kMiB}, DTypeKind::F32, TensorStatus::ReadOnly), 2000, target)});
    ASSERT_TRUE(std::holds_alternative<std::monostate>(s.sync()));
    EXPECT_GT(host.metrics().held_bytes, 0u);
  }
  // Its session closed: its exposure goes with it and is no longer downloadable.
  EXPECT_TRUE(eventually([&] { return host.metrics().held_bytes == 0; }, 5s));
  Session d(host.port(), 0);
  d.send({register_remote(2000, target, 5)});
  auto r = d.read(tir(5, {4 * kMiB}));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
}

// Finding 10: a second exposure of one id silently replaced the first.
TEST(HostHardening, ExposingOneIdTwiceIsAnErrorAndTheFirstStands) {
  TestHost host(1);
  Session s(host.port(), 0);
  s.send({register_tensor(1, make_data({2}, DTypeKind::F32, {1, 2})),
          register_tensor(2, make_data({2}, DTypeKind::F32, {7, 8})),
          expose_remote(tir(1, {2}, DTypeKind::F32, TensorStatus::ReadOnly), 77, host.peer()),
          expose_remote(tir(2, {2}, DTypeKind::F32, TensorStatus::ReadOnly), 77, host.peer())});
  auto sync = s.sync();
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(sync));
  EXPECT_THAT(std::get<ExecutionError>(sync).reason, HasSubstr("already exposed"));
  Session d(host.port(), 0);
  d.send({register_remote(77, host.peer(), 3)});
  auto r = d.read(tir(3, {2}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(r)) << std::get<ExecutionError>(r).reason;
  EXPECT_EQ(values_of(std::get<TensorData>(r)), (std::vector<double>{1, 2}));
}

// Finding 8: a third session guessing a transfer id received another session's tensor, and a
// second ExposeTensorLocal replaced the first.
TEST(HostHardening, SameHostTransfersStayWithinOnePeerAndCredential) {
  bridge::HostOptions o;
  o.transfer_timeout = 500ms;
  ConfiguredHost host(o, 2);
  RawClient a, thief, b;
  ASSERT_TRUE(a.open_session(host.port(), new_hardening_session_id(), 0, "program-a"));
  ASSERT_TRUE(thief.open_session(host.port(), new_hardening_session_id(), 1, "program-b"));
  ASSERT_TRUE(b.open_session(host.port(), new_hardening_session_id(), 1, "program-a"));
  ASSERT_FALSE(a.send_tasks({register_tensor(1, make_data({2}, DTypeKind::F32, {4, 5})),
                             expose_local(tir(1, {2}, DTypeKind::F32, TensorStatus::ReadWrite), 0),
                             register_tensor(2, make_data({2}, DTypeKind::F32, {6, 6})),
                             expose_local(tir(2, {2}, DTypeKind::F32, TensorStatus::ReadWrite), 0),
                             SyncBackendTask{1, stream()}}));
  auto sync = a.response();
  ASSERT_TRUE(sync);
  const auto& sr = std::get<SyncBackendResponse>(sync->content).result;
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(sr));
  EXPECT_THAT(std::get<ExecutionError>(sr).reason, HasSubstr("transfer 0 is already exposed"));
  // Another credential cannot take it...
  ASSERT_FALSE(thief.send_tasks({register_local(0, 9), read_task(2, 9, 2)}));
  auto stolen = thief.response(5s);
  ASSERT_TRUE(stolen);
  EXPECT_TRUE(
      std::holds_alternative<ExecutionError>(std::get<ReadTensorResponse>(stolen->content).result));
  // ...the same program's other session gets the first exposure.
  ASSERT_FALSE(b.send_tasks({register_local(0, 3), read_task(3, 3, 2)}));
  auto got = b.response(5s);
  ASSERT_TRUE(got);
  const auto& gr = std::get<ReadTensorResponse>(got->content).result;
  ASSERT_TRUE(std::holds_alternative<TensorData>(gr)) << std::get<ExecutionError>(gr).reason;
  EXPECT_EQ(values_of(std::get<TensorData>(gr)), (std::vector<double>{4, 5}));
}

// Finding 7: an all_reduce naming a device the host does not have waited the whole transfer
// timeout.
TEST(HostHardening, AnAllReduceOverAnAbsentDeviceFailsAtOnce) {
  TestHost host(2, 60s);
  Session s(host.port(), 0);
  s.send({register_tensor(1, make_data({2}, DTypeKind::F32, {1, 2})),
          register_op(make_op<OpKind::Distributed_AllReduce>(
              AllReduceOpIr{tir(1, {2}), out(2, {2}), ReduceOperation::Sum, {{0, 0}, {0, 7}}}))});
  const auto start = std::chrono::steady_clock::now();
  auto r = s.read(tir(2, {2}), 10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
  EXPECT_THAT(std::get<ExecutionError>(r).reason, HasSubstr("serves 2 device(s)"));
}

// Finding 6: an answer over Burn's client's 1 GiB message limit went out anyway, and the client
// dropped the connection with every pending request.
TEST(HostHardening, AnAnswerOverTheMessageLimitIsAnErrorNamingTheLimit) {
  bridge::HostOptions o;
  o.limits.max_message_bytes = kMiB;
  ConfiguredHost host(o);
  Session s(host.port(), 0);
  s.send({ones(1, kMiB / 2)});  // 2 MiB
  auto r = s.read(tir(1, {kMiB / 2}, DTypeKind::F32, TensorStatus::ReadOnly));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
  EXPECT_THAT(std::get<ExecutionError>(r).reason, HasSubstr("over the 1048576-byte message limit"));
  // The session goes on.
  s.send({ones(2, 4)});
  auto small = s.read(tir(2, {4}));
  ASSERT_TRUE(std::holds_alternative<TensorData>(small));
}

// Finding 11: `/data` requests whose client went away held their connection slot until the
// transfer timeout; 1,024 of them locked everyone out.
TEST(HostHardening, DataRequestsOfClientsThatLeaveFreeTheirSlotAtOnce) {
  bridge::HostOptions o;
  o.transfer_timeout = 60s;
  o.limits.max_data_connections = 4;
  ConfiguredHost host(o);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < 4; ++i) {
      auto c = std::make_unique<RawClient>();
      ASSERT_FALSE(c->open(host.port(), "/data")) << "round " << round << " client " << i;
      ASSERT_FALSE(c->send(encode(DataMessage{TensorRequestMessage{0xdead0000u + i}})));
      clients.push_back(std::move(c));
    }
    ASSERT_TRUE(eventually([&] { return host.metrics().data_connections_open == 4; }));
    // The budget of /data is full: a fifth is refused, sessions are not.
    RawClient fifth;
    EXPECT_TRUE(fifth.open(host.port(), "/data"));
    expect_computes(host.port());
    clients.clear();  // dropped without a close frame
    EXPECT_TRUE(eventually([&] { return host.metrics().data_connections_open == 0; }, 3s))
        << "round " << round;
  }
}

// Issue 39, finding 6: 64 upgraded /data sockets that never sent a request held every /data slot
// for Beast's 300 s idle timeout, and transfers between hosts got 503 meanwhile. A /data connection
// now has --init-timeout-ms to send its request, after the upgrade and after each answer.
TEST(HostHardening, SilentDataConnectionsLoseTheirSlotAtTheRequestDeadline) {
  bridge::HostOptions o;
  o.limits.max_data_connections = 4;
  o.init_timeout = 300ms;
  ConfiguredHost host(o);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 4; ++i) {
    silent.push_back(std::make_unique<RawClient>());
    ASSERT_FALSE(silent.back()->open(host.port(), "/data")) << i;
  }
  ASSERT_TRUE(eventually([&] { return host.metrics().data_connections_open == 4; }));
  RawClient refused;
  EXPECT_TRUE(refused.open(host.port(), "/data")) << "the budget is full while they are young";
  EXPECT_TRUE(eventually([&] { return host.metrics().data_connections_open == 0; }, 5s))
      << "silent /data connections are closed at their request deadline";
  RawClient next;
  EXPECT_FALSE(next.open(host.port(), "/data")) << "a downloader gets a slot again";
  const auto closed = silent.front()->read(2s);
  EXPECT_TRUE(closed.ended());
}

// Finding 5: a websocket header declaring a 1 GiB frame made the host reserve the declared size;
// 16 of them grew its virtual memory by about 17 GiB.
TEST(HostHardening, FrameHeadersDeclaringHugeMessagesReserveNothing) {
  ConfiguredHost host(bridge::HostOptions{});
  std::vector<std::unique_ptr<RawClient>> clients;
  const std::uint64_t vm_before = status_bytes("VmSize");
  for (int i = 0; i < 16; ++i) {
    auto c = std::make_unique<RawClient>();
    ASSERT_TRUE(c->open_session(host.port(), new_hardening_session_id()));
    // A masked binary frame, FIN, 64-bit length 1 GiB - 1, then 64 KiB of its payload.
    std::vector<std::uint8_t> head = {0x82, 0xff, 0, 0, 0, 0, 0x3f, 0xff, 0xff, 0xff, 1, 2, 3, 4};
    head.resize(head.size() + 64 * 1024, 0x55);
    ASSERT_FALSE(c->send_raw(head));
    clients.push_back(std::move(c));
  }
  EXPECT_TRUE(eventually([&] { return bytes_in_flight_to(host.port()) == 0; }))
      << "the host read every header and the bytes after it";
  if (!kAddressSanitizer) {
    EXPECT_LT(status_bytes("VmSize"), vm_before + 1024 * kMiB)
        << "16 headers of 1 GiB each reserved their declared sizes";
  }
  expect_computes(host.port());
}

// Warm message blocks (ir::BlockCache) are memory the host holds for no session: they count against
// --max-host-bytes, and they are the first to go when a session needs the room.
TEST(HostHardening, WarmMessageBlocksCountAgainstTheHostLimitAndGoFirst) {
  bridge::HostOptions o;
  o.limits.max_host_bytes = 8 * kMiB;
  ConfiguredHost host(o);
  ir::BlockCache& cache = host.host().message_blocks();
  EXPECT_EQ(cache.limit(), kMiB) << "an eighth of the host's limit";
  cache.set_limit(16 * kMiB);
  for (int i = 0; i < 6; ++i) cache.give(static_cast<std::uint8_t*>(std::malloc(kMiB)), kMiB);
  ASSERT_EQ(cache.bytes(), 6 * kMiB);

  Session s(host.port(), 0);
  s.send({ones(1, kMiB)});  // 4 MiB of tensor: within the limit only without the 6 MiB kept
  const auto sync = s.sync();
  EXPECT_FALSE(std::holds_alternative<ExecutionError>(sync))
      << std::get<ExecutionError>(sync).reason;
  EXPECT_EQ(cache.bytes(), 0u);
}

// Issue 43, item 5: the cache was the process's, so a second host set the first one's limit, and
// one host's sessions trimmed the blocks another counted. Each host now owns its own.
TEST(HostHardening, TwoHostsInOneProcessKeepTheirOwnMessageBlocks) {
  bridge::HostOptions small_options, large_options;
  small_options.limits.max_host_bytes = 8 * kMiB;
  large_options.limits.max_host_bytes = 80 * kMiB;
  ConfiguredHost small(small_options);
  ConfiguredHost large(large_options);
  ir::BlockCache& small_blocks = small.host().message_blocks();
  ir::BlockCache& large_blocks = large.host().message_blocks();
  ASSERT_NE(&small_blocks, &large_blocks);
  EXPECT_EQ(small_blocks.limit(), kMiB) << "the second host set the first one's limit";
  EXPECT_EQ(large_blocks.limit(), 10 * kMiB);
  large_blocks.give(static_cast<std::uint8_t*>(std::malloc(kMiB)), kMiB);
  EXPECT_EQ(small_blocks.bytes(), 0u);
  EXPECT_EQ(large_blocks.bytes(), kMiB);
}

// Finding 12: --max-session-bytes was unlimited by default.
TEST(HostHardening, DefaultLimitsComeFromTheMachinesMemory) {
  const bridge::Limits limits;
  EXPECT_GT(limits.max_session_bytes, 0u);
  EXPECT_GT(limits.max_host_bytes, limits.max_session_bytes);
  EXPECT_EQ(limits.max_session_bytes, bridge::default_session_bytes());
  EXPECT_EQ(limits.max_queued_answers, 64u);
}

}  // namespace
}  // namespace tb::test
