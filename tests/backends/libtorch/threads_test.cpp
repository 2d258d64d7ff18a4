#include <sched.h>

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "torchbridge/libtorch/threads.hpp"

namespace tb::backend::libtorch {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

Env env_for(int threads, std::map<std::string, std::string> set) {
  return thread_env(threads, [&](const char* name) -> const char* {
    const auto it = set.find(name);
    return it == set.end() ? nullptr : it->second.c_str();
  });
}

TEST(ThreadPolicy, OneThreadNeedsNoRestart) {
  EXPECT_TRUE(env_for(1, {}).empty());
}

TEST(ThreadPolicy, SeveralThreadsWaitPassively) {
  const Env want{{"OMP_WAIT_POLICY", "PASSIVE"}, {"OPENBLAS_THREAD_TIMEOUT", "4"}};
  EXPECT_EQ(env_for(2, {}), want);
  EXPECT_EQ(env_for(64, {}), want);
}

TEST(ThreadPolicy, TheUsersOwnSettingsAreKept) {
  EXPECT_EQ(env_for(2, {{"OMP_WAIT_POLICY", "ACTIVE"}}), (Env{{"OPENBLAS_THREAD_TIMEOUT", "4"}}));
  EXPECT_EQ(env_for(2, {{"GOMP_SPINCOUNT", "10000"}, {"OPENBLAS_THREAD_TIMEOUT", "28"}}), Env{});
}

// The BLAS follows ATen's count: before, OpenBLAS ran as many threads as the machine has cores
// whatever `--threads` said, and its spinning workers took the cores of 1-thread sessions.
TEST(ThreadPolicy, TheBlasGetsAtensThreadCount) {
  const int before = at::get_num_threads();
  const auto one = apply_thread_policy(1);
  EXPECT_EQ(one.aten, 1);
  const bool openblas = dlsym(RTLD_DEFAULT, "openblas_get_num_threads") != nullptr;
  if (openblas) {
    EXPECT_EQ(one.blas, 1);
  } else {
    EXPECT_EQ(one.blas, 0);
  }
  const auto two = apply_thread_policy(2);
  EXPECT_EQ(two.aten, 2);
  if (openblas) {
    EXPECT_EQ(two.blas, 2);
  }
  EXPECT_NE(describe(two).find("aten 2"), std::string::npos);
  apply_thread_policy(before);
}

// --threads 0 leaves a core to the network threads and clients: on 2 cores (LibTorch 2.15 takes
// both by default) it is 1 thread, never more than the CPUs this process may use less one.
TEST(ThreadPolicy, TheDefaultLeavesOneCore) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int cpus = CPU_COUNT(&set);
  const int before = at::get_num_threads();
  const int threads = default_threads();
  EXPECT_GE(threads, 1);
  EXPECT_LE(threads, std::max(1, cpus - 1));
  EXPECT_EQ(apply_thread_policy(0).aten, threads);
  apply_thread_policy(before);
}

}  // namespace
}  // namespace tb::backend::libtorch
