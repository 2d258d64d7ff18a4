// Undoing OpenBLAS's fallback to generic kernels on CPUs it does not know (see blas.hpp).
#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

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

std::optional<std::string> restart_for_openblas_core(char** argv) {
  if (argv == nullptr || std::getenv("TB_KEEP_BLAS_KERNELS") != nullptr) return std::nullopt;
  const auto core = openblas_core_override();
  if (!core) return std::nullopt;
  setenv("OPENBLAS_CORETYPE", core->c_str(), 1);
  setenv("TB_OPENBLAS_CORE_FORCED", core->c_str(), 1);
  execv("/proc/self/exe", argv);
  const int err = errno;
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("TB_OPENBLAS_CORE_FORCED");
  return fmt::format(
      "OpenBLAS runs its generic kernels on this CPU; restarting with its {} kernels failed: {}",
      *core, std::strerror(err));
}

}  // namespace tb::backend::libtorch
