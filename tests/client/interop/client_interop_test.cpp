// The same C++ program against `torchbridge serve` and against Burn's own remote server (the
// reference_server bin of tests/interop: Burn 0.22.1's BackendServer on Flex), side by side, and
// tensors moved between the two hosts in both directions.
#include <cstdlib>

#include <gtest/gtest.h>

#include "client/child_server.hpp"
#include "client/program.hpp"

namespace tb::test {
namespace {

using client::Device;

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

ChildServer start_ours() {
  return ChildServer({env_or("TORCHBRIDGE_BIN", TB_TORCHBRIDGE_BIN), "serve", "--port", "0",
                      "--device", "cpu", "--device", "cpu", "--log-level", "warn",
                      "--exit-on-stdin-eof"});
}

ChildServer start_reference() {
  return ChildServer({env_or("TB_REFERENCE_SERVER", TB_REFERENCE_SERVER), "--port", "0",
                      "--devices", "2", "--exit-on-stdin-eof"});
}

Device connect(const ChildServer& server, std::uint32_t index) {
  auto d = Device::connect(server.address(), index);
  EXPECT_TRUE(d) << server.address() << ": " << (d ? "" : d.error().what());
  return d ? d.value() : Device();
}

// Both hosts must give the values Burn's definitions give, and so each other's.
void compare(const std::vector<CaseResult>& ours, const std::vector<CaseResult>& reference) {
  ASSERT_EQ(ours.size(), reference.size());
  ASSERT_FALSE(ours.empty());
  std::size_t matched = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const auto& o = ours[i];
    const auto& r = reference[i];
    ASSERT_EQ(o.name, r.name);
    ASSERT_TRUE(o.values) << o.name << " on torchbridge: " << o.values.error().what();
    ASSERT_TRUE(r.values) << r.name << " on Burn's server: " << r.values.error().what();
    EXPECT_EQ(mismatch(o.values.value(), o.expected, o.tolerance), "") << o.name << " torchbridge";
    EXPECT_EQ(mismatch(r.values.value(), r.expected, r.tolerance), "") << r.name << " reference";
    const auto both = mismatch(o.values.value(), r.values.value(), o.tolerance);
    EXPECT_EQ(both, "") << o.name << ": torchbridge vs reference";
    if (both.empty()) ++matched;
  }
  std::printf("%zu of %zu results match between torchbridge and Burn's reference server\n", matched,
              ours.size());
}

TEST(ClientInterop, SameProgramOnBothHosts) {
  auto ours = start_ours();
  ASSERT_TRUE(ours.ok()) << ours.error();
  auto reference = start_reference();
  ASSERT_TRUE(reference.ok()) << reference.error();
  auto o0 = connect(ours, 0);
  auto o1 = connect(ours, 1);
  auto r0 = connect(reference, 0);
  auto r1 = connect(reference, 1);
  ASSERT_TRUE(o0.valid() && o1.valid() && r0.valid() && r1.valid());
  EXPECT_EQ(o0.device_count(), 2u);
  EXPECT_EQ(r0.device_count(), 2u);
  compare(run_program(o0, o1), run_program(r0, r1));
  EXPECT_TRUE(o0.sync());
  EXPECT_TRUE(r0.sync());
}

TEST(ClientInterop, TensorsMoveBetweenTorchbridgeAndBurnsServer) {
  auto ours = start_ours();
  ASSERT_TRUE(ours.ok()) << ours.error();
  auto reference = start_reference();
  ASSERT_TRUE(reference.ok()) << reference.error();
  auto o = connect(ours, 0);
  auto r = connect(reference, 0);
  ASSERT_TRUE(o.valid() && r.valid());
  // The program's transfer cases: ours -> Burn's and back, then Burn's -> ours and back.
  compare(run_program(o, r), run_program(r, o));
}

}  // namespace
}  // namespace tb::test
