#include "cluster/relay.hpp"

#include <spdlog/spdlog.h>

#include "guard.hpp"
#include "host_state.hpp"
#include "net/message_buffer.hpp"
#include "net/tls.hpp"
#include "torchbridge/decimal.hpp"
#include "torchbridge/version.hpp"
#include "transport/ws_session.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace tb::bridge {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace {
// Both of a relay's websockets: handshakes in 30 s, pings after 30 s of silence, and a side silent
// for a minute is gone (Beast's own timer: a relay is not a per-op path).
websocket::stream_base::timeout relay_timeout() {
  return {std::chrono::seconds(30), std::chrono::seconds(60), true};
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
  ir::Address a;
  for (const char* scheme : {"ws", "wss"}) {
    if (address.rfind(std::string(scheme) + "://", 0) == 0) a.scheme = scheme;
  }
  if (a.scheme.empty()) return std::nullopt;
  address.remove_prefix(a.scheme.size() + 3);
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  a.host = std::string(tb::net::unbracketed(address.substr(0, colon)));
  const auto port = parse_decimal<std::uint16_t>(address.substr(colon + 1));
  if (!port) return std::nullopt;
  a.port = *port;
  return a;
}

std::uint64_t transfer_key(std::string_view secret, std::string_view scope,
                           ir::LocalTransferId id) {
  const std::string text = fmt::format("{}|{}", scope, id);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest, &n);
  std::uint64_t key = 0;
  for (int i = 0; i < 8; ++i) key |= std::uint64_t{digest[i]} << (8 * i);
  return key;
}

bool is_member_host(const Federation& federation, const std::string& peer) {
  for (const auto& m : federation.members()) {
    if (const auto a = member_address(m.address); a && a->host == peer) return true;
  }
  return false;
}

Relay::Relay(HostState& host, Ws&& client, ConnectionSlots slot, std::string peer,
             FederationMember member, ir::Bytes init, std::string scope)
    : host_(host),
      client_(std::move(client)),
      slot_(std::move(slot)),
      peer_(std::move(peer)),
      member_(std::move(member)),
      init_(std::move(init)),
      scope_(std::move(scope)),
      open_(host.counters.open(Gauge::kRelays)) {
  from_client_.ws = &client_;
}

void Relay::guard(const std::function<void()>& fn) {
  guarded(fn, [this](const std::string& what) {
    // Nothing that allocates: both sockets close, and the client sees its connection end.
    ended_ = true;
    spdlog::error("{}: relay: {}", peer_, what);
    beast::error_code ec;
    beast::get_lowest_layer(client_).socket().close(ec);
    if (member_ws_) beast::get_lowest_layer(*member_ws_).socket().close(ec);
  });
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
  const auto a = member_address(member_.address);
  if (!a) return fail("its address " + member_.address + " is not ws:// or wss://");
  secure_ = a->scheme == "wss";
  host_name_ = a->host;
  port_ = std::to_string(*a->port);
  std::shared_ptr<net::ssl::context> tls = host_.tls_client;
  if (secure_ && !tls) {
    auto roots = tb::net::client_context("");
    if (!roots) return fail(roots.error().what());
    tls = roots.value();
    tls_keep_ = tls;
  }
  // The client is past the handshake's checks: its messages may now be as large as a session's
  // (the stream still holds the Init's limit).
  client_.read_message_max(host_.options.limits.max_message_bytes);
  // The session's connection watched its silence itself (IdleWatch); the relay has Beast do it.
  client_.set_option(relay_timeout());
  beast::tcp_stream tcp(client_.get_executor());
  member_ws_ = std::make_unique<Ws>(secure_ ? tb::net::AnyStream(std::move(tcp), *tls)
                                            : tb::net::AnyStream(std::move(tcp)));
  from_member_.ws = member_ws_.get();
  if (secure_) {
    if (auto s = tb::net::prepare_client(member_ws_->next_layer().tls(), host_name_); !s) {
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
  resolver->async_resolve(host_name_, port_,
                          [self = shared_from_this(), resolver](
                              beast::error_code ec, tcp::resolver::results_type results) {
                            self->guard([&] {
                              if (ec) return self->fail("resolving: " + ec.message());
                              self->member_ws_->next_layer().lowest().async_connect(
                                  results, [self](beast::error_code ec, const tcp::endpoint&) {
                                    self->guard([&] { self->on_tcp(ec); });
                                  });
                            });
                          });
}

void Relay::on_tcp(beast::error_code ec) {
  if (ec) return fail("connecting: " + ec.message());
  if (!secure_) return on_tls({});
  member_ws_->next_layer().async_handshake(net::ssl::stream_base::client,
                                           [self = shared_from_this()](beast::error_code ec) {
                                             self->guard([&] { self->on_tls(ec); });
                                           });
}

void Relay::on_tls(beast::error_code ec) {
  if (ec) return fail("TLS: " + ec.message());
  member_ws_->async_handshake(host_name_ + ":" + port_, "/session",
                              [self = shared_from_this()](beast::error_code ec) {
                                self->guard([&] {
                                  if (ec) return self->fail("opening /session: " + ec.message());
                                  self->on_connected();
                                });
                              });
}

void Relay::on_connected() {
  if (ended_) return;
  beast::get_lowest_layer(*member_ws_).expires_never();
  member_ws_->set_option(relay_timeout());
  member_ws_->async_write(net::buffer(init_.data(), init_.size()),
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                            self->guard([&] {
                              self->init_ = {};
                              if (ec) return self->fail("sending the Init: " + ec.message());
                              spdlog::debug("{}: session relayed to member {} ({})", self->peer_,
                                            self->member_.rank, self->member_.address);
                              self->pump(self->from_client_, self->from_member_);
                              self->pump(self->from_member_, self->from_client_);
                            });
                          });
}

void Relay::pump(Side& from, Side& to) {
  if (ended_) return;
  from.ws->async_read(from.buffer,
                      [self = shared_from_this(), &from, &to](beast::error_code ec, std::size_t) {
                        self->guard([&] { self->on_read(from, to, ec); });
                      });
}

void Relay::on_read(Side& from, Side& to, beast::error_code ec) {
  if (ec) return end(from, to, ec);
  if (ended_) return;
  from.held = MemoryCharge(host_.account(), from.buffer.size());
  if (tb::net::past_first_read(from.buffer.size()) && host_.over_memory_limit()) {
    return fail("the host's memory is full");
  }
  host_.counters.add(&from == &from_client_ ? Count::kBytesIn : Count::kBytesOut,
                     from.buffer.size());
  to.ws->binary(from.ws->got_binary());
  to.writing = true;
  to.ws->async_write(from.buffer.data(),
                     [self = shared_from_this(), &from, &to](beast::error_code ec, std::size_t) {
                       self->guard([&] { self->on_written(from, to, ec); });
                     });
}

void Relay::on_written(Side& from, Side& to, beast::error_code ec) {
  to.writing = false;
  from.buffer.consume(from.buffer.size());
  from.held = {};
  if (ec) {
    if (&to == &from_member_) return fail("sending: " + ec.message());
    // The client cannot be written to: it is gone, and so is the member's session.
    ended_ = true;
    return close(from_member_, websocket::close_reason(websocket::close_code::going_away));
  }
  pump(from, to);
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
  idle_timer_.cancel();
  ws_.control_callback();  // it names this connection, which the stream outlives
  state_ = State::kRelayed;
  const FederationMember& owner = host_.options.federation->owner_of(device);
  spdlog::info("{}: device {} is member {}'s ({}): relaying the session", origin_.peer, device,
               owner.rank, owner.address);
  std::make_shared<Relay>(host_, std::move(ws_), std::move(slot_), origin_.peer, owner, init,
                          std::move(scope))
      ->run();
}

}  // namespace tb::bridge
