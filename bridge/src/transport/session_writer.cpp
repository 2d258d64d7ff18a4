#include "transport/session_writer.hpp"

#include "transport/data_service.hpp"
#include "transport/framing.hpp"

namespace tb::bridge {

bool SessionWriter::push(Outgoing out) {
  writes_.push_back(std::move(out));
  return !writing_;
}

const SessionWriter::Buffers& SessionWriter::next() {
  if (!writing_) {
    writing_ = true;
    if (tagged_) {
      pieces_ = framing::tagged_messages(*writes_.front().frame, head_);
      piece_ = 0;
    } else {
      buffers_ = buffers_of(*writes_.front().frame);
    }
  }
  return pieces_.empty() ? buffers_ : pieces_[piece_];
}

SessionWriter::After SessionWriter::written(bool failed) {
  if (!failed && ++piece_ < pieces_.size()) return After::kWrite;
  writing_ = false;
  buffers_.clear();
  pieces_.clear();
  if (failed) {
    writes_.clear();
    return After::kFailed;
  }
  writes_.pop_front();  // its place and its bytes are given back
  return writes_.empty() ? After::kIdle : After::kWrite;
}

void SessionWriter::drop_unsent() {
  // The answer being written stays until its write completes: the write reads its memory.
  while (writes_.size() > (writing_ ? 1u : 0u)) writes_.pop_back();
}

}  // namespace tb::bridge
