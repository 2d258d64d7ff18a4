// Device memory is a limit like host memory (issue 38): the sessions on a device count their
// tensors against --max-device-bytes, going over is an error for that session alone, /metrics shows
// each device, and a GPU's caching allocator gives back what a finished session used. Each case
// runs on every test device (tests/test_devices.hpp): the CPU here, cuda:0 where a GPU is visible.
#include <string>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/host_raw_client.hpp"
#include "memory.hpp"
#include "test_devices.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

const bridge::DeviceMetrics& device_metrics(const bridge::HostMetrics& m) {
  EXPECT_EQ(m.devices.size(), 1u);
  return m.devices.at(0);
}

class DeviceMemory : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { TB_SKIP_UNLESS_DEVICE(GetParam()); }
  static bridge::HostOptions limited(std::uint64_t device_bytes) {
    bridge::HostOptions o;
    o.limits.max_device_bytes = device_bytes;
    return o;
  }
};

// 4 MiB in one session and 4 MiB in another fit a 9 MiB device; 6 MiB more in the first does not,
// and that is the first session's error alone: its earlier tensor and the other session live on.
TEST_P(DeviceMemory, GoingOverTheDeviceLimitFailsThatSessionAlone) {
  ConfiguredHost host(limited(9 * kMiB), 1, GetParam());
  Session a(host.port(), 0);
  Session b(host.port(), 0);
  a.send({ones(1, kMiB)});  // 4 MiB of f32
  ASSERT_FALSE(std::holds_alternative<ExecutionError>(a.sync()));
  b.send({ones(1, kMiB)});
  b.send({ones(5, 16)});
  ASSERT_FALSE(std::holds_alternative<ExecutionError>(b.sync()));
  EXPECT_EQ(device_metrics(host.metrics()).tensor_bytes, 8 * kMiB + 64);

  a.send({ones(2, kMiB * 3 / 2)});  // 6 MiB more: 14 MiB on the device
  const auto over = a.read(tir(2, {kMiB * 3 / 2}));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(over));
  const std::string reason = std::get<ExecutionError>(over).reason;
  EXPECT_THAT(reason, HasSubstr("--max-device-bytes"));
  EXPECT_THAT(reason, HasSubstr(GetParam()));
  EXPECT_EQ(device_metrics(host.metrics()).tensor_bytes, 8 * kMiB + 64)
      << "the failed output is freed";

  const auto earlier = a.read(tir(1, {kMiB}));
  EXPECT_FALSE(std::holds_alternative<ExecutionError>(earlier)) << "a's first tensor lives on";
  b.send({register_op(make_op<OpKind::NumericFloat_AddScalar>(
      ScalarOpIr{tir(5, {16}), ScalarIr::f(1), out(3, {16})}, DTypeKind::F32))});
  const auto other = b.read(tir(3, {16}));
  ASSERT_FALSE(std::holds_alternative<ExecutionError>(other))
      << "b is not affected: " << std::get<ExecutionError>(other).reason;
}

// A session's tensors leave the device's count when it ends, and /metrics shows the device with
// its count and its limit.
TEST_P(DeviceMemory, EndedSessionsLeaveTheCountAndMetricsShowEachDevice) {
  ConfiguredHost host(limited(64 * kMiB), 1, GetParam());
  {
    Session s(host.port(), 0);
    s.send({ones(1, 2 * kMiB)});
    ASSERT_FALSE(std::holds_alternative<ExecutionError>(s.sync()));
    EXPECT_EQ(device_metrics(host.metrics()).tensor_bytes, 8 * kMiB);
  }
  EXPECT_TRUE(eventually([&] { return device_metrics(host.metrics()).tensor_bytes == 0; }));
  const std::string text = host.host().metrics_text();
  const std::string device = "{device=\"" + GetParam() + "\"}";
  EXPECT_THAT(text, HasSubstr("torchbridge_device_limit_bytes" + device + " 67108864"));
  EXPECT_THAT(text, HasSubstr("torchbridge_device_tensor_bytes" + device + " 0"));
  EXPECT_THAT(text, HasSubstr("torchbridge_device_reserved_bytes" + device));
  if (GetParam() != "cpu") {
    // The caching allocator kept the session's blocks; the host gives them back when it ends.
    EXPECT_TRUE(eventually([&] {
      const auto m = device_metrics(host.metrics()).allocator;
      return m.reserved == m.allocated;
    })) << "reserved "
        << device_metrics(host.metrics()).allocator.reserved;
    EXPECT_GT(device_metrics(host.metrics()).allocator.total, 0u);
  }
}

// A GPU session's tensors are not host memory: they leave --max-host-bytes alone. A CPU
// session's count against both.
TEST_P(DeviceMemory, OnlyTensorsInHostMemoryCountAgainstTheHostLimit) {
  bridge::HostOptions o = limited(0);
  o.limits.max_host_bytes = 6 * kMiB;
  ConfiguredHost host(o, 1, GetParam());
  Session s(host.port(), 0);
  s.send({ones(1, 2 * kMiB)});  // 8 MiB
  const auto r = s.sync();
  if (GetParam() == "cpu") {
    ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
    EXPECT_THAT(std::get<ExecutionError>(r).reason, HasSubstr("--max-host-bytes"));
  } else {
    EXPECT_FALSE(std::holds_alternative<ExecutionError>(r));
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceMemory, ::testing::ValuesIn(test_devices()),
                         device_test_name);

// The default: a GPU's limit is a share of its memory, the CPU has none of its own (its tensors
// count against --max-host-bytes); a limit given is taken as it is.
TEST(DeviceLimit, DefaultsFromTheDevicesMemory) {
  const std::uint64_t gpu = std::uint64_t{80} << 30;
  EXPECT_EQ(bridge::device_limit(std::nullopt, gpu),
            static_cast<std::uint64_t>(static_cast<double>(gpu) * bridge::kDefaultDeviceShare));
  EXPECT_EQ(bridge::device_limit(std::nullopt, 0), 0u);
  EXPECT_EQ(bridge::device_limit(std::uint64_t{1} << 20, gpu), std::uint64_t{1} << 20);
  EXPECT_EQ(bridge::device_limit(std::uint64_t{0}, gpu), 0u);
  ConfiguredHost host(bridge::HostOptions{});
  EXPECT_EQ(device_metrics(host.metrics()).limit_bytes, 0u);
  EXPECT_EQ(device_metrics(host.metrics()).device, "cpu");
}

}  // namespace
}  // namespace tb::test
