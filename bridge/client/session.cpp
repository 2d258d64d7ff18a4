#include "session.hpp"

#include "session_io.hpp"

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

std::size_t payload_bytes(const ir::RemoteMessage& m) {
  if (const auto* t = std::get_if<ir::Task>(&m)) {
    if (const auto* r = std::get_if<ir::RegisterTensorTask>(t)) return r->data.bytes.size();
  }
  return 0;
}

}  // namespace

const std::shared_ptr<ir::BlockCache>& message_blocks() {
  static const auto blocks = std::make_shared<ir::BlockCache>(ir::BlockCache::default_limit());
  return blocks;
}


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
