// The op tests' run for TB_TEST_DEVICE skips as a whole, saying why, where that device cannot be
// used (tests/test_devices.hpp).
#include "test_devices.hpp"

namespace {
[[maybe_unused]] ::testing::Environment* const kDevice =
    ::testing::AddGlobalTestEnvironment(new tb::test::DeviceEnvironment);
}  // namespace
