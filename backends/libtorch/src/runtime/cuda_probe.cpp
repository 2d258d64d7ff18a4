// Why a CUDA device cannot be served, in the words a user can act on. ATen's hooks only say "no
// devices" whatever the cause (c10 logs the driver's error once and returns 0), so the driver is
// asked directly, through the same libcuda.so.1 the CUDA runtime would open.
#include <dlfcn.h>

#include <cstdlib>

#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>

#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::backend::libtorch {

namespace {

// "13.2" from the CUDA encoding 13020.
std::string cuda_version_text(long v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::string visible_devices_note() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? fmt::format(" (CUDA_VISIBLE_DEVICES={})", *v ? v : "\"\"") : "";
}

// The driver's own answer: loads, initialises and counts, or says which step failed.
std::string ask_driver(long runtime_version) {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) {
    return "no NVIDIA driver is installed (libcuda.so.1 cannot be loaded)";
  }
  using InitFn = int (*)(unsigned);
  using IntOutFn = int (*)(int*);
  using ErrorFn = int (*)(int, const char**);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto driver_version = reinterpret_cast<IntOutFn>(dlsym(lib, "cuDriverGetVersion"));
  auto count = reinterpret_cast<IntOutFn>(dlsym(lib, "cuDeviceGetCount"));
  auto error_name = reinterpret_cast<ErrorFn>(dlsym(lib, "cuGetErrorString"));
  if (!init || !driver_version || !count) return "the NVIDIA driver's libcuda.so.1 is incomplete";
  int version = 0;
  if (driver_version(&version) == 0 && runtime_version > 0 && version < runtime_version) {
    return fmt::format(
        "the NVIDIA driver supports CUDA {} but this LibTorch needs CUDA {}: "
        "update the driver",
        cuda_version_text(version), cuda_version_text(runtime_version));
  }
  if (const int rc = init(0); rc != 0) {
    const char* text = nullptr;
    if (error_name) error_name(rc, &text);
    return fmt::format("the NVIDIA driver (CUDA {}) finds no usable GPU: {}{}",
                       cuda_version_text(version), text ? text : fmt::format("error {}", rc),
                       visible_devices_note());
  }
  int n = 0;
  count(&n);
  return fmt::format("the NVIDIA driver (CUDA {}) sees {} GPU(s){}", cuda_version_text(version), n,
                     visible_devices_note());
}

}  // namespace

bool cuda_built() {
  return at::detail::getCUDAHooks().hasCUDART();
}

std::string cuda_runtime_version() {
  return cuda_built() ? cuda_version_text(at::detail::getCUDAHooks().versionCUDART()) : "";
}

std::string describe_libtorch() {
  return cuda_built()
             ? fmt::format("LibTorch {} with CUDA {}", torch_version(), cuda_runtime_version())
             : fmt::format("LibTorch {}, CPU only", torch_version());
}

std::string cuda_unavailable_reason() {
  if (!cuda_built()) {
    return fmt::format(
        "this LibTorch build ({}) has no CUDA; build against the torch wheel "
        "(docs/libtorch.md)",
        torch_version());
  }
  return ask_driver(at::detail::getCUDAHooks().versionCUDART());
}

}  // namespace tb::backend::libtorch
