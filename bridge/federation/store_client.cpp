#include "store_client.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tb::bridge::store {

using Clock = std::chrono::steady_clock;

namespace {

// What a wait's answer may take past the wait itself (the server answers at its timeout).
constexpr std::chrono::milliseconds kReplySlack{2000};

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 1 << 30));
}

// Waits until `fd` is ready for `events`; false at the deadline or on a hang-up with nothing left.
bool ready(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

Status write_all(int fd, const std::uint8_t* data, std::size_t size, Clock::time_point deadline) {
  while (size > 0) {
    if (!ready(fd, POLLOUT, deadline)) return make_error(ErrorCode::kTimeout, "sending timed out");
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return make_error(ErrorCode::kIo, "sending: {}", std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return ok();
}

Status read_exact(int fd, std::uint8_t* data, std::size_t size, Clock::time_point deadline) {
  while (size > 0) {
    if (!ready(fd, POLLIN, deadline)) return make_error(ErrorCode::kTimeout, "no answer in time");
    const ssize_t n = ::recv(fd, data, size, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n == 0) return make_error(ErrorCode::kIo, "the store closed the connection");
    if (n < 0) return make_error(ErrorCode::kIo, "receiving: {}", std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return ok();
}

// A non-blocking TCP connection to host:port, or -1 with `why` (refused while the store is not up).
int dial(const std::string& host, std::uint16_t port, Clock::time_point deadline,
         std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found)) {
    why = gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (const addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int error = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        socklen_t length = sizeof error;
        error = ready(fd, POLLOUT, deadline) ? 0 : ETIMEDOUT;
        if (error == 0) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      }
    }
    if (error != 0) {
      why = std::strerror(error);
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

}  // namespace

// One connection, one request at a time (as c10d's TCPStore client). Reopened after a failure.
class Channel {
 public:
  Channel(std::string host, std::uint16_t port, const Key& key)
      : host_(std::move(host)), port_(port), key_(key) {}
  ~Channel() { drop(); }

  Result<Response> call(const Request& request, Clock::time_point deadline) {
    std::unique_lock lock(mutex_, deadline);
    if (!lock) return make_error(ErrorCode::kTimeout, "another request held the connection");
    if (fd_ < 0) TB_TRY(open(deadline));
    auto response = exchange(request, deadline);
    if (!response) drop();  // whatever was half said, the next call starts afresh
    return response;
  }

  std::string where() const { return fmt::format("{}:{}", host_, port_); }
  const std::string& host() const { return host_; }
  std::uint16_t port() const { return port_; }
  const Key& key() const { return key_; }

 private:
  Result<Response> exchange(const Request& request, Clock::time_point deadline) {
    const Bytes frame = send_->seal(encode(request));
    TB_TRY(write_all(fd_, frame.data(), frame.size(), deadline));
    std::uint8_t header[4];
    TB_TRY(read_exact(fd_, header, 4, deadline));
    const std::uint32_t length = frame_length(header);
    if (length > kMaxPayloadBytes) {
      return make_error(ErrorCode::kDecode, "an answer of {} bytes, more than any can be", length);
    }
    Bytes body(std::size_t{length} + kMacBytes);
    TB_TRY(read_exact(fd_, body.data(), body.size(), deadline));
    TB_TRY_ASSIGN(
        const std::string_view payload,
        in_->open({reinterpret_cast<const char*>(body.data()), length}, body.data() + length));
    return decode_response(payload);
  }

  // Connects (retrying while nothing listens yet) and proves the key both ways.
  Status open(Clock::time_point deadline) {
    std::string why = "timed out";
    auto pause = std::chrono::milliseconds(50);
    while ((fd_ = dial(host_, port_, deadline, why)) < 0) {
      if (Clock::now() + pause >= deadline) {
        return make_error(ErrorCode::kTimeout, "cannot connect: {}", why);
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(1000));
    }
    auto proven = handshake(deadline);
    if (!proven) drop();
    return proven;
  }

  Status handshake(Clock::time_point deadline) {
    std::array<std::uint8_t, kHelloBytes> hello{};
    TB_TRY(read_exact(fd_, hello.data(), hello.size(), deadline));
    if (!std::equal(kMagic.begin(), kMagic.end(), hello.begin())) {
      return make_error(ErrorCode::kIo, "not a torchbridge federation store");
    }
    Nonce server{};
    std::copy_n(hello.begin() + kMagic.size(), kNonceBytes, server.begin());
    const Nonce client = random_nonce();
    Bytes answer(kMagic.begin(), kMagic.end());
    answer.insert(answer.end(), client.begin(), client.end());
    const Key proof = derive(key_, "client", server, client);
    answer.insert(answer.end(), proof.begin(), proof.end());
    TB_TRY(write_all(fd_, answer.data(), answer.size(), deadline));
    std::array<std::uint8_t, kProofBytes> theirs{};
    if (!read_exact(fd_, theirs.data(), theirs.size(), deadline) ||
        !same(derive(key_, "server", server, client), theirs.data())) {
      return make_error(ErrorCode::kUnauthorized,
                        "the store and this member do not share the key: give every member the "
                        "same --auth-token-file (or none)");
    }
    send_.emplace(derive(key_, "client frames", server, client));
    in_.emplace(derive(key_, "server frames", server, client));
    return ok();
  }

  void drop() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  const std::string host_;
  const std::uint16_t port_;
  const Key key_;
  std::timed_mutex mutex_;
  int fd_ = -1;
  std::optional<FrameKey> send_, in_;
};

Client::Client(std::string host, std::uint16_t port, const std::optional<std::string>& token,
               std::chrono::milliseconds timeout)
    : Client(std::make_shared<Channel>(std::move(host), port, store_key(token)), timeout) {}

Client::Client(std::shared_ptr<Channel> channel, std::chrono::milliseconds timeout)
    : c10d::Store(timeout), channel_(std::move(channel)) {}

Client::~Client() = default;

c10::intrusive_ptr<Client> Client::scoped(std::chrono::milliseconds timeout) {
  return c10::make_intrusive<Client>(channel_, timeout);
}

#if TORCH_VERSION_MAJOR >= 2
c10::intrusive_ptr<c10d::Store> Client::clone() {
  auto channel = std::make_shared<Channel>(channel_->host(), channel_->port(), channel_->key());
  return c10::make_intrusive<Client>(std::move(channel), timeout_);
}
#endif

Response Client::call(Request request, std::chrono::milliseconds budget) {
  // What the store would refuse by closing the connection is refused here, with the reason.
  bool fits = request.keys.size() <= kMaxKeysPerRequest && request.value.size() <= kMaxValueBytes &&
              request.expected.size() <= kMaxValueBytes;
  for (const auto& key : request.keys) fits = fits && key.size() <= kMaxKeyBytes;
  if (!fits) {
    throw std::runtime_error(fmt::format(
        "the federation's store holds keys of {} bytes and values of {} bytes at most, {} keys a "
        "request",
        kMaxKeyBytes, kMaxValueBytes, kMaxKeysPerRequest));
  }
  auto response = channel_->call(request, Clock::now() + budget);
  if (!response) {
    throw std::runtime_error(fmt::format("the federation's store at {}: {}", channel_->where(),
                                         response.error().what()));
  }
  if (response.value().outcome == Outcome::kError) {
    const Bytes& why = response.value().bytes;
    throw std::runtime_error(fmt::format("the federation's store at {} refused: {}",
                                         channel_->where(), std::string(why.begin(), why.end())));
  }
  return std::move(response).value();
}

void Client::set(const std::string& key, const std::vector<std::uint8_t>& value) {
  call(Request{Op::kSet, 0, 0, {key}, value, {}}, timeout_);
}

std::vector<std::uint8_t> Client::compareSet(const std::string& key,
                                             const std::vector<std::uint8_t>& expected,
                                             const std::vector<std::uint8_t>& desired) {
  return call(Request{Op::kCompareSet, 0, 0, {key}, desired, expected}, timeout_).bytes;
}

std::vector<std::uint8_t> Client::get(const std::string& key) {
  wait({key}, timeout_);
  Response r = call(Request{Op::kGet, 0, 0, {key}, {}, {}}, timeout_);
  if (r.outcome == Outcome::kMissing) {
    throw std::runtime_error(fmt::format("the federation's store: {} was deleted", key));
  }
  return std::move(r.bytes);
}

std::int64_t Client::add(const std::string& key, std::int64_t value) {
  return call(Request{Op::kAdd, 0, value, {key}, {}, {}}, timeout_).number;
}

bool Client::deleteKey(const std::string& key) {
  return call(Request{Op::kDelete, 0, 0, {key}, {}, {}}, timeout_).number != 0;
}

bool Client::check(const std::vector<std::string>& keys) {
  return call(Request{Op::kCheck, 0, 0, keys, {}, {}}, timeout_).number != 0;
}

std::int64_t Client::getNumKeys() {
  return call(Request{Op::kNumKeys, 0, 0, {}, {}, {}}, timeout_).number;
}

void Client::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout_);
}

void Client::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  // c10d's callers ask for their own timeout, or 300 s (Gloo's rendezvous): no wait outlasts this
  // store's, which the federation sets to the operation's.
  auto bounded =
      timeout <= std::chrono::milliseconds::zero() ? timeout_ : std::min(timeout, timeout_);
  bounded = std::min(bounded, std::chrono::milliseconds(std::int64_t{1} << 31));
  const Response r =
      call(Request{Op::kWait, static_cast<std::uint32_t>(bounded.count()), 0, keys, {}, {}},
           bounded + kReplySlack);
  if (r.outcome == Outcome::kTimeout) {
    throw std::runtime_error(fmt::format("the federation's store: waited {} ms for {}: timed out",
                                         bounded.count(), fmt::join(keys, ", ")));
  }
}

}  // namespace tb::bridge::store
