#include "runtime/aten_guard.hpp"

#include <new>
#include <stdexcept>
#include <system_error>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tb::backend::libtorch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(AtenGuard, PassesValuesResultsAndVoidThrough) {
  auto value = aten_guard("adding", [] { return 41 + 1; });
  ASSERT_TRUE(value);
  EXPECT_EQ(value.value(), 42);

  auto failed = aten_guard("adding", []() -> Result<int> {
    return make_error(ErrorCode::kInvalidArgument, "no operands");
  });
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(failed.error().message, "no operands");  // a returned error is not prefixed

  int calls = 0;
  const Status done = aten_guard("", [&] { ++calls; });
  EXPECT_TRUE(done);
  EXPECT_EQ(calls, 1);
}

TEST(AtenGuard, AnAtenErrorLosesItsBacktrace) {
  auto r = aten_guard("mm", [] {
    TORCH_CHECK(false, "shapes cannot be multiplied");
    return 0;
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kExecution);
  EXPECT_THAT(r.error().message, HasSubstr("mm: shapes cannot be multiplied"));
  EXPECT_THAT(r.error().message, Not(HasSubstr("Exception raised from")));
}

TEST(AtenGuard, EveryOtherExceptionBecomesAnErrorInOrder) {
  const auto message = [](auto thrower) {
    const Status s = aten_guard(ErrorCode::kIo, "step", thrower);
    EXPECT_FALSE(s);
    EXPECT_EQ(s.error().code, ErrorCode::kIo);
    return s.error().message;
  };
  EXPECT_EQ(message([] { throw std::bad_alloc(); }), "step: out of memory");
  EXPECT_EQ(message([] { throw std::system_error(std::make_error_code(std::errc::io_error)); }),
            "step: system error: " + std::make_error_code(std::errc::io_error).message());
  EXPECT_EQ(message([] { throw std::out_of_range("index 9"); }), "step: index 9");
  EXPECT_EQ(message([] { throw 42; }), "step: an unknown exception");
}

TEST(AtenGuard, AnEmptyWhatLeavesTheTextAlone) {
  const Status s = aten_guard("", [] { throw std::runtime_error("boom"); });
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "boom");
}

TEST(ParseDevice, NamesADeviceOrSaysWhatItExpects) {
  auto cpu = parse_device("cpu");
  ASSERT_TRUE(cpu);
  EXPECT_TRUE(cpu.value().is_cpu());
  auto bad = parse_device("tpu:0");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "invalid device \"tpu:0\": expected cpu or cuda:N");
}

}  // namespace
}  // namespace tb::backend::libtorch
