// Device: the public handle on a session, and Burn's address forms.
#include "torchbridge/client/device.hpp"

#include <algorithm>
#include <cctype>

#include "session.hpp"

namespace tb::client {

// burn-communication's Address parsing: scheme defaults to ws and is lower-cased; path, query and
// fragment are dropped; the host is kept as written; the port is what follows the last ':' when
// it parses as a u16.
Result<Address> parse_address(std::string_view text) {
  Address a;
  std::string_view rest = text;
  if (const auto p = rest.find("://"); p != std::string_view::npos) {
    a.scheme = std::string(rest.substr(0, p));
    std::transform(a.scheme.begin(), a.scheme.end(), a.scheme.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    rest.remove_prefix(p + 3);
  } else {
    a.scheme = "ws";
  }
  if (const auto p = rest.find_first_of("/?#"); p != std::string_view::npos) {
    rest = rest.substr(0, p);
  }
  const auto colon = rest.rfind(':');
  const auto bracket = rest.rfind(']');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    const auto port_text = rest.substr(colon + 1);
    unsigned long port = 0;
    bool numeric = !port_text.empty() && port_text.size() <= 5;
    for (char c : port_text) {
      numeric = numeric && std::isdigit(static_cast<unsigned char>(c));
      if (numeric) port = port * 10 + static_cast<unsigned long>(c - '0');
    }
    if (numeric && port <= 65535) {
      a.port = static_cast<std::uint16_t>(port);
      rest = rest.substr(0, colon);
    }
  }
  a.host = std::string(rest);
  if (a.host.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "'{}' names no host", text);
  }
  if (a.scheme != "ws" && a.scheme != "wss") {
    return make_error(ErrorCode::kUnsupported, "'{}': only ws:// and wss:// are spoken", text);
  }
  return a;
}

std::string format_address(const Address& a) {
  return a.port ? fmt::format("{}://{}:{}", a.scheme, a.host, *a.port)
                : fmt::format("{}://{}", a.scheme, a.host);
}

// ---- Device. -------------------------------------------------------------------------------

Result<Device> Device::connect(std::string_view address, std::uint32_t index,
                               SessionOptions options) {
  TB_TRY_ASSIGN(auto session, detail::Session::connect(address, index, std::move(options)));
  return Device(std::move(session));
}

namespace {
// What an unconnected Device (default-constructed) reports: empty values, never a crash.
const std::string kNoAddress;
const Address kNoPeer{};
const ir::DeviceSettings kNoSettings{};
const SessionOptions kNoOptions{};
}  // namespace

const std::string& Device::address() const {
  return session_ ? session_->address() : kNoAddress;
}
const Address& Device::peer_address() const {
  return session_ ? session_->peer_address() : kNoPeer;
}
std::uint32_t Device::index() const {
  return session_ ? session_->index() : 0;
}
std::uint32_t Device::device_count() const {
  return session_ ? session_->device_count() : 0;
}
const ir::DeviceSettings& Device::settings() const {
  return session_ ? session_->settings() : kNoSettings;
}
ir::DType Device::float_dtype() const {
  return ir::DType(static_cast<ir::DTypeKind>(settings().float_dtype));
}
ir::DType Device::int_dtype() const {
  // IntDType's variants follow DTypeKind's from I64 on.
  return ir::DType(static_cast<ir::DTypeKind>(static_cast<int>(ir::DTypeKind::I64) +
                                              static_cast<int>(settings().int_dtype)));
}
ir::DType Device::bool_dtype() const {
  return ir::DType::boolean(settings().bool_dtype);
}
const SessionOptions& Device::options() const {
  return session_ ? session_->options() : kNoOptions;
}

Status Device::sync(std::optional<std::chrono::milliseconds> timeout) const {
  if (!session_) return make_error(ErrorCode::kInvalidArgument, "sync on an unconnected Device");
  const auto stream = detail::current_stream();
  TB_TRY_ASSIGN(auto r, session_->request_answer<ir::SyncBackendResponse>(
                            [&](ir::RequestId id) {
                              return ir::Task(ir::SyncBackendTask{id, stream});
                            },
                            timeout));
  if (const auto* e = std::get_if<ir::ExecutionError>(&r.result)) {
    return Error{ErrorCode::kExecution, e->reason, session_->describe()};
  }
  return ok();
}

Result<std::uint8_t> Device::dtype_usage(const ir::DType& dtype,
                                         std::optional<std::chrono::milliseconds> timeout) const {
  if (!session_)
    return make_error(ErrorCode::kInvalidArgument, "dtype_usage on an unconnected Device");
  TB_TRY_ASSIGN(auto r, session_->request_answer<ir::DTypeUsageResponse>(
                            [&](ir::RequestId id) {
                              return ir::Task(ir::DTypeUsageTask{id, dtype});
                            },
                            timeout));
  return r.usage.bits;
}

void Device::seed(std::uint64_t seed) const {
  if (session_) session_->submit(ir::SeedTask{seed});
}

Status Device::flush() const {
  if (!session_) return make_error(ErrorCode::kInvalidArgument, "flush on an unconnected Device");
  return session_->flush();
}

void Device::close() const {
  if (session_) session_->close();
}

bool Device::connected() const {
  return session_ && session_->connected();
}

std::optional<Error> Device::failure() const {
  if (!session_) return std::nullopt;
  return session_->failure();
}

}  // namespace tb::client
