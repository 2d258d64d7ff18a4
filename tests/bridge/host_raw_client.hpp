// A websocket client for hostile and broken-client tests of the host: it sends arbitrary bytes
// (not only well-formed frames), can stop in the middle of a frame or message, sets upgrade
// headers, and reports how the host ended the connection. Every operation is bounded in time.
#pragma once

#include <dirent.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/system/error_code.hpp>

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
    boost::system::error_code ec;  // websocket::error::closed: the host sent a close frame
    std::vector<std::uint8_t> bytes;
    std::uint16_t close_code = 0;  // when closed
    std::string close_reason;
    bool closed() const;
    // A close frame or a dropped connection: either is a clean end for a hostile client.
    bool ended() const;
  };

  RawClient();
  ~RawClient();

  // TCP connect and websocket upgrade on `path`, with an `Authorization` header when given.
  boost::system::error_code open(std::uint16_t port, const std::string& path = "/session",
                                 std::optional<std::string> authorization = std::nullopt);
  // open() then an Init; true when the host answered with Init (not InitRefused).
  bool open_session(std::uint16_t port, std::uint64_t session_id, std::uint32_t device = 0,
                    const std::string& token = "");

  boost::system::error_code send(const std::vector<std::uint8_t>& bytes,
                                 std::chrono::milliseconds timeout = 10s);
  boost::system::error_code send_tasks(std::vector<Task> tasks);
  // The first part of a message (a websocket frame without FIN): the rest never comes.
  boost::system::error_code send_partial_message(const std::vector<std::uint8_t>& bytes);
  // Raw bytes on the TCP stream, below the websocket layer (e.g. half a frame).
  boost::system::error_code send_raw(const std::vector<std::uint8_t>& bytes);

  Reply read(std::chrono::milliseconds timeout = 10s);
  std::optional<TaskResponse> response(std::chrono::milliseconds timeout = 10s);
  // Bytes the host has sent that this client has not read (its socket's receive queue).
  std::size_t unread_bytes();

  // Drops the connection without a close frame.
  void drop();

 private:
  // Beast's websocket stream lives in host_raw_client.cpp: its templates are compiled once, not
  // in every test file that includes this header.
  struct Impl;
  std::unique_ptr<Impl> impl_;
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

// Bytes sent to `port` on this machine (any process) that its owner has not read yet: what sits in
// the receive queues of its connections plus what their peers still hold in their send queues
// (/proc/net/tcp and tcp6). Zero once a server has read everything its clients wrote.
std::uint64_t bytes_in_flight_to(std::uint16_t port);

// The host's /metrics text (Prometheus exposition), empty when it cannot be asked (it is gone).
std::string get_metrics_text(std::uint16_t port);
// The value of one metric in it (`torchbridge_held_bytes`), or nullopt.
std::optional<std::uint64_t> metric_value(std::uint16_t port, const std::string& name);

// A host with the given options on any free loopback port and `devices` CPU devices.
class ConfiguredHost {
 public:
  explicit ConfiguredHost(bridge::HostOptions options, int devices = 1,
                          const std::string& device = "cpu") {
    options.host = "127.0.0.1";
    options.port = 0;
    std::vector<std::shared_ptr<backend::Backend>> backends;
    for (int i = 0; i < devices; ++i) {
      backend::libtorch::BackendOptions b;
      b.device = device;
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
