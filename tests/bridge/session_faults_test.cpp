// A session's connection when an allocation fails at the worst moments (net/fault.hpp names them;
// `torchbridge serve` runs in a child process with TB_FAULT set): inside Beast's write operation,
// with the stream's write lock held, and in every hand-over from the session's worker to its
// network thread. Under real memory pressure these came by chance (MemoryPressure, one run in six
// to eighteen): the first left a client waiting for ever on an open connection, the second killed
// the process.
#include <cstdlib>
#include <string>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/host_raw_client.hpp"
#include "client/child_server.hpp"

namespace tb::test {
namespace {

std::atomic<std::uint64_t> next_fault_session{0x5fa0'0000'0000'0001};

// More than the host answers inline on its network thread (64 KiB): the worker answers, through a
// post.
constexpr std::uint64_t kLargeRead = 20'000;

// `torchbridge serve` with TB_FAULT=`fault` in its environment.
class FaultyHost {
 public:
  explicit FaultyHost(const std::string& fault, std::vector<std::string> extra = {}) {
    // TB_SERVE_BIN runs another build against the same cases (an older one, to see them fail).
    const char* bin = std::getenv("TB_SERVE_BIN");
    std::vector<std::string> argv{bin ? bin : TB_TORCHBRIDGE_BIN,
                                  "serve",
                                  "--port",
                                  "0",
                                  "--threads",
                                  "1",
                                  "--log-level",
                                  "warn",
                                  "--exit-on-stdin-eof"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ::setenv("TB_FAULT", fault.c_str(), 1);
    server_ = std::make_unique<ChildServer>(std::move(argv));
    ::unsetenv("TB_FAULT");
  }
  bool ok() const { return server_->ok(); }
  const std::string& error() const { return server_->error(); }
  std::uint16_t port() const { return server_->port(); }
  bool alive() const { return server_->alive(); }
  std::string how_it_ended() const { return server_->how_it_ended(); }

  // A new session reads a small tensor back (answered on the network thread, as small reads are
  // when the worker is idle, or by the worker).
  // The process lived, and a new session computes.
  void expect_serves() const {
    ASSERT_TRUE(alive()) << how_it_ended();
    EXPECT_TRUE(computes());
  }

  bool computes() const {
    for (int attempt = 0; attempt < 20; ++attempt) {
      RawClient c;
      if (c.open_session(port(), next_fault_session++)) {
        c.send_tasks(
            {register_tensor(1, make_data({3}, DTypeKind::F32, {1, 2, 3})), read_task(1, 1, 3)});
        auto r = c.response(10s);
        if (r &&
            std::holds_alternative<TensorData>(std::get<ReadTensorResponse>(r->content).result)) {
          return true;
        }
      }
      std::this_thread::sleep_for(250ms);
    }
    return false;
  }

 private:
  std::unique_ptr<ChildServer> server_;
};

// The host ended `c`'s connection (a close frame or a dropped socket) within 5 s of `start`.
void expect_ended_soon(RawClient& c, std::chrono::steady_clock::time_point start) {
  auto reply = c.read(20s);
  EXPECT_TRUE(reply.ended()) << reply.ec.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "the client was left waiting";
}

// The session's answer to a read of `count` ones, as floats; empty when there was none.
std::vector<float> read_ones(RawClient& c, std::uint64_t count, std::chrono::milliseconds wait) {
  c.send_tasks({ones(1, count), read_task(7, 1, count)});
  auto r = c.response(wait);
  if (!r) return {};
  const auto* data = std::get_if<TensorData>(&std::get<ReadTensorResponse>(r->content).result);
  if (data == nullptr) return {};
  std::vector<float> values(data->bytes.size() / sizeof(float));
  std::memcpy(values.data(), data->bytes.data(), values.size() * sizeof(float));
  return values;
}

// The host's writes on a session's connection: the upgrade's HTTP answer, the Init answer, then
// the read's answer, which fails to start inside Beast's operation (its write lock taken). Before,
// the guard closed with a close handshake, which waited for that lock for ever: the connection
// stayed open, the session's worker gone, the client waiting.
TEST(SessionFaults, AWriteThatCannotStartEndsTheConnectionAtOnce) {
  FaultyHost host("stream_write:2:1");
  ASSERT_TRUE(host.ok()) << host.error();
  RawClient c;
  ASSERT_TRUE(c.open_session(host.port(), next_fault_session++));
  const auto start = std::chrono::steady_clock::now();
  c.send_tasks({ones(1, 3), read_task(7, 1, 3)});
  expect_ended_soon(c, start);
  host.expect_serves();
}

// The worker's hand-over of the answer fails three times: the answer arrives all the same. Before,
// the first failure turned the answer into an error, the second ended the session, and the third,
// in the guard's own handler, terminated the process.
TEST(SessionFaults, AHandOverThatFailsIsTriedAgain) {
  FaultyHost host("post:0:3");
  ASSERT_TRUE(host.ok()) << host.error();
  RawClient c;
  ASSERT_TRUE(c.open_session(host.port(), next_fault_session++));
  const auto values = read_ones(c, kLargeRead, 20s);
  ASSERT_EQ(values.size(), kLargeRead);
  EXPECT_THAT(values, ::testing::Each(1.0f));
  ASSERT_TRUE(host.alive()) << host.how_it_ended();
}

// No hand-over of the session succeeds: the answer is lost, and so are the worker's end and its
// notice that it is done. The network thread finds them at its next tick (every half idle timeout,
// here 1 s) and ends the session with a close giving the reason; the process lives and serves.
TEST(SessionFaults, AnAnswerThatCanNeverBeHandedOverEndsTheSession) {
  // Ten tries each for the answer, the worker's end and its notice; the next session's go.
  FaultyHost host("post:0:30", {"--idle-timeout-ms", "2000"});
  ASSERT_TRUE(host.ok()) << host.error();
  RawClient c;
  ASSERT_TRUE(c.open_session(host.port(), next_fault_session++));
  c.send_tasks({ones(1, kLargeRead), read_task(7, 1, kLargeRead)});
  auto reply = c.read(20s);
  EXPECT_TRUE(reply.closed()) << reply.ec.message();
  EXPECT_THAT(reply.close_reason, ::testing::HasSubstr("ran out of memory"));
  host.expect_serves();
}

// The same on a /data connection: the host's writes are the session's upgrade, its Init answer and
// its sync answer, then the download's upgrade and the tensor, which fails to start. Before, the
// guard's close handshake waited behind Beast's write lock until the websocket's idle timeout
// (300 s), the downloader and its connection slot held all that time.
TEST(SessionFaults, ADownloadWhoseWriteCannotStartEndsAtOnce) {
  FaultyHost host("stream_write:4:1");
  ASSERT_TRUE(host.ok()) << host.error();
  RawClient session;
  ASSERT_TRUE(session.open_session(host.port(), next_fault_session++));
  const Peer target{PeerKind::WebSocket, Address{"ws", "127.0.0.1", host.port()}, {}};
  const std::uint64_t key = 0x5eed'f00d;
  session.send_tasks(
      {ones(1, 3), expose_remote(tir(1, {3}, DTypeKind::F32, TensorStatus::ReadOnly), key, target),
       SyncBackendTask{1, stream()}});
  ASSERT_TRUE(session.response(10s)) << "the sync after the exposure";
  RawClient download;
  ASSERT_FALSE(download.open(host.port(), "/data"));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_FALSE(download.send(encode(DataMessage{TensorRequestMessage{key}})));
  expect_ended_soon(download, start);
  host.expect_serves();
}

}  // namespace
}  // namespace tb::test
