// The network side of a client Session (session.hpp), shared by its two files: session.cpp
// (tasks, batches, answers, closing) and session_open.cpp (connecting and the handshake).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "net/any_stream.hpp"
#include "net/io_loop.hpp"
#include "net/message_buffer.hpp"
#include "session.hpp"

namespace tb::client::detail {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

struct Session::Io {
  explicit Io(std::shared_ptr<net::ssl::context> context)
      : tls(std::move(context)),
        ws(tls ? tb::net::AnyStream(beast::tcp_stream(ioc), *tls)
               : tb::net::AnyStream(beast::tcp_stream(ioc))) {}
  net::io_context ioc;
  std::shared_ptr<net::ssl::context> tls;  // set for wss://; outlives the stream
  websocket::stream<tb::net::AnyStream> ws;
  beast::flat_buffer read_buffer;  // the answer to Init
  // Every later answer: read in place and handed to the decoder whole, so a download's payload is
  // decoded as a view of the received message, never copied.
  std::unique_ptr<tb::net::MessageBuffer> message;  // bounded by max_message_bytes
  // IO-thread only. Each frame's large payloads (uploads) are views of the tasks' own bytes.
  std::deque<std::shared_ptr<const std::vector<ir::Bytes>>> queue;
  bool writing = false;
  bool close_requested = false;
  bool close_started = false;
  std::thread thread;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> guard;
  // Each second, the client's warm message blocks left idle go back to the system. Best
  // effort: the cache is bounded without it, so a failed tick is dropped.
  net::steady_timer sweeper{ioc};
  void sweep() {
    tb::net::every(
        sweeper, std::chrono::seconds(1),
        [] { message_blocks()->expire(std::chrono::steady_clock::now()); },
        [](const std::string&) {});
  }
  // Set once the connection is over (closed by us, by the host, or failed).
  std::promise<void> ended;
  std::atomic<bool> ended_set{false};
};

// Runs one asynchronous operation on an io_context nobody else runs yet, bounded in time.
template <class Stream, class Op>
inline beast::error_code run_bounded(net::io_context& ioc, Stream& stream,
                                     std::chrono::milliseconds timeout, Op op) {
  beast::error_code result = net::error::would_block;
  beast::get_lowest_layer(stream).expires_after(timeout);
  op([&result](beast::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

}  // namespace tb::client::detail
