#include "relay.hpp"

#include <spdlog/spdlog.h>

#include "guard.hpp"
#include "host_state.hpp"
#include "net/tls.hpp"
#include "torchbridge/version.hpp"
#include "ws_session.hpp"

#include <openssl/sha.h>

namespace tb::bridge {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace {

struct Endpoint {
  bool secure = false;
  std::string host, port;
};

// A member's address as it published it: ws://host:port or wss://host:port.
std::optional<Endpoint> endpoint_of(std::string_view address) {
  Endpoint e;
  if (address.rfind("ws://", 0) == 0) {
    address.remove_prefix(5);
  } else if (address.rfind("wss://", 0) == 0) {
    e.secure = true;
    address.remove_prefix(6);
  } else {
    return std::nullopt;
  }
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == address.size()) return std::nullopt;
  e.host = std::string(tb::net::unbracketed(address.substr(0, colon)));
  e.port = std::string(address.substr(colon + 1));
  return e;
}

}  // namespace

std::string federation_scope(std::string_view scope) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(scope.data()), scope.size(), digest);
  std::string hex;
  for (unsigned char c : digest) hex += fmt::format("{:02x}", c);
  return hex;
}

std::optional<ir::Address> member_address(std::string_view address) {
  const auto e = endpoint_of(address);
  if (!e) return std::nullopt;
  ir::Address a{e->secure ? "wss" : "ws", e->host, std::nullopt};
  try {
    const unsigned long port = std::stoul(e->port);
    if (port > 65535) return std::nullopt;
    a.port = static_cast<std::uint16_t>(port);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return a;
}

std::uint64_t transfer_key(std::string_view scope, ir::LocalTransferId id) {
  const std::string text = fmt::format("{}|{}", scope, id);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::uint64_t key = 0;
  for (int i = 0; i < 8; ++i) key |= std::uint64_t{digest[i]} << (8 * i);
  return key;
}

bool is_member_host(const Federation& federation, const std::string& peer) {
  for (const auto& m : federation.members()) {
    if (const auto e = endpoint_of(m.address); e && e->host == peer) return true;
  }
  return false;
}

Relay::Relay(HostState& host, Ws&& client, ConnectionSlot slot, std::string peer,
             FederationMember member, ir::Bytes init, std::string scope)
    : host_(host),
      client_(std::move(client)),
      slot_(std::move(slot)),
      peer_(std::move(peer)),
      member_(std::move(member)),
      init_(std::move(init)),
      scope_(std::move(scope)) {
  from_client_.ws = &client_;
  ++host_.counters.relays_open;
}

Relay::~Relay() {
  --host_.counters.relays_open;
}

void Relay::close(Side& side, const websocket::close_reason& reason) {
  if (!side.ws) return;
  if (side.writing || !side.ws->is_open()) {
    beast::error_code ec;
    beast::get_lowest_layer(*side.ws).socket().close(ec);
    return;
  }
  side.ws->async_close(reason, [self = shared_from_this()](beast::error_code) {});
}

void Relay::fail(const std::string& why) {
  if (ended_) return;
  ended_ = true;
  spdlog::warn("{}: relay to member {} ({}): {}", peer_, member_.rank, member_.address, why);
  // A close reason holds at most 123 bytes.
  const std::string reason =
      fmt::format("member {} unreachable: {}", member_.rank, why).substr(0, 123);
  close(from_client_, websocket::close_reason(websocket::close_code::try_again_later, reason));
  if (member_ws_) {
    beast::error_code ec;
    beast::get_lowest_layer(*member_ws_).socket().close(ec);
  }
}

void Relay::run() {
  const auto e = endpoint_of(member_.address);
  if (!e) return fail("its address " + member_.address + " is not ws:// or wss://");
  std::shared_ptr<net::ssl::context> tls = host_.tls_client;
  if (e->secure && !tls) {
    auto roots = tb::net::client_context("");
    if (!roots) return fail(roots.error().what());
    tls = roots.value();
    tls_keep_ = tls;
  }
  // The client is past the handshake's checks: its messages may now be as large as a session's
  // (the stream still holds the Init's limit).
  client_.read_message_max(host_.options.limits.max_message_bytes);
  beast::tcp_stream tcp(client_.get_executor());
  member_ws_ = std::make_unique<Ws>(e->secure ? tb::net::AnyStream(std::move(tcp), *tls)
                                              : tb::net::AnyStream(std::move(tcp)));
  from_member_.ws = member_ws_.get();
  if (e->secure) {
    if (auto s = tb::net::prepare_client(member_ws_->next_layer().tls(), e->host); !s) {
      return fail(s.error().what());
    }
  }
  member_ws_->read_message_max(host_.options.limits.max_message_bytes);
  member_ws_->binary(true);
  member_ws_->auto_fragment(false);
  // The member checks the client's Init itself; the token on the upgrade request lets in a
  // client that authorized with a header here.
  member_ws_->set_option(websocket::stream_base::decorator([this](websocket::request_type& req) {
    req.set(http::field::user_agent, fmt::format("torchbridge/{} relay", kVersion));
    if (host_.options.auth_token) {
      req.set(http::field::authorization, "Bearer " + *host_.options.auth_token);
    }
    req.set(kRelayedScopeHeader, scope_);
  }));
  beast::get_lowest_layer(*member_ws_).expires_after(host_.options.init_timeout);
  auto resolver = std::make_shared<tcp::resolver>(client_.get_executor());
  resolver->async_resolve(e->host, e->port,
                          [self = shared_from_this(), resolver, e = *e](
                              beast::error_code ec, tcp::resolver::results_type results) {
                            if (ec) return self->fail("resolving: " + ec.message());
                            self->member_ws_->next_layer().lowest().async_connect(
                                results, [self, e](beast::error_code ec, const tcp::endpoint&) {
                                  if (ec) return self->fail("connecting: " + ec.message());
                                  const auto upgrade = [self, e](beast::error_code ec) {
                                    if (ec) return self->fail("TLS: " + ec.message());
                                    self->member_ws_->async_handshake(
                                        e.host + ":" + e.port, "/session",
                                        [self](beast::error_code ec) {
                                          if (ec)
                                            return self->fail("opening /session: " + ec.message());
                                          self->on_connected();
                                        });
                                  };
                                  if (!e.secure) return upgrade({});
                                  self->member_ws_->next_layer().tls().async_handshake(
                                      net::ssl::stream_base::client, upgrade);
                                });
                          });
}

void Relay::on_connected() {
  if (ended_) return;
  beast::get_lowest_layer(*member_ws_).expires_never();
  // As a session's own socket: pings, and a member silent for a minute is gone.
  member_ws_->set_option(
      websocket::stream_base::timeout{std::chrono::seconds(30), std::chrono::seconds(60), true});
  member_ws_->async_write(net::buffer(init_.data(), init_.size()),
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                            self->init_ = {};
                            if (ec) return self->fail("sending the Init: " + ec.message());
                            spdlog::debug("{}: session relayed to member {} ({})", self->peer_,
                                          self->member_.rank, self->member_.address);
                            self->pump(self->from_client_, self->from_member_);
                            self->pump(self->from_member_, self->from_client_);
                          });
}

void Relay::pump(Side& from, Side& to) {
  if (ended_) return;
  from.ws->async_read(
      from.buffer, [self = shared_from_this(), &from, &to](beast::error_code ec, std::size_t) {
        guarded([&] { self->on_read(from, to, ec); },
                [&](const std::string& what) { self->fail("host error: " + what); });
      });
}

void Relay::on_read(Side& from, Side& to, beast::error_code ec) {
  if (ec) return end(from, to, ec);
  if (ended_) return;
  from.held =
      MemoryCharge(std::shared_ptr<MemoryAccount>(std::shared_ptr<MemoryAccount>(), &host_.memory),
                   from.buffer.size());
  const auto& limits = host_.options.limits;
  if (limits.max_host_bytes &&
      host_.memory.bytes() + host_.tensor_bytes.load() > limits.max_host_bytes) {
    return fail("the host's memory is full");
  }
  (&from == &from_client_ ? host_.counters.bytes_in : host_.counters.bytes_out) +=
      from.buffer.size();
  to.ws->binary(from.ws->got_binary());
  to.writing = true;
  to.ws->async_write(from.buffer.data(), [self = shared_from_this(), &from, &to](
                                             beast::error_code ec, std::size_t) {
    to.writing = false;
    from.buffer.consume(from.buffer.size());
    from.held = {};
    if (ec) {
      if (&to == &self->from_member_) return self->fail("sending: " + ec.message());
      // The client cannot be written to: it is gone, and so is the member's session.
      self->ended_ = true;
      return self->close(self->from_member_,
                         websocket::close_reason(websocket::close_code::going_away));
    }
    self->pump(from, to);
  });
}

void Relay::end(Side& from, Side& to, beast::error_code ec) {
  if (ended_) return;
  if (ec == websocket::error::closed) {
    // One side closed: the other hears the same close.
    ended_ = true;
    close(to, from.ws->reason());
    return;
  }
  if (&from == &from_client_) {
    // The client went away: so does the member's session.
    ended_ = true;
    spdlog::debug("{}: relayed session ended: {}", peer_, ec.message());
    close(to, websocket::close_reason(websocket::close_code::going_away));
    return;
  }
  fail("the connection broke: " + ec.message());
}

// Here rather than in ws_session.cpp: the one place a session leaves for another member.
void SessionConnection::relay(std::uint32_t device, const ir::Bytes& init, std::string scope) {
  // From here the websocket belongs to the relay; this connection keeps no session and touches
  // the stream no more (its timer sees the state and leaves it alone).
  init_timer_.cancel();
  state_ = State::kRelayed;
  const FederationMember& owner = host_.options.federation->owner_of(device);
  spdlog::info("{}: device {} is member {}'s ({}): relaying the session", peer_, device, owner.rank,
               owner.address);
  std::make_shared<Relay>(host_, std::move(ws_), std::move(slot_), peer_, owner, init,
                          std::move(scope))
      ->run();
}

}  // namespace tb::bridge
