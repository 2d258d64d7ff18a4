// A session for another member's device: the client's websocket, past its Init, is joined to a
// websocket to the member that owns the device. Messages pass through as they are, both ways,
// without being decoded (a session speaks the same protocol to whichever member serves it); the
// owner runs the handshake itself, from the client's own Init.
//
// One message in flight each way, charged to the host's memory while it is held. A close on
// either side closes the other with the same code and reason; a member that cannot be reached or
// goes away closes the client's websocket with a reason naming it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "memory.hpp"
#include "net/any_stream.hpp"
#include "torchbridge/bridge/federation.hpp"
#include "torchbridge/ir/bytes.hpp"
#include "torchbridge/ir/protocol.hpp"
#include "transport/listener.hpp"

namespace tb::bridge {

struct HostState;

// On the upgrade request of a relayed session: the transfer scope of the client (a digest), so
// that same-host transfers between its sessions on different members meet (http_routes.cpp takes
// it from members only).
inline constexpr const char* kRelayedScopeHeader = "X-Torchbridge-Scope";
// A federation's transfer scope for a client's `scope`: a digest (it holds the credential).
std::string federation_scope(std::string_view scope);
// Whether `peer` (an address without its port) is the host of a member's address.
bool is_member_host(const Federation& federation, const std::string& peer);
// A member's address (ws://host:port, wss://host:port) as `/data` downloads take it.
std::optional<ir::Address> member_address(std::string_view address);
// The `/data` key of same-host transfer `id` of `scope` in a federation: HMAC-SHA256 under the
// members' `secret` (Federation::transfer_secret), so that no one outside the federation can
// compute it from the client's address and the transfer id.
std::uint64_t transfer_key(std::string_view secret, std::string_view scope, ir::LocalTransferId id);

class Relay : public std::enable_shared_from_this<Relay> {
 public:
  using Ws = boost::beast::websocket::stream<tb::net::AnyStream>;

  // `client` has sent `init` (its first message) and nothing has been answered.
  Relay(HostState& host, Ws&& client, ConnectionSlots slot, std::string peer,
        FederationMember member, ir::Bytes init, std::string scope);
  void run();

 private:
  // One websocket: the message read from it and not yet passed on, and whether a write to it is
  // in flight (a websocket close is a write: it must wait, or the socket is closed instead).
  struct Side {
    Ws* ws = nullptr;
    boost::beast::flat_buffer buffer;
    MemoryCharge held;
    bool writing = false;
  };
  // Runs a handler; an exception closes both sockets (no exception leaves an Asio handler).
  void guard(const std::function<void()>& fn);
  void on_tcp(boost::beast::error_code ec);
  void on_tls(boost::beast::error_code ec);
  void on_connected();
  void pump(Side& from, Side& to);
  void on_read(Side& from, Side& to, boost::beast::error_code ec);
  void on_written(Side& from, Side& to, boost::beast::error_code ec);
  void end(Side& from, Side& to, boost::beast::error_code ec);
  void fail(const std::string& why);
  void close(Side& side, const boost::beast::websocket::close_reason& reason);

  HostState& host_;
  Ws client_;
  std::unique_ptr<Ws> member_ws_;
  ConnectionSlots slot_;
  std::string peer_;
  FederationMember member_;
  ir::Bytes init_;
  std::string scope_;
  GaugeSlot open_;  // one of the host's relays_open
  bool secure_ = false;
  std::string host_name_, port_;                         // the owner's, from its address
  std::shared_ptr<boost::asio::ssl::context> tls_keep_;  // the system's roots, when made here
  Side from_client_, from_member_;
  bool ended_ = false;
};

}  // namespace tb::bridge
