// Protocol-level tests of the host: tb::bridge::Host in-process on 127.0.0.1 (any free port) with
// LibTorch CPU devices, and a small Beast websocket client speaking Burn's frames built with
// tb::ir::encode. Every client operation is bounded in time, so a host that never answers fails
// the test instead of hanging it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "torchbridge/bridge/host.hpp"
#include "torchbridge/ir/codec.hpp"
#include "torchbridge/ir/format.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::test {

using namespace tb::ir;
using namespace std::chrono_literals;

// A host serving `devices` CPU devices.
class TestHost {
 public:
  explicit TestHost(int devices = 2, std::chrono::milliseconds transfer_timeout = 10s) {
    bridge::HostOptions options;
    options.port = 0;
    options.transfer_timeout = transfer_timeout;
    std::vector<std::shared_ptr<backend::Backend>> backends;
    for (int i = 0; i < devices; ++i) {
      backend::libtorch::BackendOptions b;
      b.device = "cpu";
      backends.push_back(std::move(backend::libtorch::make_backend(b)).value());
    }
    host_ = std::make_unique<bridge::Host>(options, std::move(backends));
    auto s = host_->start();
    EXPECT_TRUE(s) << (s ? "" : s.error().what());
  }
  std::uint16_t port() const { return host_->port(); }
  Peer peer() const { return Peer{PeerKind::WebSocket, Address{"ws", "127.0.0.1", port()}, {}}; }
  bridge::Host& host() { return *host_; }

 private:
  std::unique_ptr<bridge::Host> host_;
};

// Polls `done` every 20 ms until it holds or `timeout` passes; returns its last value. Tests wait
// for the state they need this way rather than sleeping for a guess at how long it takes.
template <class Pred>
bool eventually(Pred done, std::chrono::milliseconds timeout = 10s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// How often leaf `name` ("Float.Matmul", as `torchbridge ops` prints it) ran on `host`: the count
// goes up as a session's worker begins the op.
inline std::uint64_t executed(const bridge::Host& host, std::string_view name) {
  for (const auto& [leaf, count] : host.metrics().ops_by_kind) {
    if (leaf == name) return count;
  }
  ADD_FAILURE() << name << " is not a leaf";
  return 0;
}

class RawClient;  // host_raw_client.hpp

// One Burn session on `/session`.
class Session {
 public:
  Session(std::uint16_t port, std::uint32_t device);
  ~Session();

  // Sends one frame of tasks.
  void send(std::vector<Task> tasks);
  // The next response frame; nullopt (and a test failure) after `timeout`.
  std::optional<TaskResponse> receive(std::chrono::milliseconds timeout = 20s);

  RequestId next_request() { return next_request_++; }
  // ReadTensor / SyncBackend / DTypeUsage round trips.
  WireResult<TensorData> read(const TensorIr& t, std::chrono::milliseconds timeout = 20s);
  WireResult<std::monostate> sync(std::chrono::milliseconds timeout = 20s);
  std::uint8_t dtype_usage(const DType& dtype);

  bool open() const { return open_; }

 private:
  std::unique_ptr<RawClient> client_;
  RequestId next_request_ = 1;
  bool open_ = false;
};

inline StreamId stream() {
  return StreamId{0};
}
inline Task register_tensor(std::uint64_t id, TensorData data) {
  return RegisterTensorTask{stream(), TensorId{id}, std::move(data)};
}
inline Task register_op(OperationIr op) {
  return RegisterOperationTask{stream(), std::move(op)};
}
// `count` f32 ones in tensor `id`, made on the host (no upload).
inline Task ones(std::uint64_t id, std::uint64_t count) {
  return register_op(make_op<OpKind::BaseFloat_Ones>(CreationOpIr{
      TensorIr{TensorId{id}, Shape{Dims{count}}, TensorStatus::NotInit, DType(DTypeKind::F32)}}));
}
inline ReadTensorTask read_task(RequestId request, std::uint64_t id, std::uint64_t count) {
  return ReadTensorTask{
      request, stream(),
      TensorIr{TensorId{id}, Shape{Dims{count}}, TensorStatus::ReadOnly, DType(DTypeKind::F32)}};
}
inline Task expose_local(const TensorIr& t, LocalTransferId id) {
  return ExposeTensorLocalTask{stream(), t, id};
}
inline Task register_local(LocalTransferId id, std::uint64_t new_id) {
  return RegisterTensorLocalTask{stream(), id, TensorId{new_id}};
}
inline TransferCapability capability(std::uint64_t key) {
  TransferCapability c{};
  for (int i = 0; i < 8; ++i)
    c[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(key >> (8 * i));
  for (std::size_t i = 8; i < c.size(); ++i) c[i] = static_cast<std::uint8_t>(i * 7);
  return c;
}
inline Task expose_remote(const TensorIr& t, std::uint64_t key, const Peer& target) {
  return ExposeTensorRemoteTask{stream(), t, 1, capability(key), target};
}
inline Task register_remote(std::uint64_t key, const Peer& source, std::uint64_t new_id) {
  return RegisterTensorRemoteTask{stream(), TensorRemote{capability(key), source},
                                  TensorId{new_id}};
}

}  // namespace tb::test
