// A TCP stream that is plain or TLS, chosen per connection at run time. It is the one transport of
// the host's HTTP, websocket and /data connections and of the clients (ours and the host's own
// downloads), so none of them is a template over its transport and a plain host pays one variant
// dispatch per read or write (Beast's advanced_server_flex doubles every session class instead).
// A model of Asio's AsyncReadStream/AsyncWriteStream, with the customization points Beast's
// websocket stream needs (teardown, close on timeout).
//
// Its asynchronous operations are type-erased (any_stream.cpp): every Beast operation above it
// hands over its handler behind one type (IoHandler), so the TLS and TCP operations below are
// instantiated once in the program instead of once per Beast operation, call site and stream kind.
// That code was 58% of the compile time of a Beast translation unit (data_service.cpp under ASan,
// 262 s against 111 s with the TLS branch left out). The price at run time is one allocation and
// one indirect call per read or write.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <utility>
#include <variant>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

namespace tb::net {

// A completion handler taking Args, behind one type. It keeps the handler's associated executor,
// so the operations below still complete where the operation above expects (its strand, or the
// stream's executor), and frees its storage before the upcall, as Asio requires of handlers'
// memory.
template <class... Args>
class ErasedHandler {
 public:
  using executor_type = boost::asio::any_io_executor;

  template <class Handler>
  ErasedHandler(Handler&& handler, const executor_type& fallback)
      : executor_(boost::asio::get_associated_executor(handler, fallback)),
        impl_(std::make_unique<Impl<std::decay_t<Handler>>>(std::forward<Handler>(handler))) {}

  executor_type get_executor() const noexcept { return executor_; }

  void operator()(Args... args) {
    Base* impl = impl_.get();
    impl->invoke(std::move(impl_), std::move(args)...);
  }

 private:
  struct Base {
    virtual ~Base() = default;
    virtual void invoke(std::unique_ptr<Base> self, Args... args) = 0;
  };
  template <class Handler>
  struct Impl final : Base {
    explicit Impl(Handler&& h) : handler(std::move(h)) {}
    explicit Impl(const Handler& h) : handler(h) {}
    void invoke(std::unique_ptr<Base> self, Args... args) override {
      Handler local(std::move(handler));
      self.reset();
      std::move(local)(std::move(args)...);
    }
    Handler handler;
  };

  executor_type executor_;
  std::unique_ptr<Base> impl_;
};

using IoHandler = ErasedHandler<boost::system::error_code, std::size_t>;
using DoneHandler = ErasedHandler<boost::system::error_code>;

// The first kMaxBuffers buffers of a buffer sequence, as one type. A read_some or write_some may
// transfer less than it was given, so the prefix keeps the operations' meaning; Asio's own
// scatter/gather limit on Linux is the same 64.
template <class Buffer>
class BufferPrefix {
 public:
  static constexpr std::size_t kMaxBuffers = 64;
  using value_type = Buffer;
  using const_iterator = const Buffer*;

  template <class Sequence>
  explicit BufferPrefix(const Sequence& buffers) {
    auto it = boost::asio::buffer_sequence_begin(buffers);
    const auto end = boost::asio::buffer_sequence_end(buffers);
    for (; it != end && size_ < kMaxBuffers; ++it) buffers_[size_++] = Buffer(*it);
  }
  const Buffer* begin() const { return buffers_.data(); }
  const Buffer* end() const { return buffers_.data() + size_; }

 private:
  std::array<Buffer, kMaxBuffers> buffers_{};
  std::size_t size_ = 0;
};

class AnyStream {
 public:
  using Plain = boost::beast::tcp_stream;
  using Tls = boost::beast::ssl_stream<boost::beast::tcp_stream>;
  using executor_type = Plain::executor_type;

  explicit AnyStream(Plain plain) : s_(std::in_place_type<Plain>, std::move(plain)) {}
  // TLS over `plain`, in `context` (which must outlive the stream).
  AnyStream(Plain plain, boost::asio::ssl::context& context)
      : s_(std::in_place_type<Tls>, std::move(plain), context) {}

  bool is_tls() const { return std::holds_alternative<Tls>(s_); }
  Tls& tls() { return std::get<Tls>(s_); }

  Plain& lowest() {
    return std::visit(
        [](auto& s) -> Plain& {
          if constexpr (std::is_same_v<std::decay_t<decltype(s)>, Plain>) {
            return s;
          } else {
            return s.next_layer();
          }
        },
        s_);
  }
  boost::asio::ip::tcp::socket& socket() { return lowest().socket(); }
  template <class Duration>
  void expires_after(Duration d) {
    lowest().expires_after(d);
  }
  void expires_never() { lowest().expires_never(); }
  void close() { lowest().close(); }

  executor_type get_executor() noexcept { return lowest().get_executor(); }

  template <class MutableBuffers, class Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    read_some(BufferPrefix<boost::asio::mutable_buffer>(buffers),
              IoHandler(std::forward<Handler>(handler), get_executor()));
  }
  template <class ConstBuffers, class Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    write_some(BufferPrefix<boost::asio::const_buffer>(buffers),
               IoHandler(std::forward<Handler>(handler), get_executor()));
  }

  // The TLS handshake and close_notify of a TLS stream (is_tls()).
  template <class Handler>
  void async_handshake(boost::asio::ssl::stream_base::handshake_type type, Handler&& handler) {
    handshake(type, DoneHandler(std::forward<Handler>(handler), get_executor()));
  }
  template <class Handler>
  void async_shutdown(Handler&& handler) {
    shutdown(DoneHandler(std::forward<Handler>(handler), get_executor()));
  }

  // Beast's websocket close: a TLS close_notify, then the TCP shutdown.
  friend void teardown(boost::beast::role_type role, AnyStream& s, boost::system::error_code& ec);
  template <class Handler>
  friend void async_teardown(boost::beast::role_type role, AnyStream& s, Handler&& handler) {
    s.teardown_async(role, DoneHandler(std::forward<Handler>(handler), s.get_executor()));
  }
  // What Beast's websocket timeout closes.
  friend void beast_close_socket(AnyStream& s) { s.close(); }

 private:
  void read_some(BufferPrefix<boost::asio::mutable_buffer> buffers, IoHandler handler);
  void write_some(BufferPrefix<boost::asio::const_buffer> buffers, IoHandler handler);
  void handshake(boost::asio::ssl::stream_base::handshake_type type, DoneHandler handler);
  void shutdown(DoneHandler handler);
  void teardown_async(boost::beast::role_type role, DoneHandler handler);

 private:
  std::variant<Plain, Tls> s_;
};

}  // namespace tb::net
