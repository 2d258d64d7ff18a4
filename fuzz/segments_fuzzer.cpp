// libFuzzer target for Burn 0.23's tagged framing on `/session` (bridge/src/transport/framing.hpp):
// a sequence of websocket messages received through tb::bridge::Inbound
// (bridge/src/transport/session_inbound.hpp) exactly as the session drives it
// (ws_session.cpp, SessionConnection::read and on_message): prepare() readies the buffer and gives
// the read limit Beast enforces, each message's bytes arrive into buffer() chunk by chunk as
// async_read_chunked brings them, charged to the host's MemoryAccount after each chunk, on_read()
// says what the message was, and every whole or completed message is decoded as the protocol-6
// client frame the session decodes before its charge is released. Checks that a completed message
// is exactly its announced length and the concatenation of its segments, that no read limit or
// buffer goes past what the limits allow, that the account holds exactly the bytes of the message
// being received and nothing once it is released, dropped, refused or was a head, and that what
// decodes re-encodes canonically.
//
// Input: one byte choosing the host's max_message_bytes, then websocket messages, each a 2-byte
// little-endian length and that many bytes (the last one cut short where the input ends).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

#include "canonical.hpp"
#include "memory.hpp"
#include "net/message_buffer.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "transport/framing.hpp"
#include "transport/session_inbound.hpp"

namespace {

using tb::bridge::Inbound;
using tb::bridge::framing::kMaxFrame;
using tb::bridge::framing::kMaxHead;
using tb::fuzz::require;
using Kind = Inbound::Step::Kind;

constexpr std::uint64_t kLimits[] = {1 << 20, 64 << 10, 4096, 100};

// Reads `message` into `buffer` as async_read_chunked does: reserve a chunk, take what arrived,
// then `progress()` (where the session charges what arrived).
template <class Progress>
void receive(tb::net::MessageBuffer& buffer, const std::uint8_t* message, std::size_t size,
             Progress progress) {
  bool first = buffer.size() == 0;
  std::size_t at = 0;
  do {
    const std::size_t chunk = tb::net::next_read_size(buffer);
    require(buffer.reserve_next(chunk), "a chunk's memory");
    const std::size_t n = std::min(chunk, size - at);
    auto room = buffer.prepare(n);  // throws past max_size: a finding
    if (n > 0) std::memcpy(room.data(), message + at, n);
    buffer.commit(n);
    at += n;
    if (first) buffer.align_large_payload();
    first = false;
    progress();
  } while (at < size);
}

// What the session does with a message's bytes (read_session_frame): false where it would close.
bool runs(const tb::ir::Bytes& bytes) {
  auto frame = tb::ir::decode<tb::ir::ClientFrame>(bytes);
  if (!frame) return false;
  tb::fuzz::check_reencoding(frame.value(), "ClientFrame");
  for (const auto& message : frame.value()) {
    const auto* task = std::get_if<tb::ir::Task>(&message);
    if (!task || !tb::ir::task_on_wire(*task, 6)) return false;  // a close, an Init, a v2 task
  }
  return true;
}

// A running session in tagged framing, as SessionConnection receives: its Inbound, the host's
// account and warm blocks, and what the fuzzer expects of the message being received (the
// announced length and the segments so far).
class Session {
 public:
  explicit Session(std::uint64_t max_message_bytes)
      : max_(max_message_bytes), inbound_(max_message_bytes, blocks_) {}

  // One websocket message; false once the session has ended.
  bool on_message(const std::uint8_t* data, std::size_t size) {
    // SessionConnection::read: the limit Beast enforces on the next message (the untagged limit
    // passed in is not the tagged one).
    const std::size_t limit = inbound_.prepare(true, max_);
    require(in_message_ ? limit > 0 && limit <= kMaxFrame && limit <= length_ - segments_.size()
                        : limit == kMaxHead,
            "a read limit beyond a head, a frame or what is left");
    tb::net::MessageBuffer& buffer = inbound_.buffer();
    require(in_message_ ? buffer.max_size() == length_ && buffer.size() == segments_.size()
                        : buffer.max_size() == kMaxHead && buffer.size() == 0,
            "the buffer readied for a head or the next segment");
    require(account_->bytes() == buffer.size(), "a charge other than the message so far");
    if (size > limit) {
      // Beast refuses it (message too big): on_message(ec) drops what was being received.
      inbound_.drop();
      require(account_->bytes() == 0, "a charge left after drop()");
      return false;
    }
    receive(buffer, data, size, [&] {
      inbound_.charge(account_);
      require(account_->bytes() == inbound_.buffer().size(),
              "a charge other than the bytes received");
    });
    if (in_message_) {
      require(buffer.capacity() <= length_ + 16 + tb::ir::BlockCache::kTakeSlack,
              "a segmented message's buffer beyond its announced length");
      require(buffer.size() - segments_.size() == size, "a segment's size as the buffer counts it");
      segments_.insert(segments_.end(), data, data + size);
    }
    const auto step = inbound_.on_read(true);
    require(step.arrived == size, "a websocket message's size as the inbound counts it");
    return in_message_ ? on_segment(step, size) : on_head(step, data, size);
  }

  // The connection ends (the input ran out): on_message(ec) drops what was being received.
  void close() {
    inbound_.drop();
    require(account_->bytes() == 0, "a charge left after drop()");
  }

 private:
  bool on_head(const Inbound::Step& step, const std::uint8_t* data, std::size_t size) {
    require(account_->bytes() == 0, "a head's charge beyond the head");
    switch (step.kind) {
      case Kind::kMessage:
        require(size >= 1 && data[0] == 0 && step.length == size - 1 &&
                    step.message.size() == size - 1 &&
                    std::equal(data + 1, data + size, step.message.data()),
                "a whole message's head");
        return dispatch(step.message);
      case Kind::kMore:
        require(size == 9 && data[0] == 1 && step.length > 0 && step.length <= max_,
                "a segmented message's head");
        in_message_ = true;
        length_ = step.length;
        return true;
      case Kind::kTooBig:
        require(step.length > max_ && reads_a_head(), "a message over the limit");
        return false;
      case Kind::kReject:
        require(!step.reason.empty() && reads_a_head(), "a refused head");
        return false;
    }
    return false;
  }

  bool on_segment(const Inbound::Step& step, std::size_t size) {
    switch (step.kind) {
      case Kind::kReject:
        require(size == 0 && account_->bytes() == 0 && reads_a_head(),
                "a segment refused but the empty one");
        return false;
      case Kind::kMore:
        require(segments_.size() < length_, "a message done early");
        require(account_->bytes() == segments_.size(), "a charge other than the segments so far");
        return true;
      case Kind::kTooBig:
        require(false, "a segment too big for its message");
        return false;
      case Kind::kMessage:
        break;
    }
    in_message_ = false;
    const tb::ir::Bytes& bytes = step.message;
    require(bytes.size() == length_, "a completed message of another length than announced");
    require(std::equal(segments_.begin(), segments_.end(), bytes.data(), bytes.data() + length_),
            "a completed message that is not its segments");
    require(account_->bytes() == length_, "a completed message's charge");
    segments_.clear();
    return dispatch(bytes);
  }

  // SessionConnection::dispatch: the queued message's charge takes over from the inbound's.
  bool dispatch(const tb::ir::Bytes& bytes) {
    bool ok = false;
    {
      tb::bridge::MemoryCharge queued(account_, bytes.size());
      inbound_.release_charge();
      require(account_->bytes() == bytes.size(), "a charge left after release_charge()");
      ok = runs(bytes);
    }
    require(account_->bytes() == 0, "a charge left after the message ran");
    return ok;
  }

  // The inbound forgot the message being received: the next read is a head.
  bool reads_a_head() {
    return account_->bytes() == 0 && inbound_.prepare(true, max_) == kMaxHead &&
           inbound_.buffer().max_size() == kMaxHead && inbound_.buffer().size() == 0;
  }

  std::uint64_t max_;
  // As a host's: the account every session's received bytes count in; blocks go back to the cache
  // and the next segmented message may take one.
  std::shared_ptr<tb::bridge::MemoryAccount> account_ =
      std::make_shared<tb::bridge::MemoryAccount>();
  std::shared_ptr<tb::ir::BlockCache> blocks_ =
      std::make_shared<tb::ir::BlockCache>(tb::ir::BlockCache::kMinBlock * 64);
  Inbound inbound_;
  bool in_message_ = false;
  std::uint64_t length_ = 0;
  std::vector<std::uint8_t> segments_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Session session(kLimits[data[0] % std::size(kLimits)]);
  std::size_t at = 1;
  while (at + 2 <= size) {
    const std::size_t n = std::min<std::size_t>(data[at] | (data[at + 1] << 8), size - at - 2);
    at += 2;
    // A private copy, so reads past the message hit ASan's redzone.
    const std::vector<std::uint8_t> message(data + at, data + at + n);
    at += n;
    if (!session.on_message(message.data(), message.size())) break;
  }
  session.close();
  return 0;
}
