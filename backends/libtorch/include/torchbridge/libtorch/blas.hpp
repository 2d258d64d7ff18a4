// OpenBLAS kernel selection on CPUs newer than the OpenBLAS build.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tb::backend::libtorch {

// OpenBLAS (Debian's LibTorch BLAS) picks its kernels from the CPU model at load time; a model
// newer than the OpenBLAS build (e.g. 0.3.21 on a 5th-gen Xeon) falls back to its generic SSE3
// "Prescott" kernels, about 5 times slower on GEMM. The kernel set to force instead
// (OPENBLAS_CORETYPE) when that happened on a CPU with AVX-512 or AVX2; nothing when the BLAS is
// not OpenBLAS, recognised the CPU, or was already told which kernels to use.
std::optional<std::string> openblas_core_override();

// OpenBLAS reads OPENBLAS_CORETYPE only when it loads: restart_with_runtime_env (threads.hpp)
// restarts the process with it.

struct CpuVectorFeatures {
  bool avx2_fma = false;
  bool avx512_skylakex = false;  // avx512 f, cd, bw, dq and vl
};
// The decision itself, from what OpenBLAS detected and what the CPU has.
std::optional<std::string> choose_openblas_core(std::string_view detected, CpuVectorFeatures cpu);

}  // namespace tb::backend::libtorch
