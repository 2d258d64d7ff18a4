// A websocket client for hostile and broken-client tests of the host: it sends arbitrary bytes
// (not only well-formed frames), can stop in the middle of a frame or message, sets upgrade
// headers, and reports how the host ended the connection. Every operation is bounded in time.
#pragma once

#include <dirent.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "bridge/bridge_test_util.hpp"

namespace tb::test {

// Under AddressSanitizer the process's memory is not what a plain build's is (shadow memory, a
// quarantine of freed blocks, its own allocator): tests that measure memory or limit the address
// space skip those parts there.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

class RawClient {
 public:
  struct Reply {
    boost::beast::error_code ec;  // websocket::error::closed: the host sent a close frame
    std::vector<std::uint8_t> bytes;
    std::uint16_t close_code = 0;  // when closed
    std::string close_reason;
    bool closed() const { return ec == boost::beast::websocket::error::closed; }
    // A close frame or a dropped connection: either is a clean end for a hostile client.
    bool ended() const { return ec && ec != boost::beast::error::timeout; }
  };

  RawClient() : ws_(ioc_) {}
  ~RawClient() { drop(); }

  // TCP connect and websocket upgrade on `path`, with an `Authorization` header when given.
  boost::beast::error_code open(std::uint16_t port, const std::string& path = "/session",
                                std::optional<std::string> authorization = std::nullopt) {
    namespace net = boost::asio;
    const net::ip::tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), port);
    auto ec = run(
        5s, [&](auto done) { boost::beast::get_lowest_layer(ws_).async_connect(endpoint, done); });
    if (ec) return ec;
    if (authorization) {
      ws_.set_option(boost::beast::websocket::stream_base::decorator(
          [a = *authorization](boost::beast::websocket::request_type& req) {
            req.set(boost::beast::http::field::authorization, a);
          }));
    }
    ec = run(
        5s, [&](auto done) { ws_.async_handshake(fmt::format("127.0.0.1:{}", port), path, done); });
    ws_.binary(true);
    ws_.read_message_max(std::uint64_t{1} << 31);
    return ec;
  }

  // open() then an Init; true when the host answered with Init (not InitRefused).
  bool open_session(std::uint16_t port, std::uint64_t session_id, std::uint32_t device = 0,
                    const std::string& token = "") {
    if (open(port)) return false;
    if (send(encode(ClientFrame{SessionInit{kProtocolVersion, SessionId{session_id}, device,
                                            Bytes::copy_of(token.data(), token.size())}}))) {
      return false;
    }
    auto r = response();
    return r && std::holds_alternative<InitResponse>(r->content);
  }

  boost::beast::error_code send(const std::vector<std::uint8_t>& bytes,
                                std::chrono::milliseconds timeout = 10s) {
    return run(timeout, [&](auto done) { ws_.async_write(boost::asio::buffer(bytes), done); });
  }
  boost::beast::error_code send_tasks(std::vector<Task> tasks) {
    ClientFrame frame;
    for (auto& t : tasks) frame.emplace_back(std::move(t));
    return send(encode(frame));
  }
  // The first part of a message (a websocket frame without FIN): the rest never comes.
  boost::beast::error_code send_partial_message(const std::vector<std::uint8_t>& bytes) {
    return run(5s,
               [&](auto done) { ws_.async_write_some(false, boost::asio::buffer(bytes), done); });
  }
  // Raw bytes on the TCP stream, below the websocket layer (e.g. half a frame).
  boost::beast::error_code send_raw(const std::vector<std::uint8_t>& bytes) {
    return run(5s, [&](auto done) {
      boost::asio::async_write(boost::beast::get_lowest_layer(ws_).socket(),
                               boost::asio::buffer(bytes), done);
    });
  }

  Reply read(std::chrono::milliseconds timeout = 10s) {
    Reply r;
    boost::beast::flat_buffer buffer;
    r.ec = run(timeout, [&](auto done) { ws_.async_read(buffer, done); });
    if (!r.ec) {
      const auto d = buffer.data();
      const auto* p = static_cast<const std::uint8_t*>(d.data());
      r.bytes.assign(p, p + d.size());
    } else if (r.closed()) {
      r.close_code = static_cast<std::uint16_t>(ws_.reason().code);
      r.close_reason = std::string(ws_.reason().reason);
    }
    return r;
  }
  std::optional<TaskResponse> response(std::chrono::milliseconds timeout = 10s) {
    auto r = read(timeout);
    if (r.ec) return std::nullopt;
    auto decoded = decode<TaskResponse>(Bytes::copy_of(r.bytes.data(), r.bytes.size()));
    if (!decoded) return std::nullopt;
    return std::move(decoded).value();
  }

  // Drops the connection without a close frame.
  void drop() {
    boost::beast::error_code ec;
    auto& s = boost::beast::get_lowest_layer(ws_).socket();
    if (!s.is_open()) return;
    s.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    s.close(ec);
  }

 private:
  template <class Op>
  boost::beast::error_code run(std::chrono::milliseconds timeout, Op op) {
    boost::beast::error_code result = boost::asio::error::would_block;
    boost::beast::get_lowest_layer(ws_).expires_after(timeout);
    op([&result](boost::beast::error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  boost::asio::io_context ioc_;
  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
};

// Bytes in a /proc/<pid>/status field ("VmRSS", "VmSize") of `pid` ("self" for this process).
inline std::uint64_t status_bytes(const std::string& field, const std::string& pid = "self") {
  std::ifstream in("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

// Open file descriptors of this process.
inline int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
    --n;  // the directory stream itself
  }
  return n;
}

// Polls `done` every 20 ms until it holds or `timeout` passes; returns its last value.
template <class Pred>
bool eventually(Pred done, std::chrono::milliseconds timeout = 10s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A host with the given options on any free loopback port and `devices` CPU devices.
class ConfiguredHost {
 public:
  explicit ConfiguredHost(bridge::HostOptions options, int devices = 1) {
    options.host = "127.0.0.1";
    options.port = 0;
    std::vector<std::shared_ptr<backend::Backend>> backends;
    for (int i = 0; i < devices; ++i) {
      backend::libtorch::BackendOptions b;
      b.device = "cpu";
      backends.push_back(std::move(backend::libtorch::make_backend(b)).value());
    }
    host_ = std::make_unique<bridge::Host>(std::move(options), std::move(backends));
    auto s = host_->start();
    EXPECT_TRUE(s) << (s ? "" : s.error().what());
  }
  std::uint16_t port() const { return host_->port(); }
  bridge::Host& host() { return *host_; }
  bridge::HostMetrics metrics() const { return host_->metrics(); }

 private:
  std::unique_ptr<bridge::Host> host_;
};

}  // namespace tb::test
