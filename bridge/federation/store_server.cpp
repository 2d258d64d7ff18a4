#include "store_server.hpp"

#include <atomic>
#include <list>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio.hpp>

#include "store_protocol.hpp"
#include "store_table.hpp"

namespace tb::bridge::store {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class ServerImpl;

// One peer: the handshake, then one request at a time.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(ServerImpl& server, tcp::socket socket);
  void start();
  void close();
  bool authenticated() const { return authenticated_; }
  // A waiting request whose keys are all there is answered.
  void wake(const Table& table);
  bool waits() const { return waiting_.has_value() && !closed_; }
  bool on_wait_list = false;

 private:
  void read_answer();
  void read_header();
  void read_body(std::uint32_t length);
  void handle(std::string_view payload);
  void reply(const Response& response);
  void arm(std::chrono::milliseconds deadline);
  void disarm();

  ServerImpl& server_;
  tcp::socket socket_;
  asio::steady_timer deadline_;
  asio::steady_timer wait_timer_;
  Nonce server_nonce_{};
  std::array<std::uint8_t, kAnswerBytes> answer_{};
  std::array<std::uint8_t, 4> header_{};
  Bytes body_;
  Bytes out_;
  std::optional<FrameKey> in_, send_;
  std::optional<Request> waiting_;
  // Which arming of a timer a handler belongs to: a timer that fired as its read completed (or
  // an earlier wait's timer) is not this one's.
  std::uint64_t deadline_id_ = 0;
  std::uint64_t wait_id_ = 0;
  bool authenticated_ = false;
  bool closed_ = false;
};

class ServerImpl final : public Server {
 public:
  ServerImpl(const std::optional<std::string>& token, ServerLimits limits)
      : key_(store_key(token)), limits_(limits), acceptor_(ioc_), table_(limits_) {}

  ~ServerImpl() override {
    asio::post(ioc_, [this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      for (auto& weak : connections_) {
        if (auto c = weak.lock()) c->close();
      }
    });
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }

  Status listen(const std::string& host, std::uint16_t port) {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    tcp::resolver resolver(ioc_);
    tcp::endpoint endpoint;
    if (!ec) {
      endpoint = tcp::endpoint(address, port);
    } else {
      const auto found = resolver.resolve(host, std::to_string(port), ec);
      if (ec || found.empty()) {
        return make_error(ErrorCode::kIo, "federation: cannot resolve the store's host {}: {}",
                          host, ec.message());
      }
      endpoint = found.begin()->endpoint();
    }
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return make_error(ErrorCode::kIo, "federation: cannot listen on {}:{} for the store: {}",
                        host, port, ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { ioc_.run(); });
    return ok();
  }

  std::uint16_t port() const override { return port_; }

  ServerStats stats() const override {
    std::lock_guard lock(stats_mutex_);
    return stats_;
  }

  // For the connections, on the server's thread.
  const Key& key() const { return key_; }
  const ServerLimits& limits() const { return limits_; }
  asio::io_context& io() { return ioc_; }
  Table& table() { return table_; }

  void authenticated(const std::shared_ptr<Connection>& c) {
    pending_.remove_if([&](const std::weak_ptr<Connection>& w) { return w.lock() == c; });
    update_stats();
  }

  void refused() {
    ++refused_;
    update_stats();
  }

  // A connection waits once at most, so the list is bounded by the connections.
  void waiting(const std::shared_ptr<Connection>& c) {
    if (c->on_wait_list) return;  // a wait that timed out left it there
    c->on_wait_list = true;
    waiters_.push_back(c);
  }

  // After a write: every waiter whose keys are now there is answered; the rest wait on.
  void written() {
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiters) {
      if (auto c = w.lock()) {
        c->on_wait_list = false;
        c->wake(table_);
      }
    }
    update_stats();
  }

  void update_stats() {
    connections_.remove_if([](const std::weak_ptr<Connection>& w) { return w.expired(); });
    pending_.remove_if([](const std::weak_ptr<Connection>& w) { return w.expired(); });
    std::lock_guard lock(stats_mutex_);
    stats_.keys = table_.keys();
    stats_.bytes = table_.bytes();
    stats_.pending = pending_.size();
    stats_.members = connections_.size() - pending_.size();
    stats_.refused = refused_;
    stats_.waiting = 0;
    for (const auto& w : waiters_) {
      const auto c = w.lock();
      stats_.waiting += c && c->waits();
    }
  }

 private:
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
      if (!ec) admit(std::move(socket));
      accept();
    });
  }

  void admit(tcp::socket socket) {
    update_stats();
    if (connections_.size() >= limits_.max_connections + limits_.max_pending) {
      ++refused_;
      return;  // the socket closes as it goes
    }
    // Strangers that connect and say nothing make way for the newest connection.
    while (pending_.size() >= limits_.max_pending) {
      if (auto oldest = pending_.front().lock()) oldest->close();
      pending_.pop_front();
      ++refused_;
    }
    auto c = std::make_shared<Connection>(*this, std::move(socket));
    connections_.push_back(c);
    pending_.push_back(c);
    c->start();
    update_stats();
  }

  // Declared first: the connections and timers below are destroyed before it.
  asio::io_context ioc_;
  const Key key_;
  const ServerLimits limits_;
  tcp::acceptor acceptor_;
  Table table_;
  std::list<std::weak_ptr<Connection>> connections_, pending_, waiters_;
  std::uint64_t refused_ = 0;
  std::uint16_t port_ = 0;
  mutable std::mutex stats_mutex_;
  ServerStats stats_;
  std::thread thread_;
};

Connection::Connection(ServerImpl& server, tcp::socket socket)
    : server_(server),
      socket_(std::move(socket)),
      deadline_(server.io()),
      wait_timer_(server.io()),
      server_nonce_(random_nonce()) {}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  deadline_.cancel();
  wait_timer_.cancel();
}

void Connection::arm(std::chrono::milliseconds deadline) {
  deadline_.expires_after(deadline);
  deadline_.async_wait(
      [self = shared_from_this(), id = ++deadline_id_](boost::system::error_code ec) {
        if (ec || id != self->deadline_id_) return;  // the read it bounds completed
        self->server_.refused();
        self->close();
      });
}

void Connection::disarm() {
  ++deadline_id_;
  deadline_.cancel();
}

void Connection::start() {
  out_.assign(kMagic.begin(), kMagic.end());
  out_.insert(out_.end(), server_nonce_.begin(), server_nonce_.end());
  arm(server_.limits().handshake_deadline);
  asio::async_write(socket_, asio::buffer(out_),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      if (ec) return self->close();
                      self->read_answer();
                    });
}

void Connection::read_answer() {
  asio::async_read(
      socket_, asio::buffer(answer_),
      [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
        if (ec) return self->close();
        Nonce client{};
        std::copy_n(self->answer_.begin() + kMagic.size(), kNonceBytes, client.begin());
        const Key& key = self->server_.key();
        const bool magic = std::equal(kMagic.begin(), kMagic.end(), self->answer_.begin());
        if (!magic || !same(derive(key, "client", self->server_nonce_, client),
                            self->answer_.data() + kMagic.size() + kNonceBytes)) {
          self->server_.refused();
          return self->close();
        }
        self->disarm();
        self->authenticated_ = true;
        self->in_.emplace(derive(key, "client frames", self->server_nonce_, client));
        self->send_.emplace(derive(key, "server frames", self->server_nonce_, client));
        const Key proof = derive(key, "server", self->server_nonce_, client);
        self->out_.assign(proof.begin(), proof.end());
        self->server_.authenticated(self);
        asio::async_write(self->socket_, asio::buffer(self->out_),
                          [self](boost::system::error_code ec2, std::size_t) {
                            if (ec2) return self->close();
                            self->read_header();
                          });
      });
}

void Connection::read_header() {
  asio::async_read(socket_, asio::buffer(header_),
                   [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                     if (ec) return self->close();
                     const std::uint32_t length = frame_length(self->header_.data());
                     if (length > kMaxPayloadBytes) {  // refused before any of it is held
                       spdlog::warn("federation store: a member's frame declares {} bytes; closed",
                                    length);
                       self->server_.refused();
                       return self->close();
                     }
                     self->read_body(length);
                   });
}

void Connection::read_body(std::uint32_t length) {
  body_.resize(std::size_t{length} + kMacBytes);
  arm(server_.limits().frame_deadline);
  asio::async_read(socket_, asio::buffer(body_),
                   [self = shared_from_this(), length](boost::system::error_code ec, std::size_t) {
                     if (ec) return self->close();
                     self->disarm();
                     const std::string_view payload(
                         reinterpret_cast<const char*>(self->body_.data()), length);
                     auto opened = self->in_->open(payload, self->body_.data() + length);
                     if (!opened) {
                       self->server_.refused();
                       return self->close();
                     }
                     self->handle(opened.value());
                   });
}

void Connection::handle(std::string_view payload) {
  auto request = decode_request(payload);
  if (!request) {
    server_.refused();
    return close();
  }
  Request& r = request.value();
  if (r.op != Op::kWait) {
    const Response response = server_.table().apply(r);
    if (r.op == Op::kSet || r.op == Op::kAdd || r.op == Op::kCompareSet) server_.written();
    return reply(response);
  }
  if (server_.table().has_all(r.keys)) return reply(Response{});
  const auto timeout = std::min(std::chrono::milliseconds(r.timeout_ms), server_.limits().max_wait);
  waiting_ = std::move(r);
  server_.waiting(shared_from_this());
  server_.update_stats();
  wait_timer_.expires_after(timeout);
  wait_timer_.async_wait(
      [self = shared_from_this(), id = ++wait_id_](boost::system::error_code ec) {
        if (ec || id != self->wait_id_ || !self->waiting_) return;
        self->waiting_.reset();
        self->server_.update_stats();
        self->reply(Response{Outcome::kTimeout, 0, {}});
      });
}

void Connection::wake(const Table& table) {
  if (!waiting_ || closed_) return;
  if (!table.has_all(waiting_->keys)) {
    server_.waiting(shared_from_this());  // still waiting: stays on the list
    return;
  }
  waiting_.reset();
  ++wait_id_;
  wait_timer_.cancel();
  reply(Response{});
}

void Connection::reply(const Response& response) {
  if (closed_) return;
  out_ = send_->seal(encode(response));
  asio::async_write(socket_, asio::buffer(out_),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      if (ec) return self->close();
                      self->read_header();
                    });
}

}  // namespace

Result<std::unique_ptr<Server>> Server::start(const std::string& host, std::uint16_t port,
                                              const std::optional<std::string>& token,
                                              ServerLimits limits) {
  auto server = std::make_unique<ServerImpl>(token, limits);
  TB_TRY(server->listen(host, port));
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace tb::bridge::store
