// What an open session's frame asks for (transport/session_frame.hpp), without a socket: its
// tasks in order, a Close of the session, and every way a frame ends the session instead.
#include "transport/session_frame.hpp"

#include <gmock/gmock.h>

#include "torchbridge/ir/codec.hpp"

namespace tb::bridge {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kSession = 0x42;

ir::Bytes bytes_of(const ir::ClientFrame& frame) {
  return ir::Bytes::from_vector(ir::encode(frame));
}

FrameContent read(const ir::ClientFrame& frame, const ir::ProtocolProfile& profile) {
  return read_session_frame(bytes_of(frame), FrameSession{&profile, kSession, "10.0.0.1:5"});
}

FrameRejected rejected(const FrameContent& c) {
  const auto* r = std::get_if<FrameRejected>(&c);
  EXPECT_NE(r, nullptr) << "accepted";
  return r ? *r : FrameRejected{"accepted", "accepted"};
}

const ir::ProtocolProfile& v2() {
  return ir::kProfiles.front();
}
const ir::ProtocolProfile& v6() {
  return ir::newest_profile();
}

ir::Task read_tensors() {
  return ir::ReadTensorsTask{1, ir::StreamId{0}, {}};
}

TEST(SessionFrame, TasksComeInOrderAndACloseEndsTheFrame) {
  const auto c = read(ir::ClientFrame{ir::Task{ir::SeedTask{1}}, ir::Task{ir::SeedTask{2}},
                                      ir::SessionId{kSession}, ir::Task{ir::SeedTask{3}}},
                      v2());
  const auto* tasks = std::get_if<FrameTasks>(&c);
  ASSERT_NE(tasks, nullptr);
  ASSERT_EQ(tasks->tasks.size(), 2u);  // what follows the Close is not run
  EXPECT_EQ(std::get<ir::SeedTask>(tasks->tasks[0]).seed, 1u);
  EXPECT_EQ(std::get<ir::SeedTask>(tasks->tasks[1]).seed, 2u);
  EXPECT_TRUE(tasks->close_requested);

  const auto open = read(ir::ClientFrame{ir::Task{ir::SeedTask{1}}}, v2());
  ASSERT_TRUE(std::holds_alternative<FrameTasks>(open));
  EXPECT_FALSE(std::get<FrameTasks>(open).close_requested);
}

TEST(SessionFrame, ATaskOfAnotherProtocolEndsTheSession) {
  EXPECT_TRUE(std::holds_alternative<FrameTasks>(read(ir::ClientFrame{read_tensors()}, v6())));
  const auto r = rejected(read(ir::ClientFrame{ir::Task{ir::SeedTask{1}}, read_tensors()}, v2()));
  EXPECT_EQ(r.close_reason, "task of another protocol");
  EXPECT_THAT(r.log, HasSubstr("Task::ReadTensors is not a message of Burn 0.22.1"));
  EXPECT_THAT(r.log, HasSubstr("session 0000000000000042 (10.0.0.1:5)"));
}

TEST(SessionFrame, UndecodableBytesACloseOfAnotherSessionAndASecondInitEndTheSession) {
  const std::vector<std::uint8_t> junk{0xc1, 0x00};
  const auto undecodable = rejected(
      read_session_frame(ir::Bytes::from_vector(junk), FrameSession{&v2(), kSession, "peer"}));
  EXPECT_EQ(undecodable.close_reason, "undecodable frame");
  EXPECT_THAT(undecodable.log, HasSubstr("undecodable frame of 2 bytes"));

  const auto other = rejected(read(ir::ClientFrame{ir::SessionId{kSession + 1}}, v2()));
  EXPECT_EQ(other.close_reason, "closing another session");
  EXPECT_THAT(other.log, HasSubstr("asked to close session 0000000000000043"));

  const auto init =
      rejected(read(ir::ClientFrame{ir::SessionInit{ir::kProtocolVersion, ir::SessionId{kSession},
                                                    0, ir::Bytes()}},
                    v2()));
  EXPECT_EQ(init.close_reason, "second Init");
}

}  // namespace
}  // namespace tb::bridge
