// The client side of `/data` (download_tensor) as a peer host sees it.
#include <atomic>
#include <thread>

#include <gmock/gmock.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "backends/libtorch/op_test_util.hpp"
#include "torchbridge/ir/codec.hpp"
#include "transport/data_service.hpp"

namespace tb::test {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using net::ip::tcp;

// Burn's /data server (burn-communication) panics when a downloader resets the connection
// without a closing handshake, so the downloader must end with a websocket close frame.
TEST(Download, EndsWithAClosingHandshake) {
  net::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  const auto port = acceptor.local_endpoint().port();
  const ir::TensorData data = make_data({2}, ir::DTypeKind::F32, {1.5, -2.0});
  std::atomic<bool> got_request{false};
  beast::error_code after_answer;
  std::thread peer([&] {
    tcp::socket socket(ioc);
    acceptor.accept(socket);
    websocket::stream<tcp::socket> ws(std::move(socket));
    ws.accept();
    beast::flat_buffer request;
    ws.read(request);
    got_request = true;
    ws.binary(true);
    ws.write(net::buffer(ir::encode(ir::DataMessage{ir::TensorMessage{data}})));
    beast::flat_buffer rest;
    ws.read(rest, after_answer);  // a close frame ends this read with websocket::error::closed
  });
  const auto got = bridge::download_tensor(ir::Address{"ws", "127.0.0.1", port}, 7,
                                           std::chrono::milliseconds(10000), 1 << 20);
  peer.join();
  ASSERT_TRUE(got.has_value()) << got.error().message;
  EXPECT_TRUE(got_request);
  EXPECT_EQ(got.value().bytes.size(), data.bytes.size());
  EXPECT_EQ(after_answer, websocket::error::closed) << after_answer.message();
}

}  // namespace
}  // namespace tb::test
