// bridge/net/any_stream.hpp's type erasure: what a Beast operation hands AnyStream keeps its
// meaning. Every buffer of a sequence longer than the erased prefix arrives, in order, and a
// handler keeps its executor and releases what it holds whether or not it is called.
#include "net/any_stream.hpp"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

namespace tb::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using boost::system::error_code;

TEST(AnyStream, BufferPrefixKeepsTheFirstBuffersInOrder) {
  std::vector<char> bytes(100);
  std::vector<asio::const_buffer> sequence;
  for (char& b : bytes) sequence.emplace_back(&b, 1);
  const BufferPrefix<asio::const_buffer> prefix(sequence);
  ASSERT_EQ(prefix.end() - prefix.begin(), 64);
  for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(prefix.begin()[i].data(), &bytes[i]);

  const BufferPrefix<asio::mutable_buffer> one(asio::buffer(bytes));
  ASSERT_EQ(one.end() - one.begin(), 1);
  EXPECT_EQ(one.begin()->size(), bytes.size());
}

TEST(AnyStream, ErasedHandlerKeepsItsExecutorAndReleasesWhatItHolds) {
  asio::io_context ioc;
  const auto strand = asio::make_strand(ioc);
  auto held = std::make_shared<int>(0);
  std::size_t got = 0;
  {
    IoHandler bound(
        asio::bind_executor(strand, [&got, held](error_code, std::size_t n) { got = n; }),
        ioc.get_executor());
    EXPECT_NE(bound.get_executor().target<std::decay_t<decltype(strand)>>(), nullptr);
    EXPECT_EQ(held.use_count(), 2);
    bound(error_code{}, 7);
    EXPECT_EQ(got, 7u);
    EXPECT_EQ(held.use_count(), 1);  // released by the upcall itself
  }
  {
    DoneHandler unbound([held](error_code) {}, ioc.get_executor());
    EXPECT_NE(unbound.get_executor().target<asio::io_context::executor_type>(), nullptr);
    EXPECT_EQ(held.use_count(), 2);
  }
  EXPECT_EQ(held.use_count(), 1);  // dropped uncalled, as at an io_context's shutdown
}

// One unfragmented frame from a server (unmasked, so Beast writes the caller's buffers as they
// are): header and 100 payload buffers in one write, more than one erased write_some takes.
TEST(AnyStream, AWebsocketFrameOfManyBuffersArrivesWhole) {
  asio::io_context ioc;
  asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
  websocket::stream<AnyStream> server{beast::tcp_stream(ioc)};
  websocket::stream<AnyStream> client{beast::tcp_stream(ioc)};

  std::vector<std::string> chunks;
  std::vector<asio::const_buffer> sequence;
  std::string payload;
  for (int i = 0; i < 100; ++i) chunks.push_back("<" + std::to_string(i) + ">");
  for (const auto& c : chunks) {
    sequence.push_back(asio::buffer(c));
    payload += c;
  }

  std::size_t written = 0;
  beast::flat_buffer received;
  bool read_done = false;
  acceptor.async_accept(server.next_layer().socket(), [&](error_code ec) {
    ASSERT_FALSE(ec) << ec.message();
    server.async_accept([&](error_code ec) {
      ASSERT_FALSE(ec) << ec.message();
      server.binary(true);
      server.auto_fragment(false);
      server.async_write(sequence, [&](error_code ec, std::size_t n) {
        EXPECT_FALSE(ec) << ec.message();
        written = n;
      });
    });
  });
  client.next_layer().socket().async_connect(acceptor.local_endpoint(), [&](error_code ec) {
    ASSERT_FALSE(ec) << ec.message();
    client.async_handshake("127.0.0.1", "/", [&](error_code ec) {
      ASSERT_FALSE(ec) << ec.message();
      client.async_read(received, [&](error_code ec, std::size_t) {
        EXPECT_FALSE(ec) << ec.message();
        read_done = true;
      });
    });
  });
  ioc.run_for(std::chrono::seconds(10));

  ASSERT_TRUE(read_done);
  EXPECT_EQ(written, payload.size());
  EXPECT_EQ(beast::buffers_to_string(received.data()), payload);
}

}  // namespace
}  // namespace tb::net
