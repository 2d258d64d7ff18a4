// The networking of the host: Beast/Asio listener, HTTP routing, `/session` and `/data` websocket
// connections, and the per-session worker threads.
#include "torchbridge/bridge/host.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "task_runner.hpp"
#include "torchbridge/ir/codec.hpp"
#include "torchbridge/ir/format.hpp"
#include "torchbridge/version.hpp"
#include "transfers.hpp"

namespace tb::bridge {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace {
constexpr std::size_t kCategories = ir::EnumNames<ir::OpCategory>::kNames.size();
using FrameBytes = std::shared_ptr<const std::vector<std::uint8_t>>;

std::string peer_of(const tcp::socket& s) {
  beast::error_code ec;
  const auto ep = s.remote_endpoint(ec);
  return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

// Leaves new elements uninitialized: a message buffer grows to the frame's length and the read
// overwrites every byte, so zero-filling it first would be a wasted pass over up to 1 GiB.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
};
// One received websocket message. Each message gets its own buffer, which the decoded frame's
// byte views (tensor payloads included) then share: no copy between the socket and the decoder,
// and no buffer that keeps its largest size for the rest of the session.
using MessageBytes = std::vector<std::uint8_t, UninitializedAllocator<std::uint8_t>>;

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}
}  // namespace

class SessionConnection;
class SessionWorker;

// One accepted connection's place under Limits::max_connections: moved from the HTTP connection to
// the websocket connection it becomes, released when its last owner goes.
class ConnectionSlot {
 public:
  explicit ConnectionSlot(std::atomic<std::uint32_t>& open) : open_(&open) { ++open; }
  ConnectionSlot(ConnectionSlot&& other) noexcept : open_(std::exchange(other.open_, nullptr)) {}
  ConnectionSlot& operator=(ConnectionSlot&&) = delete;
  ~ConnectionSlot() {
    if (open_) --*open_;
  }

 private:
  std::atomic<std::uint32_t>* open_;
};

struct Host::Impl {
  const Host* owner = nullptr;
  HostOptions options;
  std::vector<std::shared_ptr<backend::Backend>> devices;
  LocalTransfers local;
  DataStore data;
  CollectiveHub collectives;
  std::array<std::atomic<std::uint64_t>, ir::kOpKindCount> ops_by_kind{};

  std::atomic<std::uint64_t> sessions_total{0}, sessions_refused{0}, tasks{0}, frames_rejected{0},
      bytes_in{0}, bytes_out{0};
  std::atomic<bool> stopping{false};
  std::atomic<std::uint32_t> connections_open{0};
  std::atomic<std::uint64_t> connections_refused{0};

  std::mutex sessions_mutex;
  std::condition_variable workers_done;
  std::unordered_map<std::uint64_t, std::weak_ptr<SessionConnection>> sessions;
  std::unordered_map<std::uint64_t, std::shared_ptr<SessionWorker>> workers;
  std::vector<std::weak_ptr<void>> data_connections;

  // Last, so they go first: handlers still queued in the io_context own connections whose
  // destructors use the members above.
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;

  SessionServices services() {
    SessionServices s;
    s.local = &local;
    s.data = &data;
    s.collectives = &collectives;
    s.limits = options.limits;
    s.transfer_timeout = options.transfer_timeout;
    s.stopping = &stopping;
    s.ops_by_kind = ops_by_kind.data();
    return s;
  }
  void accept();
};

// ---- SessionWorker: one OS thread per session runs its tasks in arrival order. ----------------
// Blocking tasks (a transfer's rendezvous, a download) block only this session.
class SessionWorker : public std::enable_shared_from_this<SessionWorker> {
 public:
  SessionWorker(Host::Impl& host, std::uint64_t session_id, std::uint32_t device_index,
                std::weak_ptr<SessionConnection> connection)
      : host_(host),
        session_id_(session_id),
        device_index_(device_index),
        connection_(std::move(connection)) {}

  void start();
  void push(std::vector<ir::Task> tasks, std::uint64_t bytes) {
    {
      std::lock_guard lock(mutex_);
      for (auto& t : tasks) queue_.push_back(std::move(t));
      queued_bytes_ += bytes;
      frame_bytes_.push_back(bytes);
      frame_ends_.push_back(queue_.size() + done_);
    }
    cv_.notify_one();
  }
  // No more tasks: run what is queued (or, when the host stops, drop it), free everything, exit.
  void close(bool drop_queued = false) {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      if (drop_queued) {
        queue_.clear();
        frame_bytes_.clear();
        frame_ends_.clear();
        queued_bytes_ = 0;
      }
    }
    cv_.notify_one();
  }
  std::uint64_t queued_bytes() const { return queued_bytes_.load(); }
  std::atomic<bool> paused{false};
  std::atomic<std::uint64_t> live_tensors{0}, live_bytes{0}, failed_ops{0};

 private:
  void loop();

  Host::Impl& host_;
  std::uint64_t session_id_;
  std::uint32_t device_index_;
  std::weak_ptr<SessionConnection> connection_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<ir::Task> queue_;
  // Frames still in the queue: their size and the task count at which each ends, for the
  // back-pressure accounting.
  std::deque<std::uint64_t> frame_bytes_;
  std::deque<std::uint64_t> frame_ends_;
  std::uint64_t done_ = 0;
  std::atomic<std::uint64_t> queued_bytes_{0};
  bool closed_ = false;
};

// ---- SessionConnection: the `/session` websocket of one Burn session. ----------------------
class SessionConnection : public std::enable_shared_from_this<SessionConnection> {
 public:
  SessionConnection(Host::Impl& host, tcp::socket&& socket, ConnectionSlot slot,
                    bool header_authorized)
      : host_(host),
        ws_(std::move(socket)),
        init_timer_(ws_.get_executor()),
        slot_(std::move(slot)),
        peer_(peer_of(beast::get_lowest_layer(ws_).socket())),
        header_authorized_(header_authorized) {}

  void run(http::request<http::string_body> req) {
    ws_.set_option(websocket::stream_base::timeout{
        std::chrono::seconds(30), std::chrono::seconds(60), true});  // handshake, idle, pings
    ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
      res.set(http::field::server, fmt::format("torchbridge/{}", kVersion));
    }));
    ws_.read_message_max(
        std::min(host_.options.limits.max_init_bytes, host_.options.limits.max_message_bytes));
    ws_.binary(true);
    ws_.auto_fragment(false);
    beast::get_lowest_layer(ws_).expires_never();
    ws_.async_accept(req,
                     beast::bind_front_handler(&SessionConnection::on_accept, shared_from_this()));
    init_timer_.expires_after(host_.options.init_timeout);
    init_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->state_ != State::kHandshake) return;
      ++self->host_.sessions_refused;
      spdlog::warn("{}: no Init within {} ms, closing", self->peer_,
                   self->host_.options.init_timeout.count());
      if (!self->accepted_) return self->close_now();
      self->close_with(websocket::close_code::policy_error, "no Init in time");
    });
  }

  // From any thread: queue one encoded response frame.
  void send(FrameBytes frame) {
    net::post(ws_.get_executor(),
              [self = shared_from_this(), frame = std::move(frame)] { self->queue_write(frame); });
  }
  // From the worker thread: the queue drained below the limit.
  void resume() {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      if (self->paused_ && self->state_ == State::kRunning) {
        self->paused_ = false;
        self->read();
      }
    });
  }
  // From the worker thread: everything ran and was freed; close once the replies are out.
  void worker_done() {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      self->worker_finished_ = true;
      self->maybe_close();
    });
  }
  // From Host::stop().
  // `done` runs once the socket is closed (on this connection's executor).
  void shutdown(std::function<void()> done = {}) {
    net::post(ws_.get_executor(), [self = shared_from_this(), done = std::move(done)] {
      beast::error_code ec;
      beast::get_lowest_layer(self->ws_).socket().shutdown(tcp::socket::shutdown_both, ec);
      beast::get_lowest_layer(self->ws_).close();
      if (done) done();
    });
  }
  ~SessionConnection() { teardown(); }

 private:
  enum class State { kHandshake, kRunning, kClosing, kClosed };

  void on_accept(beast::error_code ec) {
    if (ec) {
      spdlog::debug("{}: websocket accept failed: {}", peer_, ec.message());
      init_timer_.cancel();
      return;
    }
    accepted_ = true;
    read();
  }

  void read() {
    message_ = std::make_shared<MessageBytes>();
    message_buffer_.emplace(*message_, ws_.read_message_max());
    ws_.async_read(*message_buffer_,
                   beast::bind_front_handler(&SessionConnection::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec) {
      if (ec != websocket::error::closed && ec != net::error::operation_aborted &&
          ec != net::error::eof) {
        spdlog::info("session {:016x} ({}): connection ended: {}", session_id_, peer_,
                     ec.message());
      }
      teardown();
      return;
    }
    message_buffer_.reset();
    std::shared_ptr<const MessageBytes> frame = std::move(message_);
    host_.bytes_in += frame->size();
    ir::Bytes bytes(frame, frame->data(), frame->size());
    if (state_ == State::kHandshake) {
      handshake(bytes);
    } else if (state_ == State::kRunning) {
      dispatch(bytes);
    }
  }

  void refuse(ir::SessionRefusal refusal, const std::string& reason) {
    ++host_.sessions_refused;
    spdlog::warn("{}: session refused ({}): {}", peer_, ir::to_string(refusal), reason);
    queue_write(std::make_shared<std::vector<std::uint8_t>>(
        ir::encode(ir::TaskResponse{ir::InitRefusedResponse{refusal}, 0})));
    state_ = State::kClosing;
    worker_finished_ = true;
    maybe_close();
  }

  void handshake(const ir::Bytes& bytes) {
    const std::uint16_t version = ir::kProtocolVersion;
    auto frame = ir::decode<ir::ClientFrame>(bytes);
    if (!frame) {
      return refuse({ir::RefusalKind::IncompatibleProtocol, version},
                    "unreadable handshake: " + frame.error().what());
    }
    if (frame.value().size() != 1 || !std::holds_alternative<ir::SessionInit>(frame.value()[0])) {
      return refuse({ir::RefusalKind::IncompatibleProtocol, version},
                    "the first frame must hold exactly one Init");
    }
    const auto& init = std::get<ir::SessionInit>(frame.value()[0]);
    if (init.version != version) {
      return refuse({ir::RefusalKind::IncompatibleProtocol, version},
                    fmt::format("client speaks protocol {}, this host {} (Burn {})", init.version,
                                version, kBurnVersion));
    }
    if (host_.options.auth_token && !header_authorized_ &&
        !constant_time_equal(init.authorization.view(), *host_.options.auth_token)) {
      return refuse({ir::RefusalKind::Unauthorized, 0},
                    "the handshake's authorization does not match the host's token");
    }
    const auto device_count = static_cast<std::uint32_t>(host_.devices.size());
    if (init.device_index >= device_count) {
      return refuse({ir::RefusalKind::NoSuchDevice, device_count},
                    fmt::format("device {} asked, {} hosted", init.device_index, device_count));
    }
    {
      std::lock_guard lock(host_.sessions_mutex);
      // Burn's refusals have no "busy" or "taken": these end with a websocket close whose reason
      // says why.
      if (host_.stopping) return close_with(websocket::close_code::going_away, "host stopping");
      if (host_.sessions.size() >= host_.options.limits.max_sessions) {
        ++host_.sessions_refused;
        spdlog::warn("{}: session refused: {} sessions open, the limit", peer_,
                     host_.sessions.size());
        return close_with(websocket::close_code::try_again_later, "too many sessions");
      }
      if (host_.sessions.count(init.session_id.id)) {
        ++host_.sessions_refused;
        spdlog::warn("{}: session {:016x} is already bound to another connection", peer_,
                     init.session_id.id);
        return close_with(websocket::close_code::policy_error, "session id in use");
      }
      session_id_ = init.session_id.id;
      host_.sessions[session_id_] = weak_from_this();
      worker_ =
          std::make_shared<SessionWorker>(host_, session_id_, init.device_index, weak_from_this());
      host_.workers[session_id_] = worker_;
    }
    ++host_.sessions_total;
    init_timer_.cancel();
    ws_.read_message_max(host_.options.limits.max_message_bytes);
    worker_->start();
    ir::SessionInfo info{version, host_.devices[init.device_index]->settings(), device_count,
                         std::nullopt};
    queue_write(std::make_shared<std::vector<std::uint8_t>>(
        ir::encode(ir::TaskResponse{ir::InitResponse{info}, 0})));
    state_ = State::kRunning;
    spdlog::info("session {:016x} opened from {} on device {} ({})", session_id_, peer_,
                 init.device_index, host_.devices[init.device_index]->device_name());
    read();
  }

  void dispatch(const ir::Bytes& bytes) {
    auto frame = ir::decode<ir::ClientFrame>(bytes);
    if (!frame) {
      ++host_.frames_rejected;
      spdlog::warn("session {:016x} ({}): undecodable frame of {} bytes, closing the session: {}",
                   session_id_, peer_, bytes.size(), frame.error().what());
      return close_with(websocket::close_code::policy_error, "undecodable frame");
    }
    std::vector<ir::Task> tasks;
    tasks.reserve(frame.value().size());
    bool close_requested = false;
    for (auto& message : frame.value()) {
      if (auto* task = std::get_if<ir::Task>(&message)) {
        tasks.push_back(std::move(*task));
      } else if (auto* id = std::get_if<ir::SessionId>(&message)) {
        if (id->id != session_id_) {
          ++host_.frames_rejected;
          spdlog::warn("session {:016x}: asked to close session {:016x}", session_id_, id->id);
          return close_with(websocket::close_code::policy_error, "closing another session");
        }
        close_requested = true;
        break;
      } else {
        ++host_.frames_rejected;
        spdlog::warn("session {:016x}: a second Init on an open session", session_id_);
        return close_with(websocket::close_code::policy_error, "second Init");
      }
    }
    host_.tasks += tasks.size();
    worker_->push(std::move(tasks), bytes.size());
    if (close_requested) {
      state_ = State::kClosing;
      worker_->close();
      return;
    }
    if (worker_->queued_bytes() > host_.options.limits.max_queued_bytes) {
      paused_ = true;
      worker_->paused = true;
      return;  // resume() reads again
    }
    read();
  }

  void queue_write(FrameBytes frame) {
    if (state_ == State::kClosed) return;
    writes_.push_back(std::move(frame));
    if (!writing_) write();
  }

  void write() {
    writing_ = true;
    ws_.async_write(net::buffer(*writes_.front()),
                    beast::bind_front_handler(&SessionConnection::on_write, shared_from_this()));
  }

  void on_write(beast::error_code ec, std::size_t n) {
    writing_ = false;
    host_.bytes_out += n;
    if (ec) {
      writes_.clear();
      teardown();
      return;
    }
    writes_.pop_front();
    if (!writes_.empty()) return write();
    maybe_close();
  }

  void maybe_close() {
    if (state_ != State::kClosing || !worker_finished_ || writing_ || !writes_.empty()) return;
    close_with(websocket::close_code::normal, "");
  }

  void close_with(websocket::close_code code, const char* reason) {
    if (state_ == State::kClosed) return;
    if (worker_) worker_->close();
    state_ = State::kClosed;
    ws_.async_close(websocket::close_reason(code, reason),
                    [self = shared_from_this()](beast::error_code) { self->teardown(); });
  }

  void close_now() {
    state_ = State::kClosed;
    beast::error_code ec;
    beast::get_lowest_layer(ws_).socket().close(ec);
  }

  // The connection is gone: the worker runs what it has, frees the session's tensors and exits.
  void teardown() {
    if (torn_down_) return;
    torn_down_ = true;
    init_timer_.cancel();
    if (worker_) worker_->close();
    if (session_id_) {
      std::lock_guard lock(host_.sessions_mutex);
      const auto it = host_.sessions.find(session_id_);
      if (it != host_.sessions.end() && it->second.lock().get() == this) host_.sessions.erase(it);
    }
  }

  Host::Impl& host_;
  websocket::stream<beast::tcp_stream> ws_;
  net::steady_timer init_timer_;
  ConnectionSlot slot_;
  std::string peer_;
  bool header_authorized_;
  bool accepted_ = false;
  std::shared_ptr<MessageBytes> message_;
  std::optional<net::dynamic_vector_buffer<std::uint8_t, UninitializedAllocator<std::uint8_t>>>
      message_buffer_;
  std::deque<FrameBytes> writes_;
  bool writing_ = false;
  bool paused_ = false;
  bool worker_finished_ = false;
  bool torn_down_ = false;
  State state_ = State::kHandshake;
  std::uint64_t session_id_ = 0;
  std::shared_ptr<SessionWorker> worker_;
};

void SessionWorker::start() {
  std::thread([self = shared_from_this()] { self->loop(); }).detach();
}

void SessionWorker::loop() {
  {
    auto connection = connection_;
    TaskRunner runner(
        session_id_, device_index_, host_.devices[device_index_]->new_executor(), host_.services(),
        [connection](ir::TaskResponse response) {
          if (auto c = connection.lock()) {
            c->send(std::make_shared<std::vector<std::uint8_t>>(ir::encode(response)));
          }
        });
    while (true) {
      ir::Task task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) break;
        task = std::move(queue_.front());
        queue_.pop_front();
        ++done_;
        while (!frame_ends_.empty() && frame_ends_.front() <= done_) {
          queued_bytes_ -= frame_bytes_.front();
          frame_bytes_.pop_front();
          frame_ends_.pop_front();
        }
      }
      runner.run(task);
      const auto stats = runner.executor().stats();
      live_tensors = stats.live_tensors;
      live_bytes = stats.live_bytes;
      failed_ops = stats.failed_ops;
      if (paused && queued_bytes_ < host_.options.limits.max_queued_bytes / 2) {
        paused = false;
        if (auto c = connection_.lock()) c->resume();
      }
    }
    // The runner (and with it every tensor of the session) is destroyed here.
  }
  live_tensors = 0;
  live_bytes = 0;
  spdlog::info("session {:016x} closed; its tensors are freed", session_id_);
  if (auto c = connection_.lock()) c->worker_done();
  std::lock_guard lock(host_.sessions_mutex);
  host_.workers.erase(session_id_);
  host_.workers_done.notify_all();
}

// ---- DataConnection: another host downloads exposed tensors over `/data`. --------------------
class DataConnection : public std::enable_shared_from_this<DataConnection> {
 public:
  DataConnection(Host::Impl& host, tcp::socket&& socket, ConnectionSlot slot)
      : host_(host), ws_(std::move(socket)), timer_(ws_.get_executor()), slot_(std::move(slot)) {}

  void run(http::request<http::string_body> req) {
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(64 * 1024);
    ws_.binary(true);
    beast::get_lowest_layer(ws_).expires_never();
    ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->read();
    });
  }

 private:
  void read() {
    buffer_.clear();
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return;
      self->on_request();
    });
  }

  void on_request() {
    const auto& d = buffer_.data();
    auto message = ir::decode<ir::DataMessage>(ir::Bytes::copy_of(d.data(), d.size()));
    if (!message || !std::holds_alternative<ir::TensorRequestMessage>(message.value())) {
      spdlog::warn("/data: expected a TensorRequest: {}",
                   message ? "got a Tensor" : message.error().what());
      return close(websocket::close_code::policy_error, "expected TensorRequest");
    }
    const std::uint64_t key = std::get<ir::TensorRequestMessage>(message.value()).transfer_id;
    auto self = shared_from_this();
    const std::uint64_t ticket = host_.data.when_exposed(key, [self](DataStore::Payload p) {
      net::post(self->ws_.get_executor(), [self, p = std::move(p)]() mutable {
        self->timer_.cancel();
        self->respond(std::move(p));
      });
    });
    timer_.expires_after(host_.options.transfer_timeout);
    timer_.async_wait([self, ticket, key](beast::error_code ec) {
      if (ec) return;
      self->host_.data.cancel(
          ticket, make_error(ErrorCode::kTimeout, "transfer {:#x} was not exposed in time", key));
    });
  }

  void respond(DataStore::Payload payload) {
    if (!payload) {
      spdlog::warn("/data: {}", payload.error().what());
      // The downloading host reports the reason (a close reason holds at most 123 bytes).
      return close(websocket::close_code::internal_error, payload.error().what().substr(0, 123));
    }
    frame_ = std::move(payload).value();
    ws_.async_write(net::buffer(*frame_),
                    [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                      self->host_.bytes_out += n;
                      self->frame_.reset();
                      if (!ec) self->read();
                    });
  }

  void close(websocket::close_code code, std::string_view reason) {
    ws_.async_close(websocket::close_reason(code, reason),
                    [self = shared_from_this()](beast::error_code) {});
  }

  Host::Impl& host_;
  websocket::stream<beast::tcp_stream> ws_;
  net::steady_timer timer_;
  ConnectionSlot slot_;
  beast::flat_buffer buffer_;
  FrameBytes frame_;
};

// ---- HttpConnection: routes an incoming request. ---------------------------------------------
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(Host::Impl& host, tcp::socket&& socket, ConnectionSlot slot)
      : host_(host), stream_(std::move(socket)), slot_(std::move(slot)) {}

  void run() {
    parser_.emplace();
    parser_->body_limit(4096);
    stream_.expires_after(std::chrono::seconds(30));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (!ec) self->route();
                     });
  }

 private:
  void route() {
    auto req = parser_->release();
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    if (websocket::is_upgrade(req)) {
      if (path == "/session") {
        bool header_ok = false;
        if (host_.options.auth_token) {
          const auto auth = req[http::field::authorization];
          header_ok = constant_time_equal(auth, "Bearer " + *host_.options.auth_token);
        }
        std::make_shared<SessionConnection>(host_, stream_.release_socket(), std::move(slot_),
                                            header_ok)
            ->run(std::move(req));
        return;
      }
      if (path == "/data") {
        std::make_shared<DataConnection>(host_, stream_.release_socket(), std::move(slot_))
            ->run(std::move(req));
        return;
      }
    }
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(req.version());
    res->set(http::field::server, fmt::format("torchbridge/{}", kVersion));
    res->keep_alive(false);
    if (req.method() == http::verb::get && path == "/healthz") {
      res->result(http::status::ok);
      res->set(http::field::content_type, "text/plain");
      res->body() = "ok\n";
    } else if (req.method() == http::verb::get && path == "/metrics") {
      res->result(http::status::ok);
      res->set(http::field::content_type, "text/plain; version=0.0.4");
      res->body() = host_.owner->metrics_text();
    } else {
      res->result(http::status::not_found);
      res->set(http::field::content_type, "text/plain");
      res->body() = "torchbridge serves websocket /session and /data, GET /healthz, GET /metrics\n";
    }
    res->prepare_payload();
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code, std::size_t) {
                        beast::error_code ec;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
                      });
  }

  Host::Impl& host_;
  beast::tcp_stream stream_;
  ConnectionSlot slot_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

void Host::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec != net::error::operation_aborted && !stopping)
        spdlog::warn("accept: {}", ec.message());
      if (!acceptor.is_open()) return;
    } else {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      socket.set_option(net::socket_base::keep_alive(true), ignored);
      // Only this handler adds connections (one accept at a time), so the check cannot race
      // another increment.
      if (connections_open.load() >= options.limits.max_connections) {
        const auto n = ++connections_refused;
        // Logged at 1, 2, 4, 8, …: a flood of refusals must not become a flood of log lines.
        if ((n & (n - 1)) == 0) {
          spdlog::warn("{}: connection refused: {} connections open, the limit ({} refused so far)",
                       peer_of(socket), options.limits.max_connections, n);
        }
        socket.close(ignored);
      } else {
        std::make_shared<HttpConnection>(*this, std::move(socket), ConnectionSlot(connections_open))
            ->run();
      }
    }
    accept();
  });
}

// ---- Host ------------------------------------------------------------------------------------
Host::Host(HostOptions options, std::vector<std::shared_ptr<backend::Backend>> devices)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->devices = std::move(devices);
  impl_->owner = this;
}

Host::~Host() {
  stop();
}

Status Host::start() {
  auto& im = *impl_;
  if (im.devices.empty()) return make_error(ErrorCode::kInvalidArgument, "no device to serve");
  beast::error_code ec;
  const auto address = net::ip::make_address(im.options.host, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "invalid listen address \"{}\": {}",
                      im.options.host, ec.message());
  }
  const tcp::endpoint endpoint(address, im.options.port);
  im.acceptor.open(endpoint.protocol(), ec);
  if (!ec) im.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) im.acceptor.bind(endpoint, ec);
  if (!ec) im.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return make_error(ErrorCode::kIo, "cannot listen on {}:{}: {}", im.options.host,
                      im.options.port, ec.message());
  }
  if (!address.is_loopback() && !im.options.auth_token) {
    spdlog::warn(
        "listening on {} without an auth token (--auth-token-file): anyone who reaches this "
        "port can run code on these devices and read every tensor sent to them",
        im.options.host);
  }
  im.work.emplace(im.ioc.get_executor());
  im.accept();
  const int n = std::max(1, im.options.io_threads);
  for (int i = 0; i < n; ++i) im.threads.emplace_back([&im] { im.ioc.run(); });
  return ok();
}

std::uint16_t Host::port() const {
  beast::error_code ec;
  const auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void Host::stop() {
  auto& im = *impl_;
  if (im.threads.empty() || im.stopping.exchange(true)) return;
  net::post(im.ioc, [&im] {
    beast::error_code ec;
    im.acceptor.close(ec);
  });
  // Wake the sessions blocked on the other side of a transfer or an all-reduce: that side may
  // never come now.
  im.local.shutdown();
  im.collectives.shutdown();
  // The sockets must be closed before the io_context stops, or a client would wait on a
  // connection nobody serves any more.
  struct Countdown {
    std::mutex mutex;
    std::condition_variable cv;
    int left = 0;
  };
  auto closing = std::make_shared<Countdown>();
  {
    std::unique_lock lock(im.sessions_mutex);
    for (auto& [id, weak] : im.sessions) {
      if (auto c = weak.lock()) {
        {
          std::lock_guard count(closing->mutex);
          ++closing->left;
        }
        c->shutdown([closing] {
          std::lock_guard count(closing->mutex);
          if (--closing->left == 0) closing->cv.notify_all();
        });
      }
    }
    for (auto& [id, worker] : im.workers) worker->close(/*drop_queued=*/true);
    // Workers reference this host: it cannot go away while one runs (an op in progress is not
    // interruptible, so this waits for it).
    while (!im.workers_done.wait_for(lock, std::chrono::seconds(10),
                                     [&] { return im.workers.empty(); })) {
      spdlog::warn("stopping: waiting for {} session(s) to finish their current op",
                   im.workers.size());
    }
  }
  {
    std::unique_lock lock(closing->mutex);
    closing->cv.wait_for(lock, std::chrono::seconds(5), [&] { return closing->left == 0; });
  }
  im.work.reset();
  im.ioc.stop();
  for (auto& t : im.threads) t.join();
  im.threads.clear();
  im.data.drop_waiters();
}

HostMetrics Host::metrics() const {
  auto& im = *impl_;
  HostMetrics m;
  {
    std::lock_guard lock(im.sessions_mutex);
    m.sessions_open = im.workers.size();
    for (const auto& [id, w] : im.workers) {
      m.live_tensors += w->live_tensors;
      m.live_bytes += w->live_bytes;
      m.failed_ops += w->failed_ops;
    }
  }
  m.sessions_total = im.sessions_total;
  m.sessions_refused = im.sessions_refused;
  m.connections_open = im.connections_open;
  m.connections_refused = im.connections_refused;
  m.tasks = im.tasks;
  m.frames_rejected = im.frames_rejected;
  m.bytes_in = im.bytes_in;
  m.bytes_out = im.bytes_out;
  std::array<std::uint64_t, kCategories> by_category{};
  for (std::size_t k = 0; k < ir::kOpKindCount; ++k) {
    const auto kind = static_cast<ir::OpKind>(k);
    const std::uint64_t n = im.ops_by_kind[k].load();
    by_category[static_cast<std::size_t>(ir::op_category(kind))] += n;
    m.ops_by_kind.emplace_back(std::string(ir::op_name(kind)), n);
  }
  for (std::size_t c = 0; c < kCategories; ++c) {
    m.ops_by_category.emplace_back(std::string(ir::EnumNames<ir::OpCategory>::kNames[c]),
                                   by_category[c]);
  }
  return m;
}

std::string Host::metrics_text() const {
  const HostMetrics m = metrics();
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, std::uint64_t v) {
    out +=
        fmt::format("# HELP torchbridge_{0} {1}\n# TYPE torchbridge_{0} {2}\ntorchbridge_{0} {3}\n",
                    name, help, type, v);
  };
  metric("sessions_open", "gauge", "Sessions currently open.", m.sessions_open);
  metric("sessions_total", "counter", "Sessions opened since start.", m.sessions_total);
  metric("sessions_refused_total", "counter", "Handshakes refused.", m.sessions_refused);
  metric("connections_open", "gauge", "Connections open (HTTP, /session, /data).",
         m.connections_open);
  metric("connections_refused_total", "counter", "Connections closed at once: over the limit.",
         m.connections_refused);
  metric("live_tensors", "gauge", "Tensors held by all sessions.", m.live_tensors);
  metric("live_bytes", "gauge", "Bytes of tensors held by all sessions.", m.live_bytes);
  metric("tasks_total", "counter", "Tasks received.", m.tasks);
  metric("failed_ops", "gauge", "Failed operations in open sessions.", m.failed_ops);
  metric("frames_rejected_total", "counter", "Undecodable or invalid frames.", m.frames_rejected);
  metric("bytes_in_total", "counter", "Websocket payload bytes received.", m.bytes_in);
  metric("bytes_out_total", "counter", "Websocket payload bytes sent.", m.bytes_out);
  out +=
      "# HELP torchbridge_ops_total Operations executed, by OperationIr category.\n"
      "# TYPE torchbridge_ops_total counter\n";
  for (const auto& [category, n] : m.ops_by_category) {
    out += fmt::format("torchbridge_ops_total{{category=\"{}\"}} {}\n", category, n);
  }
  return out;
}

// ---- download_tensor: the client side of `/data`. --------------------------------------------
Result<ir::TensorData> download_tensor(const ir::Address& peer, std::uint64_t key,
                                       std::chrono::milliseconds timeout,
                                       std::uint64_t max_message_bytes,
                                       const std::atomic<bool>* cancel) {
  if (peer.scheme != "ws") {
    return make_error(ErrorCode::kUnsupported, "cannot download from {}://: only ws is spoken",
                      peer.scheme);
  }
  std::string host = peer.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const std::string port = std::to_string(peer.port.value_or(80));
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  websocket::stream<beast::tcp_stream> ws(ioc);
  beast::flat_buffer buffer;
  beast::error_code failure;
  const char* stage = "resolving";
  std::vector<std::uint8_t> request = ir::encode(ir::DataMessage{ir::TensorRequestMessage{key}});
  ws.read_message_max(max_message_bytes);
  ws.binary(true);
  beast::get_lowest_layer(ws).expires_after(timeout);

  resolver.async_resolve(
      host, port, [&](beast::error_code ec, tcp::resolver::results_type results) {
        if (ec) return void(failure = ec);
        stage = "connecting";
        beast::get_lowest_layer(ws).async_connect(
            results, [&](beast::error_code ec, const tcp::endpoint&) {
              if (ec) return void(failure = ec);
              stage = "opening /data";
              ws.async_handshake(peer.host + ":" + port, "/data", [&](beast::error_code ec) {
                if (ec) return void(failure = ec);
                stage = "requesting";
                ws.async_write(net::buffer(request), [&](beast::error_code ec, std::size_t) {
                  if (ec) return void(failure = ec);
                  stage = "waiting for the tensor";
                  ws.async_read(buffer, [&](beast::error_code ec, std::size_t) {
                    if (ec) return void(failure = ec);
                    stage = "done";
                    // A closing handshake, not a bare reset: Burn's /data server panics on a
                    // peer that drops the socket without one. Its answer is not waited for long.
                    beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(1));
                    ws.async_close(websocket::close_code::normal, [](beast::error_code) {});
                  });
                });
              });
            });
      });
  bool cancelled = false;
  while (!ioc.stopped()) {
    ioc.run_for(std::chrono::milliseconds(50));
    if (!cancelled && cancel && cancel->load()) {
      cancelled = true;
      resolver.cancel();
      beast::get_lowest_layer(ws).close();  // pending operations complete with an error
    }
  }
  if (cancelled && std::string_view(stage) != "done") {
    return make_error(ErrorCode::kIo, "downloading transfer {:#x} from {}:{}: the host is stopping",
                      key, host, port);
  }
  if (failure || std::string_view(stage) != "done") {
    std::string why = failure == beast::error::timeout
                          ? fmt::format("timed out after {} ms", timeout.count())
                          : failure.message();
    if (failure == websocket::error::closed && !ws.reason().reason.empty()) {
      why = fmt::format("the peer closed /data: {}", std::string_view(ws.reason().reason));
    }
    return make_error(ErrorCode::kIo, "downloading transfer {:#x} from {}:{}: {} while {}", key,
                      host, port, why, stage);
  }
  beast::error_code ignored;
  beast::get_lowest_layer(ws).socket().close(ignored);
  const auto& d = buffer.data();
  TB_TRY_ASSIGN(auto message, ir::decode<ir::DataMessage>(ir::Bytes::copy_of(d.data(), d.size())));
  if (!std::holds_alternative<ir::TensorMessage>(message)) {
    return make_error(ErrorCode::kDecode, "the peer answered a TensorRequest with a request");
  }
  return std::move(std::get<ir::TensorMessage>(message).data);
}

}  // namespace tb::bridge
