// The federation's store (bridge/federation/store_*.{hpp,cpp}) as a stranger and as members meet
// it (issue 39, findings 9 and 10): c10d's TCPStore served anyone who reached its port.
#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include "host_raw_client.hpp"
#include "store_client.hpp"
#include "store_protocol.hpp"
#include "store_server.hpp"

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace st = tb::bridge::store;
using Clock = std::chrono::steady_clock;

const std::optional<std::string> kToken = std::string("members' token");

std::unique_ptr<st::Server> serve_store(st::ServerLimits limits = {},
                                        std::optional<std::string> token = kToken) {
  auto server = st::Server::start("127.0.0.1", 0, token, limits);
  EXPECT_TRUE(server) << server.error().what();
  return server ? std::move(server).value() : nullptr;
}

c10::intrusive_ptr<st::Client> store_member(const st::Server& server,
                                            std::chrono::milliseconds timeout = 5s,
                                            std::optional<std::string> token = kToken) {
  return c10::make_intrusive<st::Client>("127.0.0.1", server.port(), token, timeout);
}

st::Bytes bytes(std::string_view text) {
  return {text.begin(), text.end()};
}

// A raw connection, for what no member sends.
struct Raw {
  asio::io_context ioc;
  asio::ip::tcp::socket socket{ioc};
  explicit Raw(std::uint16_t port) { socket.connect({asio::ip::make_address("127.0.0.1"), port}); }

  // Whether the server closed this connection within `within`.
  bool closed(std::chrono::milliseconds within) {
    socket.non_blocking(true);
    const auto deadline = Clock::now() + within;
    std::array<char, 256> sink{};
    while (Clock::now() < deadline) {
      boost::system::error_code ec;
      socket.read_some(asio::buffer(sink), ec);
      if (ec && ec != asio::error::would_block) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
};

// A raw connection that proves the key as a member does, then sends frames of its own making.
struct Proven : Raw {
  std::optional<st::FrameKey> send;
  explicit Proven(std::uint16_t port) : Raw(port) {
    std::array<std::uint8_t, st::kHelloBytes> hello{};
    asio::read(socket, asio::buffer(hello));
    st::Nonce server{}, client = st::random_nonce();
    std::copy_n(hello.begin() + st::kMagic.size(), st::kNonceBytes, server.begin());
    const st::Key key = st::store_key(kToken);
    st::Bytes answer(st::kMagic.begin(), st::kMagic.end());
    answer.insert(answer.end(), client.begin(), client.end());
    const st::Key proof = st::derive(key, "client", server, client);
    answer.insert(answer.end(), proof.begin(), proof.end());
    asio::write(socket, asio::buffer(answer));
    std::array<std::uint8_t, st::kProofBytes> theirs{};
    asio::read(socket, asio::buffer(theirs));
    send.emplace(st::derive(key, "client frames", server, client));
  }
};

TEST(FederationStore, ServesWhatC10dAsksOf) {
  auto server = serve_store();
  auto store = store_member(*server);
  store->set("a", bytes("1"));
  EXPECT_EQ(store->get("a"), bytes("1"));
  EXPECT_EQ(store->add("n", 5), 5);
  EXPECT_EQ(store->add("n", -2), 3);
  EXPECT_EQ(store->get("n"), bytes("3"));  // c10d's stores keep a sum as its decimal
  EXPECT_TRUE(store->check({"a", "n"}));
  EXPECT_FALSE(store->check({"a", "missing"}));
  EXPECT_EQ(store->getNumKeys(), 2);
  EXPECT_EQ(store->compareSet("c", bytes(""), bytes("x")), bytes("x"));
  EXPECT_EQ(store->compareSet("c", bytes("y"), bytes("z")), bytes("x"));
  EXPECT_EQ(store->compareSet("c", bytes("x"), bytes("z")), bytes("z"));
  EXPECT_TRUE(store->deleteKey("c"));
  EXPECT_FALSE(store->deleteKey("c"));
  store->set("text", bytes("abc"));
  EXPECT_THROW(store->add("text", 1), std::runtime_error);  // no sum of a key that holds text
  store->deleteKey("text");
  // A wait ends when another member writes its key.
  auto other = store_member(*server);
  auto waited = std::async(std::launch::async, [&] { store->wait({"late", "a"}, 5000ms); });
  EXPECT_TRUE(tb::test::eventually([&] { return server->stats().waiting == 1; }));
  other->set("late", bytes("here"));
  EXPECT_EQ(waited.wait_for(2s), std::future_status::ready);
  waited.get();
  EXPECT_EQ(server->stats().members, 2u);
}

TEST(FederationStore, AStrangerWithoutTheTokenReadsAndWritesNothing) {
  auto server = serve_store();
  store_member(*server)->set("tb/member/0", bytes("record"));
  for (const std::optional<std::string>& token :
       {std::optional<std::string>("another token"), std::optional<std::string>()}) {
    auto stranger = store_member(*server, 2s, token);
    try {
      stranger->set("tb/member/0", bytes("forged"));
      ADD_FAILURE() << "a member without the token wrote to the store";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("same --auth-token-file"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(stranger->get("tb/member/0"), std::runtime_error);
  }
  // Bytes that are no proof at all close the connection.
  Raw raw(server->port());
  std::array<std::uint8_t, st::kHelloBytes> hello{};
  asio::read(raw.socket, asio::buffer(hello));
  std::vector<std::uint8_t> answer(st::kAnswerBytes, 'x');
  asio::write(raw.socket, asio::buffer(answer));
  EXPECT_TRUE(raw.closed(2s));
  EXPECT_EQ(store_member(*server)->get("tb/member/0"), bytes("record"));
  EXPECT_EQ(server->stats().keys, 1u);
  EXPECT_GE(server->stats().refused, 3u);
}

// Finding 10: a stranger's half-sent query held the store (c10d's) for its 60 s timeout.
TEST(FederationStore, AStrangersHalfSentHandshakeStallsNobodyAndIsDropped) {
  st::ServerLimits limits;
  limits.handshake_deadline = 300ms;
  auto server = serve_store(limits);
  Raw stranger(server->port());
  asio::write(stranger.socket, asio::buffer(std::string("TBSTORE1 half")));
  const auto start = Clock::now();
  auto store = store_member(*server);
  store->set("k", bytes("v"));
  EXPECT_EQ(store->get("k"), bytes("v"));
  EXPECT_LT(Clock::now() - start, 1s) << "a stranger's half-sent handshake stalled a member";
  EXPECT_TRUE(stranger.closed(2s)) << "the stranger kept its connection past the deadline";
}

TEST(FederationStore, IdleStrangersCannotLockMembersOut) {
  st::ServerLimits limits;
  limits.max_pending = 4;
  auto server = serve_store(limits);
  std::vector<std::unique_ptr<Raw>> strangers;
  for (int i = 0; i < 50; ++i) strangers.push_back(std::make_unique<Raw>(server->port()));
  // Every stranger admitted: the newest 4 still proving the key, the others closed for them.
  EXPECT_TRUE(tb::test::eventually([&] {
    const auto stats = server->stats();
    return stats.pending == 4 && stats.refused == 46;
  }));
  const auto start = Clock::now();
  auto store = store_member(*server);
  store->set("k", bytes("v"));
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_LE(server->stats().pending, 4u);
}

// Finding 9: a declared 256 MiB key made c10d's store hold 257 MiB. Here even a member's frame is
// refused from its header, before any of it is held; and a frame not sealed in order is refused.
TEST(FederationStore, FramesOverTheLimitForgedOrReplayedAreRefused) {
  auto server = serve_store();
  const auto rss_before = tb::test::status_bytes("VmRSS");
  {
    Proven big(server->port());
    const std::uint32_t declared = 256u << 20;
    std::array<std::uint8_t, 14> frame{};
    std::memcpy(frame.data(), &declared, 4);
    asio::write(big.socket, asio::buffer(frame));
    EXPECT_TRUE(big.closed(2s));
  }
  EXPECT_LT(tb::test::status_bytes("VmRSS"), rss_before + (std::uint64_t{64} << 20));
  const st::Bytes set = st::encode(st::Request{st::Op::kSet, 0, 0, {"k"}, bytes("v"), {}});
  {
    Proven forger(server->port());
    st::Bytes frame = forger.send->seal(set);
    frame.back() ^= 1;
    asio::write(forger.socket, asio::buffer(frame));
    EXPECT_TRUE(forger.closed(2s));
  }
  {
    Proven replayer(server->port());
    const st::Bytes frame = replayer.send->seal(set);
    asio::write(replayer.socket, asio::buffer(frame));
    asio::write(replayer.socket, asio::buffer(frame));
    EXPECT_TRUE(replayer.closed(2s));
  }
  EXPECT_EQ(server->stats().keys, 1u);  // the genuine first frame only
  EXPECT_EQ(store_member(*server)->get("k"), bytes("v"));
}

TEST(FederationStore, TheTableAndEachValueAreBounded) {
  st::ServerLimits limits;
  limits.max_bytes = 1000;
  limits.max_keys = 3;
  auto server = serve_store(limits);
  auto store = store_member(*server);
  store->set("a", st::Bytes(600, 1));
  EXPECT_THROW(store->set("b", st::Bytes(600, 1)), std::runtime_error);
  store->set("a", st::Bytes(900, 2));  // replacing counts the new size only
  store->set("b", bytes("1"));
  store->set("c", bytes("1"));
  try {
    store->set("d", bytes("1"));
    ADD_FAILURE() << "a fourth key was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("3 keys"), std::string::npos) << e.what();
  }
  EXPECT_THROW(store->set("big", st::Bytes(st::kMaxValueBytes + 1, 0)), std::runtime_error);
  EXPECT_EQ(store->get("b"), bytes("1"));  // the connection is still good
  EXPECT_LE(server->stats().bytes, 1000u);
}

TEST(FederationStore, EveryWaitEndsAtItsOwnTimeout) {
  auto server = serve_store();
  auto store = store_member(*server, 60s);
  auto start = Clock::now();
  EXPECT_THROW(store->wait({"never"}, 200ms), std::runtime_error);
  EXPECT_LT(Clock::now() - start, 1500ms);
  // c10d's callers also ask for 300 s (Gloo's rendezvous): a scoped view bounds it.
  start = Clock::now();
  EXPECT_THROW(store->scoped(300ms)->wait({"never"}, 300000ms), std::runtime_error);
  EXPECT_THROW(store->scoped(300ms)->get("never"), std::runtime_error);
  EXPECT_LT(Clock::now() - start, 3s);
  // While one member waits, the others are served. (The scoped views' waits above are still
  // open on the server: their clients gave up, the server's own bound is minutes.)
  const auto waits_before = server->stats().waiting;
  auto waiting = std::async(std::launch::async, [&] {
    EXPECT_THROW(store->wait({"never"}, 1500ms), std::runtime_error);
  });
  EXPECT_TRUE(tb::test::eventually([&] { return server->stats().waiting > waits_before; }));
  start = Clock::now();
  store_member(*server)->set("other", bytes("1"));
  EXPECT_LT(Clock::now() - start, 1s);
  waiting.get();
}

TEST(FederationStore, AConnectionThatBrokeIsReopened) {
  st::ServerLimits limits;
  auto first = serve_store(limits);
  const std::uint16_t port = first->port();
  auto store = c10::make_intrusive<st::Client>("127.0.0.1", port, kToken, 5s);
  store->set("k", bytes("1"));
  first.reset();
  auto second = st::Server::start("127.0.0.1", port, kToken);
  ASSERT_TRUE(second) << second.error().what();
  // The first call may meet the old connection's end; the next opens a fresh one.
  try {
    store->set("k", bytes("2"));
  } catch (const std::runtime_error&) {
  }
  store->set("k", bytes("3"));
  EXPECT_EQ(store->get("k"), bytes("3"));
}

TEST(FederationStore, AMemberWaitsForAStoreThatIsNotUpYet) {
  const std::uint16_t port = [] {
    auto probe = serve_store();
    return probe->port();
  }();
  auto late = std::async(std::launch::async, [port] {
    std::this_thread::sleep_for(300ms);
    return st::Server::start("127.0.0.1", port, kToken);
  });
  auto store = c10::make_intrusive<st::Client>("127.0.0.1", port, kToken, 10s);
  store->set("k", bytes("1"));
  auto server = late.get();
  ASSERT_TRUE(server);
  EXPECT_EQ(server.value()->stats().keys, 1u);
}

}  // namespace
