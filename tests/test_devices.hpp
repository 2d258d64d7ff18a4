// The devices tests run on, without a copy of any test per device (docs/libtorch.md, "Tests follow
// the device"):
// - a suite parameterised by device (TEST_P over test_devices()) runs on the CPU always and on
//   cuda:0, whose cases skip with the reason (no CUDA in the build, no driver, no GPU visible)
//   where no GPU can be used;
// - the backend's op tests (OpTest) run on test_device(), TB_TEST_DEVICE or the CPU: CTest runs
//   the binary a second time with TB_TEST_DEVICE=cuda:0, which skips the whole run, saying why,
//   where no GPU can be used (DeviceEnvironment).
#pragma once

#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::test {

inline std::vector<std::string> test_devices() {
  return {"cpu", "cuda:0"};
}

// TB_TEST_DEVICE, else "cpu".
inline std::string test_device() {
  const char* d = std::getenv("TB_TEST_DEVICE");
  return d && *d ? d : "cpu";
}

// Whether `device` can be used here; `why` says why not.
inline bool device_usable(const std::string& device, std::string* why = nullptr) {
  if (device.rfind("cuda", 0) != 0 || ::tb::backend::libtorch::cuda_available()) return true;
  if (why) {
    *why = device + " not tested here: " + ::tb::backend::libtorch::cuda_unavailable_reason();
  }
  return false;
}

// Skips every test of a binary run for a device that cannot be used here, saying why once.
class DeviceEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string why;
    if (!device_usable(test_device(), &why)) GTEST_SKIP() << why;
  }
};

// A parameter's name for gtest: "cpu", "cuda0".
inline std::string device_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name;
  for (const char c : info.param) {
    if (std::isalnum(static_cast<unsigned char>(c))) name += c;
  }
  return name;
}

// In a test body (or SetUp): skips, saying why, when `device` cannot be used here.
#define TB_SKIP_UNLESS_DEVICE(device)                     \
  do {                                                    \
    std::string tb_why_;                                  \
    if (!::tb::test::device_usable((device), &tb_why_)) { \
      GTEST_SKIP() << tb_why_;                            \
    }                                                     \
  } while (false)

}  // namespace tb::test
