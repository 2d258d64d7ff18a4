// An encoded message on its way out: the small msgpack parts owned here, and every large tensor
// payload borrowed from the tensor's own storage. A websocket write sends the segments as one
// message (scatter-gather), so answering a read or serving a download copies no tensor bytes, and
// forty answers that read one tensor hold one tensor's memory, not forty.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "torchbridge/ir/codec.hpp"

namespace tb::bridge {

struct OutFrame {
  // Payloads from this size on are borrowed rather than copied.
  static constexpr std::size_t kBorrowFrom = 64 * 1024;

  std::vector<ir::Bytes> segments;
  std::uint64_t size = 0;

  // May throw std::bad_alloc (the owned parts): callers answer that as an error.
  template <class T>
  static std::shared_ptr<const OutFrame> encode(const T& value) {
    auto frame = std::make_shared<OutFrame>();
    frame->segments = ir::encode_segments(value, kBorrowFrom);
    for (const auto& s : frame->segments) frame->size += s.size();
    return frame;
  }
  static std::shared_ptr<const OutFrame> of_bytes(std::vector<std::uint8_t> bytes) {
    auto frame = std::make_shared<OutFrame>();
    frame->size = bytes.size();
    frame->segments.push_back(ir::Bytes::from_vector(std::move(bytes)));
    return frame;
  }
};
using FramePtr = std::shared_ptr<const OutFrame>;

}  // namespace tb::bridge
