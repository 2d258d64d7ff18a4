#include "transport/session_inbound.hpp"

namespace tb::bridge {

std::size_t Inbound::prepare(bool tagged, std::size_t whole_limit) {
  if (!tagged) {
    message_ = std::make_unique<tb::net::MessageBuffer>(whole_limit, blocks_);
    return whole_limit;
  }
  const auto limit = static_cast<std::size_t>(reassembly_.read_limit());
  if (!reassembly_.in_message()) {
    message_ = std::make_unique<tb::net::MessageBuffer>(limit, blocks_);
  }
  return limit;
}

Inbound::Step Inbound::on_read(bool tagged) {
  if (tagged) return reassembly_.in_message() ? on_segment() : on_head();
  Step step;
  step.kind = Step::Kind::kMessage;
  step.message = message_->release();
  step.arrived = step.message.size();
  message_.reset();
  return step;
}

Inbound::Step Inbound::on_head() {
  using Head = framing::Reassembly::HeadStep::Kind;
  const ir::Bytes head = message_->release();
  message_.reset();
  receiving_ = {};
  const auto at_head = reassembly_.on_head(head.data(), head.size());
  Step step;
  step.arrived = head.size();
  step.length = at_head.length;
  switch (at_head.kind) {
    case Head::kReject:
      step.reason = at_head.reason;
      drop();
      return step;
    case Head::kTooBig:
      step.kind = Step::Kind::kTooBig;
      return step;
    case Head::kWhole:
      step.kind = Step::Kind::kMessage;
      step.message = head.slice(1, head.size() - 1);
      return step;
    case Head::kSegmented:
      // The buffer grows only as segments arrive.
      message_ = std::make_unique<tb::net::MessageBuffer>(static_cast<std::size_t>(at_head.length),
                                                          blocks_);
      step.kind = Step::Kind::kMore;
      return step;
  }
  return step;
}

Inbound::Step Inbound::on_segment() {
  using Segment = framing::Reassembly::SegmentStep::Kind;
  Step step;
  step.arrived = message_->size() - reassembly_.received();
  const auto at_segment = reassembly_.on_segment(step.arrived);
  switch (at_segment.kind) {
    case Segment::kReject:
      step.reason = std::string(at_segment.reason);
      drop();
      return step;
    case Segment::kMore:
      step.kind = Step::Kind::kMore;
      return step;
    case Segment::kComplete:
      step.kind = Step::Kind::kMessage;
      step.message = message_->release();
      message_.reset();
      return step;
  }
  return step;
}

void Inbound::drop() {
  receiving_ = {};
  message_.reset();
  reassembly_.reset();
}

}  // namespace tb::bridge
