#include "client/fake_host.hpp"

#include <sys/socket.h>

#include <condition_variable>

#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

namespace tb::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

FakeHost::FakeHost(Answer answer, std::optional<ir::TaskResponse> init)
    : answer_(std::move(answer)),
      init_(std::move(init)),
      acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
  port_ = acceptor_.local_endpoint().port();
  listen_fd_ = acceptor_.native_handle();
  thread_ = std::thread([this] { serve(); });
}

FakeHost::~FakeHost() {
  // Unblocks the serving thread's accept or read.
  if (int fd = conn_fd_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
  if (int fd = listen_fd_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
  thread_.join();
}

void FakeHost::serve() {
  beast::error_code ec;
  tcp::socket socket(ioc_);
  acceptor_.accept(socket, ec);
  if (ec) return;
  conn_fd_ = socket.native_handle();
  websocket::stream<tcp::socket> ws(std::move(socket));
  ws.read_message_max(0);
  ws.accept(ec);
  if (ec) return;
  ws.binary(true);
  bool first = true;
  for (;;) {
    beast::flat_buffer buffer;
    ws.read(buffer, ec);
    if (ec) return;
    const auto d = buffer.data();
    const auto* p = static_cast<const std::uint8_t*>(d.data());
    {
      std::lock_guard lock(mutex_);
      frames_.emplace_back(p, p + d.size());
    }
    cv_.notify_all();
    std::vector<ir::TaskResponse> replies;
    if (first) {
      first = false;
      if (!init_) continue;
      replies.push_back(*init_);
    } else {
      auto frame = ir::decode<ir::ClientFrame>(ir::Bytes::copy_of(d.data(), d.size()));
      if (!frame) return;
      auto answer = answer_(frame.value());
      if (!answer) {
        beast::error_code ignored;
        ws.next_layer().shutdown(tcp::socket::shutdown_both, ignored);
        ws.next_layer().close(ignored);
        conn_fd_ = -1;
        return;
      }
      replies = std::move(*answer);
    }
    for (const auto& r : replies) {
      const auto bytes = ir::encode(r);
      ws.write(net::buffer(bytes), ec);
      if (ec) return;
    }
  }
}

std::vector<std::vector<std::uint8_t>> FakeHost::frames() const {
  std::lock_guard lock(mutex_);
  return frames_;
}

std::vector<ir::ClientFrame> FakeHost::task_frames() const {
  std::vector<ir::ClientFrame> out;
  const auto all = frames();
  for (std::size_t i = 1; i < all.size(); ++i) {
    auto f = ir::decode<ir::ClientFrame>(ir::Bytes::copy_of(all[i].data(), all[i].size()));
    if (f) out.push_back(std::move(f).value());
  }
  return out;
}

bool FakeHost::wait_frames(std::size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return frames_.size() >= n; });
}

ir::TaskResponse FakeHost::flex_init(std::uint32_t device_count) {
  ir::SessionInfo info;
  info.version = ir::kProtocolVersion;
  info.settings.float_dtype = ir::FloatDType::F32;
  info.settings.int_dtype = ir::IntDType::I32;
  info.settings.bool_dtype = ir::BoolStore::Native;
  info.settings.quantization.scheme.value = ir::QuantValue::Q8F;
  info.settings.quantization.scheme.store = ir::QuantStore{ir::QuantStoreKind::Native, 0};
  info.settings.quantization.scheme.mode = ir::QuantMode::Symmetric;
  info.settings.quantization.propagation = ir::QuantPropagation::Inhibit;
  info.device_count = device_count;
  return ir::TaskResponse{ir::InitResponse{info}, 0};
}

std::optional<std::vector<ir::TaskResponse>> FakeHost::answer_all(const ir::ClientFrame& frame) {
  std::vector<ir::TaskResponse> out;
  for (const auto& m : frame) {
    const auto* task = std::get_if<ir::Task>(&m);
    if (!task) continue;
    if (const auto* s = std::get_if<ir::SyncBackendTask>(task)) {
      out.push_back(ir::TaskResponse{ir::SyncBackendResponse{std::monostate{}}, s->request_id});
    } else if (const auto* r = std::get_if<ir::ReadTensorTask>(task)) {
      ir::TensorData data;
      data.shape = r->tensor.shape.dims;
      data.dtype = r->tensor.dtype;
      data.bytes = ir::Bytes::from_vector(std::vector<std::uint8_t>(
          ir::num_elements(data.shape) * std::max<std::size_t>(1, data.dtype.element_size())));
      out.push_back(ir::TaskResponse{ir::ReadTensorResponse{std::move(data)}, r->request_id});
    }
  }
  return out;
}

}  // namespace tb::test
