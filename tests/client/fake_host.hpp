// A scripted Burn host for client tests: records every frame the client sends and answers with
// what the test says (or not at all, or by dropping the connection), so handshake bytes, batching
// and failure paths can be checked exactly.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

#include "torchbridge/ir/codec.hpp"

namespace tb::test {

class FakeHost {
 public:
  // Answers to one client frame (after the handshake); nullopt closes the connection.
  using Answer =
      std::function<std::optional<std::vector<ir::TaskResponse>>(const ir::ClientFrame&)>;

  // `init`: the first answer (nullopt: never answer the handshake).
  FakeHost(Answer answer, std::optional<ir::TaskResponse> init);
  ~FakeHost();

  std::uint16_t port() const { return port_; }
  std::string address() const { return "ws://127.0.0.1:" + std::to_string(port_); }
  // Raw frames received, the handshake first.
  std::vector<std::vector<std::uint8_t>> frames() const;
  // Decoded frames after the handshake.
  std::vector<ir::ClientFrame> task_frames() const;
  // Waits until at least `n` frames arrived (bounded); returns whether they did.
  bool wait_frames(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // Burn's Flex defaults as its server announces them, id 0.
  static ir::TaskResponse flex_init(std::uint32_t device_count = 1);
  // Answers SyncBackend with Ok and ReadTensor with zeros of the requested shape and dtype.
  static std::optional<std::vector<ir::TaskResponse>> answer_all(const ir::ClientFrame& frame);

 private:
  void serve();

  Answer answer_;
  std::optional<ir::TaskResponse> init_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<int> listen_fd_{-1};
  std::atomic<int> conn_fd_{-1};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::vector<std::uint8_t>> frames_;
  std::thread thread_;
};

}  // namespace tb::test
