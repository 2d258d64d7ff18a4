// libFuzzer target for Burn 0.23's tagged framing on `/session` (bridge/src/transport/framing.hpp):
// a sequence of websocket messages driven through framing::Reassembly exactly as the session does
// (ws_session.cpp): each message read into a net::MessageBuffer under the limit the reassembly
// gives, heads and segments handed over, and every whole or completed message decoded as the
// protocol-6 client frame the session decodes. Checks that a completed message is exactly its
// announced length and the concatenation of its segments, that no buffer grows past what the
// limits allow, and that what decodes re-encodes canonically.
//
// Input: one byte choosing the host's max_message_bytes, then websocket messages, each a 2-byte
// little-endian length and that many bytes (the last one cut short where the input ends).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "canonical.hpp"
#include "net/message_buffer.hpp"
#include "torchbridge/ir/block_cache.hpp"
#include "transport/framing.hpp"

namespace {

using tb::bridge::framing::Reassembly;
using tb::fuzz::require;
using Head = Reassembly::HeadStep::Kind;
using Segment = Reassembly::SegmentStep::Kind;

constexpr std::uint64_t kLimits[] = {1 << 20, 64 << 10, 4096, 100};

// Reads `message` into `buffer` as async_read_chunked does: reserve a chunk, take what arrived.
void receive(tb::net::MessageBuffer& buffer, const std::uint8_t* message, std::size_t size) {
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
  } while (at < size);
}

// What the session does with a message's bytes (dispatch): false where it would close.
bool dispatch(const tb::ir::Bytes& bytes) {
  auto frame = tb::ir::decode<tb::ir::ClientFrame>(bytes);
  if (!frame) return false;
  tb::fuzz::check_reencoding(frame.value(), "ClientFrame");
  for (const auto& message : frame.value()) {
    const auto* task = std::get_if<tb::ir::Task>(&message);
    if (!task || !tb::ir::task_on_wire(*task, 6)) return false;  // a close, an Init, a v2 task
  }
  return true;
}

class Session {
 public:
  explicit Session(std::uint64_t max_message_bytes) : reassembly_(max_message_bytes) {}

  // One websocket message; false once the session has ended.
  bool on_message(const std::uint8_t* data, std::size_t size) {
    const std::uint64_t limit = reassembly_.read_limit();
    require(reassembly_.in_message() ? limit > 0 && limit <= tb::bridge::framing::kMaxFrame &&
                                           limit <= length_ - reassembly_.received()
                                     : limit == tb::bridge::framing::kMaxHead,
            "a read limit beyond a head, a frame or what is left");
    if (size > limit) return false;  // Beast refuses it (message too big): the session ends
    if (!reassembly_.in_message()) return on_head(data, size);
    receive(*message_, data, size);
    require(message_->capacity() <= length_ + 16 + tb::ir::BlockCache::kTakeSlack,
            "a segmented message's buffer beyond its announced length");
    const std::size_t got = message_->size() - reassembly_.received();
    require(got == size, "a segment's size as the buffer counts it");
    segments_.insert(segments_.end(), data, data + size);
    const auto step = reassembly_.on_segment(got);
    if (step.kind == Segment::kReject) {
      require(size == 0 && !reassembly_.in_message(), "a segment refused but the empty one");
      return false;
    }
    if (step.kind == Segment::kMore) {
      require(reassembly_.in_message() && message_->size() < length_, "a message done early");
      return true;
    }
    require(!reassembly_.in_message(), "a completed message still receiving");
    const tb::ir::Bytes bytes = message_->release();
    message_.reset();
    require(bytes.size() == length_, "a completed message of another length than announced");
    require(std::equal(segments_.begin(), segments_.end(), bytes.data(), bytes.data() + length_),
            "a completed message that is not its segments");
    segments_.clear();
    return dispatch(bytes);
  }

 private:
  bool on_head(const std::uint8_t* data, std::size_t size) {
    tb::net::MessageBuffer buffer(reassembly_.read_limit(), blocks_);
    receive(buffer, data, size);
    const tb::ir::Bytes head = buffer.release();
    const auto step = reassembly_.on_head(head.data(), head.size());
    switch (step.kind) {
      case Head::kWhole:
        require(size >= 1 && data[0] == 0 && step.length == size - 1, "a whole message's head");
        return dispatch(head.slice(1, head.size() - 1));
      case Head::kSegmented:
        require(size == 9 && data[0] == 1 && step.length > 0 &&
                    step.length <= reassembly_.max_message_bytes() && reassembly_.in_message(),
                "a segmented message's head");
        length_ = step.length;
        message_ =
            std::make_unique<tb::net::MessageBuffer>(static_cast<std::size_t>(length_), blocks_);
        return true;
      case Head::kTooBig:
        require(step.length > reassembly_.max_message_bytes() && !reassembly_.in_message(),
                "a message over the limit");
        return false;
      case Head::kReject:
        require(!step.reason.empty() && !reassembly_.in_message(), "a refused head");
        return false;
    }
    return false;
  }

  Reassembly reassembly_;
  std::unique_ptr<tb::net::MessageBuffer> message_;
  // As a host's: blocks go back to it and the next segmented message may take one.
  std::shared_ptr<tb::ir::BlockCache> blocks_ =
      std::make_shared<tb::ir::BlockCache>(tb::ir::BlockCache::kMinBlock * 64);
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
  return 0;
}
