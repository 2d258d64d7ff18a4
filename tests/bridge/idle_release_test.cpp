// Memory hygiene between clients on the host's side: when the host turns idle it hands its
// allocator's free pages back (release_free_host_memory), so what a finished session used does not
// stay in its resident set. Without that, tcmalloc keeps freed spans for later requests and glibc
// keeps the arena it grew into; a host that served one large session would hold its peak for good.
#include <string>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/bridge_test_util.hpp"
#include "bridge/host_raw_client.hpp"
#include "client/child_server.hpp"

namespace tb::test {
namespace {

// The executable itself, as users run it: with the malloc it links (cmake/Allocator.cmake).
TEST(IdleRelease, AFinishedSessionsMemoryLeavesTheResidentSet) {
  if (kAddressSanitizer) GTEST_SKIP() << "ASan's allocator keeps freed memory in quarantine";
  ChildServer server({TB_TORCHBRIDGE_BIN, "serve", "--port", "0", "--threads", "1", "--log-level",
                      "warn", "--exit-on-stdin-eof"});
  ASSERT_TRUE(server.ok()) << server.error();
  const std::string pid = std::to_string(server.pid());
  const std::uint64_t before = status_bytes("VmRSS", pid);
  {
    RawClient c;
    ASSERT_TRUE(c.open_session(server.port(), 0x1d1e'0000'0000'0001));
    // 96 tensors of 4 MiB, each its own allocation, made on the host and synced.
    std::vector<Task> tasks;
    for (std::uint64_t id = 1; id <= 96; ++id) tasks.push_back(ones(id, std::uint64_t{1} << 20));
    tasks.push_back(SyncBackendTask{1, stream()});
    ASSERT_FALSE(c.send_tasks(std::move(tasks)));
    ASSERT_TRUE(c.response(30s)) << "the sync was answered";
    ASSERT_GT(status_bytes("VmRSS", pid), before + 300 * kMiB) << "the tensors were made";
  }  // The connection ends; the session's worker frees its tensors and the host turns idle.
  EXPECT_TRUE(eventually([&] { return status_bytes("VmRSS", pid) < before + 64 * kMiB; }, 15s))
      << "resident: " << status_bytes("VmRSS", pid) / kMiB << " MiB, " << before / kMiB
      << " MiB before the session";
  EXPECT_TRUE(server.alive()) << server.how_it_ended();
}

}  // namespace
}  // namespace tb::test
