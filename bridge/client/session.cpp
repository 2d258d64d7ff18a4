#include "session.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "net/any_stream.hpp"
#include "net/io_loop.hpp"
#include "net/message_buffer.hpp"
#include "net/secure_random.hpp"
#include "net/tls.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::client {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace detail {

ir::TensorId new_tensor_id() {
  static std::atomic<std::uint64_t> next{0};
  return ir::TensorId{next.fetch_add(1)};
}

ir::StreamId current_stream() {
  static std::atomic<std::uint64_t> next{0};
  thread_local const std::uint64_t stream = next.fetch_add(1);
  return ir::StreamId{stream};
}

namespace {

// Payloads from this size on are sent from the task's own bytes, not copied into the frame.
constexpr std::size_t kBorrowPayloadsFrom = 64 * 1024;
constexpr std::size_t kWriteBufferBytes = 256 * 1024;

std::size_t payload_bytes(const ir::RemoteMessage& m) {
  if (const auto* t = std::get_if<ir::Task>(&m)) {
    if (const auto* r = std::get_if<ir::RegisterTensorTask>(t)) return r->data.bytes.size();
  }
  return 0;
}

// Runs one asynchronous operation on an io_context nobody else runs yet, bounded in time.
template <class Stream, class Op>
beast::error_code run_bounded(net::io_context& ioc, Stream& stream,
                              std::chrono::milliseconds timeout, Op op) {
  beast::error_code result = net::error::would_block;
  beast::get_lowest_layer(stream).expires_after(timeout);
  op([&result](beast::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

}  // namespace

const std::shared_ptr<ir::BlockCache>& message_blocks() {
  static const auto blocks = std::make_shared<ir::BlockCache>(ir::BlockCache::default_limit());
  return blocks;
}

struct Session::Io {
  explicit Io(std::shared_ptr<net::ssl::context> context)
      : tls(std::move(context)),
        ws(tls ? tb::net::AnyStream(beast::tcp_stream(ioc), *tls)
               : tb::net::AnyStream(beast::tcp_stream(ioc))) {}
  net::io_context ioc;
  std::shared_ptr<net::ssl::context> tls;  // set for wss://; outlives the stream
  websocket::stream<tb::net::AnyStream> ws;
  beast::flat_buffer read_buffer;  // the answer to Init
  // Every later answer: read in place and handed to the decoder whole, so a download's payload is
  // decoded as a view of the received message, never copied.
  std::unique_ptr<tb::net::MessageBuffer> message;  // bounded by max_message_bytes
  // IO-thread only. Each frame's large payloads (uploads) are views of the tasks' own bytes.
  std::deque<std::shared_ptr<const std::vector<ir::Bytes>>> queue;
  bool writing = false;
  bool close_requested = false;
  bool close_started = false;
  std::thread thread;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> guard;
  // Each second, the client's warm message blocks left idle go back to the system. Best
  // effort: the cache is bounded without it, so a failed tick is dropped.
  net::steady_timer sweeper{ioc};
  void sweep() {
    tb::net::every(
        sweeper, std::chrono::seconds(1),
        [] { message_blocks()->expire(std::chrono::steady_clock::now()); },
        [](const std::string&) {});
  }
  // Set once the connection is over (closed by us, by the host, or failed).
  std::promise<void> ended;
  std::atomic<bool> ended_set{false};
};

Session::Session(std::string address, Address peer, std::uint32_t index, SessionOptions options,
                 std::shared_ptr<net::ssl::context> tls)
    : address_(std::move(address)),
      peer_(std::move(peer)),
      index_(index),
      options_(std::move(options)),
      io_(std::make_unique<Io>(std::move(tls))) {
  if (options_.flush_threshold == 0) options_.flush_threshold = 1;
}

Result<std::shared_ptr<Session>> Session::connect(std::string_view address, std::uint32_t index,
                                                  SessionOptions options) {
  TB_TRY_ASSIGN(auto peer, parse_address(address));
  auto display = format_address(peer);
  std::shared_ptr<net::ssl::context> tls;
  if (peer.scheme == "wss") {
    auto context = tb::net::client_context(options.tls_ca_file);
    if (!context) return with_context(context.error(), display);
    tls = std::move(context).value();
  } else if (!options.credential.empty() && !tb::net::is_loopback(peer.host) &&
             options.on_warning) {
    options.on_warning(fmt::format(
        "{}: the credential goes over plain ws:// to another machine, readable by anyone on the "
        "way; connect with wss:// to a host serving TLS",
        display));
  }
  std::shared_ptr<Session> session(
      new Session(display, std::move(peer), index, std::move(options), std::move(tls)));
  TB_TRY(session->open());
  return session;
}

Status Session::open() {
  auto& io = *io_;
  const auto where = describe();
  const auto timeout = options_.connect_timeout;
  const bool secure = io.ws.next_layer().is_tls();
  const std::string port = peer_.port ? std::to_string(*peer_.port) : secure ? "443" : "80";
  const std::string host(tb::net::unbracketed(peer_.host));

  // Host names here are loopback or numeric in practice; the resolver answers at once for those.
  tcp::resolver resolver(io.ioc);
  beast::error_code resolve_ec;
  const auto endpoints = resolver.resolve(host, port, resolve_ec);
  if (resolve_ec) {
    return make_error(ErrorCode::kIo, "{}: cannot resolve the host: {}", where,
                      resolve_ec.message());
  }
  auto ec = run_bounded(io.ioc, io.ws, timeout, [&](auto done) {
    io.ws.next_layer().lowest().async_connect(endpoints, done);
  });
  if (ec) return make_error(ErrorCode::kIo, "{}: cannot connect: {}", where, ec.message());
  beast::get_lowest_layer(io.ws).socket().set_option(tcp::no_delay(true), ec);
  if (secure) {
    TB_TRY(tb::net::prepare_client(io.ws.next_layer().tls(), host));
    ec = run_bounded(io.ioc, io.ws, timeout, [&](auto done) {
      io.ws.next_layer().tls().async_handshake(net::ssl::stream_base::client, done);
    });
    if (ec) {
      return make_error(ErrorCode::kIo, "{}: TLS handshake failed: {}", where, ec.message());
    }
  }

  const std::string host_header =
      peer_.port ? fmt::format("{}:{}", peer_.host, *peer_.port) : peer_.host;
  ec = run_bounded(io.ioc, io.ws, timeout,
                   [&](auto done) { io.ws.async_handshake(host_header, "/session", done); });
  if (ec) {
    return make_error(ErrorCode::kIo, "{}: websocket upgrade on /session failed: {}", where,
                      ec.message());
  }
  io.ws.binary(true);
  // Burn's client writes each message as one frame and accepts messages of any size.
  io.ws.auto_fragment(false);
  io.ws.read_message_max(0);
  // A client masks every byte it sends into this buffer, then writes it: Beast's default of 4 KiB
  // made an upload one system call per 4 KiB.
  io.ws.write_buffer_bytes(kWriteBufferBytes);

  // The handshake: one frame holding exactly one Init, answered first with id 0.
  session_id_ = options_.session_id ? *options_.session_id : tb::net::secure_random_u64();
  const std::vector<std::uint8_t> credential(options_.credential.begin(),
                                             options_.credential.end());
  const ir::ClientFrame init{
      ir::SessionInit{ir::kProtocolVersion, ir::SessionId{session_id_}, index_,
                      ir::Bytes::copy_of(credential.data(), credential.size())}};
  const auto init_bytes = ir::encode(init);
  ec = run_bounded(io.ioc, io.ws, timeout,
                   [&](auto done) { io.ws.async_write(net::buffer(init_bytes), done); });
  if (ec) return make_error(ErrorCode::kIo, "{}: sending Init failed: {}", where, ec.message());
  ec = run_bounded(io.ioc, io.ws, timeout,
                   [&](auto done) { io.ws.async_read(io.read_buffer, done); });
  if (ec == beast::error::timeout) {
    return make_error(ErrorCode::kTimeout, "{}: no answer to Init within {} ms", where,
                      timeout.count());
  }
  if (ec) {
    return make_error(ErrorCode::kIo, "{}: the host closed the session before answering Init ({})",
                      where, ec.message());
  }
  const auto d = io.read_buffer.data();
  auto reply = ir::decode<ir::TaskResponse>(ir::Bytes::copy_of(d.data(), d.size()));
  io.read_buffer.consume(io.read_buffer.size());
  if (!reply) {
    return with_context(reply.error(), fmt::format("{}: the answer to Init", where));
  }
  if (const auto* refused = std::get_if<ir::InitRefusedResponse>(&reply.value().content)) {
    switch (refused->refusal.kind) {
      case ir::RefusalKind::Unauthorized:
        return make_error(ErrorCode::kUnauthorized, "{}: the host refused the credential", where);
      case ir::RefusalKind::NoSuchDevice:
        return make_error(ErrorCode::kNotFound, "{}: the host has {} device(s), no device {}",
                          where, refused->refusal.value, index_);
      case ir::RefusalKind::IncompatibleProtocol:
        return make_error(ErrorCode::kUnsupported,
                          "{}: the host speaks protocol version {}, this client {}", where,
                          refused->refusal.value, ir::kProtocolVersion);
    }
  }
  const auto* init_reply = std::get_if<ir::InitResponse>(&reply.value().content);
  if (!init_reply) {
    return make_error(ErrorCode::kDecode, "{}: expected the Init answer, got {}", where,
                      ir::response_name(reply.value().content));
  }
  if (init_reply->info.version != ir::kProtocolVersion) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: the host speaks protocol version {}, this client {}", where,
                      init_reply->info.version, ir::kProtocolVersion);
  }
  info_ = init_reply->info;

  // From here on the socket idles as long as the program does: no timeouts, no pings (Burn's
  // peers send none either).
  beast::get_lowest_layer(io.ws).expires_never();
  io.ws.set_option(websocket::stream_base::timeout{websocket::stream_base::none(),
                                                   websocket::stream_base::none(), false});

  struct Reader {
    Session* self;
    void operator()(beast::error_code ec) const {
      auto& io = *self->io_;
      if (ec) {
        const bool ours = io.close_started;
        // Ours (the read stops at the bound), or Beast's (a read would pass it).
        if (ec == boost::system::errc::message_size || ec == websocket::error::buffer_overflow) {
          self->fail(Error{ErrorCode::kLimit,
                           fmt::format("an answer is over SessionOptions::max_message_bytes ({} "
                                       "bytes): the session is closed",
                                       self->options_.max_message_bytes),
                           self->describe()});
          return;
        }
        self->fail(ours ? Error{ErrorCode::kIo, "the session was closed", self->describe()}
                        : Error{ErrorCode::kIo,
                                fmt::format("the connection ended: {}", ec.message()),
                                self->describe()});
        return;
      }
      auto reply = ir::decode<ir::TaskResponse>(io.message->release());
      // Like Burn's demux: an undecodable answer or an unknown id is dropped; the caller
      // waiting for it times out.
      if (reply) {
        std::shared_ptr<Pending> pending;
        {
          std::lock_guard lock(self->mutex_);
          auto it = self->pending_.find(reply.value().id);
          if (it != self->pending_.end()) {
            pending = std::move(it->second);
            self->pending_.erase(it);
          }
        }
        if (pending) pending->promise.set_value(std::move(reply.value().content));
      }
      read(self);
    }
    static void read(Session* self) {
      auto& io = *self->io_;
      // Past the bound the message is not read on: its size alone ends the session.
      const std::size_t max = self->options_.max_message_bytes;
      tb::net::async_read_chunked(
          io.ws, *io.message,
          [&io, max] {
            return io.message->size() >= max && !io.ws.is_message_done()
                       ? make_error_code(boost::system::errc::message_size)
                       : beast::error_code();
          },
          Reader{self});
    }
  };
  io.message =
      std::make_unique<tb::net::MessageBuffer>(options_.max_message_bytes, message_blocks());
  io.guard.emplace(io.ioc.get_executor());
  io.ioc.restart();
  Reader::read(this);
  io.sweep();
  // A handler that throws (each handles what it expects; this is the last resort) ends this
  // session with that error, never the program, and the loop runs on so the close completes.
  io.thread = std::thread([this] {
    tb::net::run_guarded(io_->ioc, [this](const std::string& what) noexcept {
      try {
        fail(Error{
            ErrorCode::kInternal,
            fmt::format("the client's network thread: {}", what.empty() ? "an exception" : what),
            describe()});
      } catch (...) {
      }
    });
  });
  return ok();
}

Session::~Session() {
  close();
  auto& io = *io_;
  if (io.thread.joinable()) {
    io.guard.reset();
    io.ioc.stop();
    io.thread.join();
  }
}

std::string Session::describe() const {
  return fmt::format("{} device {}", address_, index_);
}

bool Session::connected() const {
  std::lock_guard lock(mutex_);
  return !failure_ && !closing_;
}

std::optional<Error> Session::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void Session::submit(ir::Task task) {
  std::lock_guard lock(mutex_);
  if (failure_ || closing_) return;
  ir::RemoteMessage message(std::move(task));
  batch_bytes_ += payload_bytes(message);
  batch_.push_back(std::move(message));
  if (batch_.size() >= options_.flush_threshold || batch_bytes_ >= options_.flush_bytes_threshold) {
    flush_locked();
  }
}

void Session::submit_now(ir::Task task) {
  std::lock_guard lock(mutex_);
  if (failure_ || closing_) return;
  batch_.emplace_back(std::move(task));
  flush_locked();
}

Status Session::flush() {
  std::lock_guard lock(mutex_);
  if (failure_) return *failure_;
  if (closing_) return Error{ErrorCode::kIo, "the session was closed", describe()};
  flush_locked();
  return ok();
}

void Session::flush_locked() {
  if (batch_.empty()) return;
  auto frame = std::make_shared<const std::vector<ir::Bytes>>(
      ir::encode_segments(batch_, kBorrowPayloadsFrom));
  batch_.clear();
  batch_bytes_ = 0;
  // Posted under the lock: frames reach the writer in the order their tasks were submitted.
  net::post(io_->ioc, [this, frame = std::move(frame)] {
    auto& io = *io_;
    io.queue.push_back(frame);
    if (io.writing) return;
    struct Writer {
      Session* self;
      void start() const {
        auto& io = *self->io_;
        if (io.queue.empty()) {
          io.writing = false;
          if (io.close_requested && !io.close_started) {
            io.close_started = true;
            io.ws.async_close(websocket::close_code::normal, [](beast::error_code) {});
          }
          return;
        }
        io.writing = true;
        std::vector<net::const_buffer> segments;
        segments.reserve(io.queue.front()->size());
        for (const auto& b : *io.queue.front()) segments.emplace_back(b.data(), b.size());
        io.ws.async_write(segments, *this);
      }
      void operator()(beast::error_code ec, std::size_t) const {
        auto& io = *self->io_;
        io.queue.pop_front();
        if (ec) {
          io.writing = false;
          io.queue.clear();
          self->fail(Error{ErrorCode::kIo, fmt::format("sending a frame failed: {}", ec.message()),
                           self->describe()});
          return;
        }
        start();
      }
    };
    Writer{this}.start();
  });
}

Result<ir::TaskResponseContent> Session::request(const std::function<ir::Task(ir::RequestId)>& make,
                                                 std::optional<std::chrono::milliseconds> timeout) {
  auto pending = std::make_shared<Pending>();
  auto future = pending->promise.get_future();
  ir::RequestId id = 0;
  std::string what;
  {
    std::lock_guard lock(mutex_);
    if (failure_) return *failure_;
    if (closing_) return Error{ErrorCode::kIo, "the session was closed", describe()};
    id = next_request_++;
    pending_.emplace(id, pending);
    ir::Task task = make(id);
    what = std::string(ir::task_name(task));
    batch_.emplace_back(std::move(task));
    flush_locked();
  }
  const auto limit = timeout.value_or(options_.request_timeout);
  if (future.wait_for(limit) != std::future_status::ready) {
    {
      std::lock_guard lock(mutex_);
      pending_.erase(id);
    }
    if (future.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
      return make_error(ErrorCode::kTimeout, "{}: no answer to {} #{} within {} ms", describe(),
                        what, id, limit.count());
    }
  }
  return future.get();
}

void Session::fail(Error error) {
  std::unordered_map<ir::RequestId, std::shared_ptr<Pending>> pending;
  {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = error;
    pending.swap(pending_);
    batch_.clear();
  }
  for (auto& [id, p] : pending) p->promise.set_value(error);
  if (!io_->ended_set.exchange(true)) io_->ended.set_value();
}

void Session::close() {
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    closing_ = true;
    if (!failure_ && io_->thread.joinable()) {
      // Burn's service drop: Close(session id) appended to the last batch, then a close frame.
      batch_.emplace_back(ir::SessionId{session_id_});
      flush_locked();
    }
  }
  auto& io = *io_;
  if (!io.thread.joinable()) return;
  auto ended = io.ended.get_future();
  net::post(io.ioc, [this] {
    auto& io = *io_;
    io.close_requested = true;
    if (!io.writing && !io.close_started) {
      io.close_started = true;
      io.ws.async_close(websocket::close_code::normal, [](beast::error_code) {});
    }
  });
  if (ended.wait_for(options_.close_timeout) != std::future_status::ready) {
    fail(Error{ErrorCode::kTimeout,
               fmt::format("the host did not close within {} ms", options_.close_timeout.count()),
               describe()});
  }
  io.guard.reset();
  io.ioc.stop();
  io.thread.join();
}

}  // namespace detail

}  // namespace tb::client
