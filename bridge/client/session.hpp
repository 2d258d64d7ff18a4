// One websocket session with one device of a Burn remote host, shaped like burn-remote's
// RemoteService: an outgoing batch with Burn's flush rules, request ids from 0, answers routed to
// the waiting caller, every pending caller failed when the connection ends. One IO thread per
// session runs the socket (reads and the single-writer queue); callers never touch it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "torchbridge/client/device.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "torchbridge/ir/protocol.hpp"

namespace tb::client::detail {

// Process-wide counters, as Burn's client keeps them: tensor ids shared by every device.
ir::TensorId new_tensor_id();
// The calling thread's stream (0, 1, ... in first-use order, like StreamId::current()).
ir::StreamId current_stream();
// The client's warm message blocks, shared by its sessions (their uploads and downloads) and by
// no host: a host in the same process keeps its own.
const std::shared_ptr<ir::BlockCache>& message_blocks();

class Session {
 public:
  static Result<std::shared_ptr<Session>> connect(std::string_view address, std::uint32_t index,
                                                  SessionOptions options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Fire-and-forget: batched, sent once a flush threshold is reached.
  void submit(ir::Task task);
  // Coordination tasks (RegisterTensor, transfers): sent at once.
  void submit_now(ir::Task task);
  // An answering task built from its request id; waits for the answer at most `timeout`.
  Result<ir::TaskResponseContent> request(const std::function<ir::Task(ir::RequestId)>& make,
                                          std::optional<std::chrono::milliseconds> timeout);
  // request() for a task that must be answered with an R; another answer is a decode error.
  template <class R>
  Result<R> request_answer(const std::function<ir::Task(ir::RequestId)>& make,
                           std::optional<std::chrono::milliseconds> timeout) {
    TB_TRY_ASSIGN(auto content, request(make, timeout));
    if (auto* r = std::get_if<R>(&content)) return std::move(*r);
    return make_error(ErrorCode::kDecode, "{}: {} answered with {}", describe(),
                      ir::response_name(ir::TaskResponseContent(std::in_place_type<R>)),
                      ir::response_name(content));
  }
  Status flush();
  void close();

  bool connected() const;
  std::optional<Error> failure() const;

  const std::string& address() const { return address_; }
  const Address& peer_address() const { return peer_; }
  // The host as transfer tasks name it.
  ir::Peer peer() const {
    return ir::Peer{ir::PeerKind::WebSocket, ir::Address{peer_.scheme, peer_.host, peer_.port}, {}};
  }
  std::uint32_t index() const { return index_; }
  std::uint32_t device_count() const { return info_.device_count; }
  const ir::DeviceSettings& settings() const { return info_.settings; }
  const SessionOptions& options() const { return options_; }
  std::string describe() const;

  struct Io;

 private:
  Session(std::string address, Address peer, std::uint32_t index, SessionOptions options,
          std::shared_ptr<boost::asio::ssl::context> tls);
  // open(): the socket (TCP, TLS, the websocket upgrade), the Init and its answer, then the
  // network thread reading answers for good.
  Status open();
  Status connect_socket();
  Status greet();
  Status accept_init_answer(const ir::TaskResponse& reply);
  void start_io();
  struct Reader;  // reads each answer and hands it to whoever waits for it
  void flush_locked();
  void fail(Error error);

  std::string address_;
  Address peer_;
  std::uint32_t index_ = 0;
  SessionOptions options_;
  ir::SessionInfo info_;
  std::uint64_t session_id_ = 0;

  mutable std::mutex mutex_;
  std::vector<ir::RemoteMessage> batch_;
  std::size_t batch_bytes_ = 0;
  ir::RequestId next_request_ = 0;
  struct Pending {
    std::promise<Result<ir::TaskResponseContent>> promise;
  };
  std::unordered_map<ir::RequestId, std::shared_ptr<Pending>> pending_;
  bool closing_ = false;
  std::optional<Error> failure_;

  std::unique_ptr<Io> io_;
};

}  // namespace tb::client::detail
