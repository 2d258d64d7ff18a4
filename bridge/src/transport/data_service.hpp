// The `/data` service, both sides of host-to-host transfers: DataConnection serves tensors this
// host exposed (ExposeTensorRemote) to hosts that download them, and WebSocketDownloader fetches a
// tensor another host exposed (RegisterTensorRemote).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "cluster/transfers.hpp"
#include "net/any_stream.hpp"
#include "torchbridge/bridge/host.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "transport/listener.hpp"
#include "transport/out_frame.hpp"

namespace tb::bridge {

struct HostState;

class DataConnection : public std::enable_shared_from_this<DataConnection> {
 public:
  // `slot` counts against max_connections, `data_slot` against max_data_connections. `member`:
  // the peer is a federation member (it presented the token, or without one, it is at a member's
  // address); only members download transfers between members.
  DataConnection(HostState& host, tb::net::AnyStream&& stream, ConnectionSlots slot,
                 GaugeSlot data_slot, bool member = false);
  void run(boost::beast::http::request<boost::beast::http::string_body> req);

 private:
  void await_request();
  void read();
  void on_read(boost::beast::error_code ec);
  void on_request();
  void respond(DataStore::Payload payload);
  void close(boost::beast::websocket::close_code code, std::string_view reason);
  // Closes the socket without a close handshake.
  void abort();
  void on_exception(const std::string& what);

  HostState& host_;
  boost::beast::websocket::stream<tb::net::AnyStream> ws_;
  boost::asio::steady_timer timer_;
  ConnectionSlots slot_;
  GaugeSlot data_slot_;
  boost::beast::flat_buffer buffer_;
  FramePtr frame_;
  std::vector<boost::asio::const_buffer> write_buffers_;
  std::uint64_t ticket_ = 0;  // the request waiting for its tensor, if any
  bool waiting_ = false;
  bool ended_ = false;
  const bool member_;
};

class WebSocketDownloader final : public Downloader {
 public:
  // `tls` (set by Host::start) verifies wss:// peers.
  WebSocketDownloader(const HostOptions& options, const std::atomic<bool>& stopping,
                      const std::shared_ptr<boost::asio::ssl::context>& tls,
                      std::shared_ptr<ir::BlockCache> blocks)
      : options_(options), stopping_(stopping), tls_(tls), blocks_(std::move(blocks)) {}
  Result<ir::TensorData> download(const ir::Address& peer, std::uint64_t key) override;
  Result<ir::TensorData> download_from_member(const ir::Address& peer, std::uint64_t key) override;

 private:
  const HostOptions& options_;
  const std::atomic<bool>& stopping_;
  const std::shared_ptr<boost::asio::ssl::context>& tls_;
  std::shared_ptr<ir::BlockCache> blocks_;  // the host's: the answers are received into its blocks
};

// Downloads one tensor from another host's `/data` route, over TLS for a wss:// peer (verified
// in `tls`; none: the system's roots), into a block of `blocks` when it keeps one of the answer's
// size. Gives up early, with an error, once `cancel` (if any) becomes true.
Result<ir::TensorData> download_tensor(const ir::Address& peer, std::uint64_t key,
                                       std::chrono::milliseconds timeout,
                                       std::uint64_t max_message_bytes,
                                       const std::atomic<bool>* cancel = nullptr,
                                       boost::asio::ssl::context* tls = nullptr,
                                       const std::optional<std::string>& bearer = std::nullopt,
                                       std::shared_ptr<ir::BlockCache> blocks = nullptr);

// The segments of `frame` as Asio buffers, for one scatter-gather write.
std::vector<boost::asio::const_buffer> buffers_of(const OutFrame& frame);

}  // namespace tb::bridge
