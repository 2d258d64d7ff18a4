// The thread policy (see threads.hpp) and the one restart that gives the runtime libraries the
// environment they read at load time.
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include "torchbridge/libtorch/blas.hpp"
#include "torchbridge/libtorch/threads.hpp"

namespace tb::backend::libtorch {
namespace {

constexpr const char* kSetMarker = "TB_RUNTIME_ENV_SET";

// OpenBLAS's thread calls, looked up at run time: LibTorch builds with MKL have no OpenBLAS.
template <class Fn>
Fn openblas_fn(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

int resolved_threads(int threads) {
  return threads > 0 ? threads : default_threads();
}

}  // namespace

int default_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0
                       ? CPU_COUNT(&set)
                       : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return std::max(1, std::min(at::get_num_threads(), cpus - 1));
}

std::vector<std::pair<std::string, std::string>> thread_env(
    int threads, const std::function<const char*(const char*)>& lookup) {
  std::vector<std::pair<std::string, std::string>> env;
  // One thread has no workers to wait: nothing to set, and no restart.
  if (threads <= 1) return env;
  const auto unset = [&](const char* name) { return lookup(name) == nullptr; };
  // libgomp's default spins for a while after each parallel region (GOMP_SPINCOUNT is the
  // user's finer knob, so either variable counts as a choice made).
  if (unset("OMP_WAIT_POLICY") && unset("GOMP_SPINCOUNT"))
    env.emplace_back("OMP_WAIT_POLICY", "PASSIVE");
  // OpenBLAS's workers spin 2^N cycles before they sleep; 4 is its smallest N.
  if (unset("OPENBLAS_THREAD_TIMEOUT")) env.emplace_back("OPENBLAS_THREAD_TIMEOUT", "4");
  return env;
}

std::optional<std::string> restart_with_runtime_env(char** argv, int threads) {
  if (argv == nullptr || std::getenv(kSetMarker) != nullptr) return std::nullopt;
  auto env = thread_env(resolved_threads(threads), [](const char* n) { return std::getenv(n); });
  if (std::getenv("TB_KEEP_BLAS_KERNELS") == nullptr) {
    if (const auto core = openblas_core_override()) env.emplace_back("OPENBLAS_CORETYPE", *core);
  }
  if (env.empty()) return std::nullopt;
  std::string what;
  for (const auto& [name, value] : env) {
    setenv(name.c_str(), value.c_str(), 1);
    what += fmt::format("{}{}={}", what.empty() ? "" : " ", name, value);
  }
  setenv(kSetMarker, what.c_str(), 1);
  execv("/proc/self/exe", argv);
  const int err = errno;
  for (const auto& [name, value] : env) unsetenv(name.c_str());
  unsetenv(kSetMarker);
  return fmt::format("restarting with {} (read only when the runtime loads) failed: {}", what,
                     std::strerror(err));
}

ThreadSettings apply_thread_policy(int threads) {
  at::set_num_threads(resolved_threads(threads));
  ThreadSettings s;
  s.aten = at::get_num_threads();
  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  if (auto set = openblas_fn<SetThreads>("openblas_set_num_threads")) set(s.aten);
  if (auto get = openblas_fn<GetThreads>("openblas_get_num_threads")) s.blas = get();
  if (const char* policy = std::getenv("OMP_WAIT_POLICY")) s.omp_wait_policy = policy;
  return s;
}

std::string describe(const ThreadSettings& s) {
  return fmt::format("aten {}, blas {}, omp wait {}", s.aten,
                     s.blas > 0 ? std::to_string(s.blas) : std::string("n/a"),
                     s.omp_wait_policy.empty() ? std::string("default") : s.omp_wait_policy);
}

}  // namespace tb::backend::libtorch
