// A device's memory as LibTorch's allocator sees it, and giving its cache back to the driver.
#pragma once

#include <ATen/Device.h>

#include "torchbridge/backend/backend.hpp"

namespace tb::backend::libtorch {

// Total, allocated and reserved bytes of a CUDA device; all zero on the CPU (ATen's CPU allocator
// keeps no statistics: the host counts its sessions' tensors itself).
DeviceMemory device_memory(const at::Device& device);
// Frees the blocks CUDA's caching allocator holds for no tensor (every device's: the allocator has
// one cache). Synchronises the device; a no-op on the CPU and before the allocator started.
void release_cached_memory(const at::Device& device);

}  // namespace tb::backend::libtorch
