// Back-pressure (ws_session.cpp and SessionWorker::pause_if_full): once a session's received,
// not yet run tasks pass --max-queued-bytes, its socket is not read until the worker has drained
// them to half. A client that sends faster than its tasks run holds about that much of the host's
// memory, and then waits in its own socket.
#include <future>
#include <vector>

#include <gtest/gtest.h>

#include "bridge_test_util.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::test {
namespace {

// A session paused for longer than the idle timeout lives on: the host reads nothing from it, so
// its silence says nothing (Beast's idle timer, with its unread pong, closed it).
class BackPressure : public ::testing::TestWithParam<std::chrono::milliseconds> {};

TEST_P(BackPressure, ASessionAheadOfItsWorkerIsNotReadPastTheQueueLimit) {
  constexpr std::uint64_t kLimit = 256 * 1024;
  constexpr std::size_t kFrame = 64 * 1024;
  bridge::HostOptions options;
  options.port = 0;
  options.transfer_timeout = 1500ms;
  options.idle_timeout = GetParam();
  options.limits.max_queued_bytes = kLimit;
  std::vector<std::shared_ptr<backend::Backend>> devices;
  devices.push_back(std::move(backend::libtorch::make_backend({"cpu", nullptr})).value());
  bridge::Host host(options, devices);
  ASSERT_TRUE(host.start());
  Session s(host.port(), 0);
  ASSERT_TRUE(s.open());
  // The worker waits for a transfer nobody exposes: it runs nothing for the transfer timeout.
  s.send({register_local(7, 1)});
  const std::vector<float> values(kFrame / 4, 1.0f);
  auto sender = std::async(std::launch::async, [&] {
    for (std::uint64_t i = 0; i < 48; ++i) {  // 3 MiB, twelve times the limit
      s.send({register_tensor(
          100 + i,
          TensorData{Bytes::copy_of(values.data(), kFrame), {values.size()}, DTypeKind::F32})});
    }
  });
  // What is under test is a stretch in which the worker runs nothing: the host must stop reading.
  std::this_thread::sleep_for(700ms);
  const std::uint64_t read_while_blocked = host.metrics().bytes_in;
  EXPECT_LT(read_while_blocked, kLimit + 3 * kFrame)
      << "the host read " << read_while_blocked << " bytes of tasks its worker could not run";
  // Once the worker goes on, every frame is read and run.
  ASSERT_EQ(sender.wait_for(20s), std::future_status::ready);
  sender.get();
  const TensorIr last{TensorId{147}, Shape{Dims{values.size()}}, TensorStatus::ReadOnly,
                      DType(DTypeKind::F32)};
  const auto data = s.read(last);
  ASSERT_TRUE(std::holds_alternative<TensorData>(data)) << "the last tensor was not registered";
  EXPECT_GT(host.metrics().bytes_in, 48 * kFrame);
  EXPECT_EQ(host.metrics().sessions_open, 1u);
  host.stop();
}

INSTANTIATE_TEST_SUITE_P(IdleTimeout, BackPressure,
                         ::testing::Values(std::chrono::milliseconds(60000),
                                           std::chrono::milliseconds(200)),
                         [](const auto& info) {
                           return std::to_string(info.param.count()) + "ms";
                         });

}  // namespace
}  // namespace tb::test
