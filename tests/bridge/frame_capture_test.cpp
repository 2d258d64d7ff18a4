// A session's frames captured to a file (transport/frame_capture.hpp) and replayed in process
// (torchbridge/bridge/replay.hpp): what a live host captures replays to the same answers, the
// capture is bounded, and a damaged file is an error, never a crash or a huge allocation.
#include "transport/frame_capture.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>

#include "bridge_test_util.hpp"
#include "torchbridge/bridge/replay.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::bridge {
namespace {

namespace fs = std::filesystem;
using namespace tb::test;
using ::testing::HasSubstr;

// A directory of its own for one test, removed after it.
struct TempDir {
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / fmt::format("tb-capture-{}-{}", name, getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
  fs::path path;
};

ir::Bytes bytes(std::string_view s) {
  return ir::Bytes::copy_of(s.data(), s.size());
}

std::string text(const ir::Bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

TEST(FrameCapture, FramesReadBackInOrderWithTheirProtocol) {
  const TempDir dir("order");
  const auto path = (dir / "s.tbcap").string();
  {
    auto capture = FrameCapture::open(path, 6, 1 << 20);
    ASSERT_NE(capture, nullptr);
    capture->write(bytes("first"));
    capture->write(bytes(""));
    capture->write(bytes("third frame"));
  }
  auto read = read_capture(path);
  ASSERT_TRUE(read) << read.error().what();
  EXPECT_EQ(read.value().protocol, 6);
  ASSERT_EQ(read.value().frames.size(), 3u);
  EXPECT_EQ(text(read.value().frames[0]), "first");
  EXPECT_EQ(text(read.value().frames[1]), "");
  EXPECT_EQ(text(read.value().frames[2]), "third frame");
}

TEST(FrameCapture, StopsAtItsLimitWithWholeFramesOnDisk) {
  const TempDir dir("limit");
  const auto path = (dir / "s.tbcap").string();
  auto capture = FrameCapture::open(path, 2, 10);
  ASSERT_NE(capture, nullptr);
  capture->write(bytes("123456"));
  EXPECT_TRUE(capture->active());
  capture->write(bytes("789012"));  // 12 bytes in all: over the limit of 10
  EXPECT_FALSE(capture->active());
  capture->write(bytes("1"));
  // Flushed at each frame: readable while the capture object lives (a host that dies mid-session).
  auto read = read_capture(path);
  ASSERT_TRUE(read) << read.error().what();
  ASSERT_EQ(read.value().frames.size(), 1u);
  EXPECT_EQ(text(read.value().frames[0]), "123456");
}

TEST(FrameCapture, ADamagedFileIsAnErrorNamingWhereItEnds) {
  const TempDir dir("damaged");
  EXPECT_FALSE(read_capture((dir / "missing.tbcap").string()));
  { std::ofstream(dir / "other.tbcap") << "not a capture at all"; }
  auto other = read_capture((dir / "other.tbcap").string());
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().what(), HasSubstr("not a torchbridge frame capture"));

  const auto path = (dir / "cut.tbcap").string();
  {
    auto capture = FrameCapture::open(path, 2, 1 << 20);
    capture->write(bytes("whole"));
    capture->write(bytes("cut short"));
  }
  fs::resize_file(path, fs::file_size(path) - 3);
  auto cut = read_capture(path);
  ASSERT_FALSE(cut);
  EXPECT_THAT(cut.error().what(), HasSubstr("cut off in frame 1"));

  // A length of 2^62 with nothing behind it: an error, not a 4 EiB allocation.
  {
    std::ofstream out(dir / "huge.tbcap", std::ios::binary);
    const char header[] = {'T', 'B', 'C', 'A', 'P', '1', '\n', '\0', 2, 0};
    out.write(header, sizeof header);
    const char length[] = {0, 0, 0, 0, 0, 0, 0, 0x40};
    out.write(length, sizeof length);
    out << "a few bytes";
  }
  auto huge = read_capture((dir / "huge.tbcap").string());
  ASSERT_FALSE(huge);
  EXPECT_THAT(huge.error().what(), HasSubstr("cut off in frame 0"));
}

std::shared_ptr<backend::Backend> cpu() {
  return std::move(backend::libtorch::make_backend({"cpu", nullptr})).value();
}

// A live host with TB_CAPTURE_DIR writes the session's frames; replayed, they run the same ops
// and answer the same reads, without an error, in every replay (each a fresh session).
TEST(FrameCapture, ALiveSessionCapturedReplaysItsOpsAndAnswers) {
  const TempDir dir("live");
  ::setenv("TB_CAPTURE_DIR", dir.path.c_str(), 1);
  {
    TestHost host(1);
    Session s(host.port(), 0);
    const TensorIr x{TensorId{1}, Shape{Dims{4}}, TensorStatus::ReadOnly, DType(DTypeKind::F32)};
    const TensorIr y{TensorId{2}, Shape{Dims{4}}, TensorStatus::NotInit, DType(DTypeKind::F32)};
    s.send({ones(1, 4), register_op(make_op<OpKind::Float_Exp>(UnaryOpIr{x, y}, DTypeKind::F32))});
    auto y_read = y;
    y_read.status = TensorStatus::ReadOnly;
    const auto live = s.read(y_read);
    ASSERT_TRUE(std::holds_alternative<TensorData>(live));
    float first = 0;
    std::memcpy(&first, std::get<TensorData>(live).bytes.data(), sizeof first);
    EXPECT_FLOAT_EQ(first, std::exp(1.0f));
  }
  ::unsetenv("TB_CAPTURE_DIR");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir.path)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u) << "one session, one capture";
  EXPECT_THAT(files[0].filename().string(), ::testing::StartsWith("session-"));

  auto runs = replay_capture(files[0].string(), cpu(), HostOptions{}, 2);
  ASSERT_TRUE(runs) << runs.error().what();
  ASSERT_EQ(runs.value().size(), 2u);
  for (const auto& r : runs.value()) {
    EXPECT_EQ(r.frames, 2u);
    EXPECT_EQ(r.tasks, 3u);
    EXPECT_EQ(r.ops, 2u);
    EXPECT_EQ(r.failed_ops, 0u);
    EXPECT_EQ(r.answers, 1u);
    EXPECT_EQ(r.error_answers, 0u);
    EXPECT_EQ(r.protocol, kProtocolVersion);
    EXPECT_GT(r.cpu_ms, 0.0);
  }
}

// The client names its session (and Burn's reopens the same id after a lost connection): a second
// capture of an id gets a file of its own, and the first is kept whole.
TEST(FrameCapture, ASessionIdCapturedAgainGetsAFileOfItsOwn) {
  const TempDir dir("again");
  ::setenv("TB_CAPTURE_DIR", dir.path.c_str(), 1);
  auto first = FrameCapture::from_env(0xabc, kProtocolVersion);
  auto second = FrameCapture::from_env(0xabc, kProtocolVersion);
  ::unsetenv("TB_CAPTURE_DIR");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  first->write(bytes("first's"));
  second->write(bytes("second's"));
  auto a = read_capture((dir / "session-0000000000000abc.tbcap").string());
  auto b = read_capture((dir / "session-0000000000000abc-1.tbcap").string());
  ASSERT_TRUE(a) << a.error().what();
  ASSERT_TRUE(b) << b.error().what();
  ASSERT_EQ(a.value().frames.size(), 1u);
  ASSERT_EQ(b.value().frames.size(), 1u);
  EXPECT_EQ(text(a.value().frames[0]), "first's");
  EXPECT_EQ(text(b.value().frames[0]), "second's");
}

TEST(FrameCapture, AFrameTheHostWouldRefuseEndsTheReplayNamingIt) {
  const TempDir dir("refused");
  const auto path = (dir / "s.tbcap").string();
  {
    auto capture = FrameCapture::open(path, kProtocolVersion, 1 << 20);
    capture->write(ir::Bytes::from_vector(ir::encode(ir::ClientFrame{ir::Task{ir::SeedTask{1}}})));
    capture->write(bytes("\xc1 not msgpack"));
  }
  auto runs = replay_capture(path, cpu(), HostOptions{}, 1);
  ASSERT_FALSE(runs);
  EXPECT_THAT(runs.error().what(), HasSubstr("frame 1 would be refused"));
}

}  // namespace
}  // namespace tb::bridge
