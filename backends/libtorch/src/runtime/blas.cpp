// Undoing OpenBLAS's fallback to generic kernels on CPUs it does not know (see blas.hpp).
#include <dlfcn.h>
#include <strings.h>

#include <cstdlib>

#include "torchbridge/libtorch/blas.hpp"

namespace tb::backend::libtorch {

std::optional<std::string> choose_openblas_core(std::string_view detected, CpuVectorFeatures cpu) {
  // Only the generic fallback is overridden: a core OpenBLAS did recognise is its own best choice.
  const std::string name(detected);
  if (strcasecmp(name.c_str(), "Prescott") != 0) return std::nullopt;
  if (cpu.avx512_skylakex) return "SkylakeX";
  if (cpu.avx2_fma) return "Haswell";
  return std::nullopt;
}

std::optional<std::string> openblas_core_override() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return std::nullopt;
  // Looked up at run time: LibTorch builds with MKL (PyTorch's) have no OpenBLAS at all.
  using CoreName = char* (*)();
  auto* core_name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (core_name == nullptr) return std::nullopt;
  const char* detected = core_name();
  if (detected == nullptr) return std::nullopt;
  CpuVectorFeatures cpu;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  cpu.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  cpu.avx512_skylakex = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vl");
#endif
  return choose_openblas_core(detected, cpu);
}

}  // namespace tb::backend::libtorch
