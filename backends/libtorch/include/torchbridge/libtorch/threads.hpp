// How a host shares the machine's cores: ATen's intra-op pool, the BLAS's own pool, and everything
// else (session and network threads, and on a small machine often the client itself).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tb::backend::libtorch {

// Oversubscription, not parallelism, decided the speed of small machines: OpenMP's workers spin
// for a while after every parallel region (libgomp's default), and OpenBLAS's pthread workers
// busy-wait for 2^28 cycles after every GEMM while using as many threads as the machine has
// cores whatever ATen's setting. On 2 cores those spinning threads took the cores the session
// and the client needed: `--threads 2` made a 1000-op chain 5 to 28 times slower than 1 thread.
// The policy: the BLAS gets the intra-op count ATen gets, and with more than one thread both pools
// wait passively (sleep as soon as their work is done).

// `--threads 0`: LibTorch's default (the physical cores it may use), less one core left to the
// network and session threads and, on a small machine, the client. Measured on 2 cores with the
// client beside the host, ATen at 2 threads was slower than at 1 on every workload, on LibTorch
// 1.13 and on 2.15 alike (docs/benchmarks.md, "Threads"); on a GPU machine's 16 cores the kernels
// run on the GPU and 15 threads lose nothing.
int default_threads();

// The environment variables (name, value) a process running `threads` intra-op threads must start
// with, because libgomp and OpenBLAS read them only when they load; those `lookup` already finds
// set are the user's choice and are left alone. `threads` is the count to run with (resolved: not
// 0).
std::vector<std::pair<std::string, std::string>> thread_env(
    int threads, const std::function<const char*(const char*)>& lookup);

// Restarts this process (`/proc/self/exe` with `argv`) when it lacks the environment the runtime
// libraries must load with: OpenBLAS's kernels (openblas_core_override) and the thread policy for
// `threads` intra-op threads (0: default_threads()). The restarted process finds
// TB_RUNTIME_ENV_SET naming what was set ("NAME=VALUE ..."). Returns only when nothing needed
// setting (nullopt) or the restart failed (why). TB_KEEP_BLAS_KERNELS keeps OpenBLAS's kernel
// choice; the thread variables are always honoured when the user set them.
std::optional<std::string> restart_with_runtime_env(char** argv, int threads);

struct ThreadSettings {
  int aten = 0;  // ATen's intra-op threads
  int blas = 0;  // OpenBLAS's threads (0: the BLAS is not OpenBLAS, or cannot be told)
  std::string omp_wait_policy;  // OMP_WAIT_POLICY as the process started ("": libgomp's default)
};

// Sets ATen's intra-op threads to `threads` (0: default_threads()) and OpenBLAS's to the same
// count, and says what is in force.
ThreadSettings apply_thread_policy(int threads);

// "aten 2, blas 2, wait passive": for start-up lines and benchmark records.
std::string describe(const ThreadSettings& settings);

}  // namespace tb::backend::libtorch
