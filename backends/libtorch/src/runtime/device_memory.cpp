// A device's memory as LibTorch's allocator for it sees it. CUDA's caching allocator is reached
// through c10's device-generic interface (LibTorch 2.9 and later), so this file needs no CUDA
// headers and compiles the same on a CPU-only LibTorch.
#include "runtime/device_memory.hpp"

#if __has_include(<c10/core/CachingDeviceAllocator.h>)
#include <c10/core/CachingDeviceAllocator.h>
#define TB_HAVE_DEVICE_ALLOCATOR 1
#endif

namespace tb::backend::libtorch {

#ifdef TB_HAVE_DEVICE_ALLOCATOR
namespace {
// The allocator of a device that has one and has started; null otherwise (an allocator that never
// allocated has nothing to report, and asking it would create a CUDA context for nothing).
c10::DeviceAllocator* started_allocator(const at::Device& device) {
  if (!device.is_cuda()) return nullptr;
  auto* a = dynamic_cast<c10::DeviceAllocator*>(c10::GetAllocator(device.type()));
  return a && a->initialized() ? a : nullptr;
}
}  // namespace

DeviceMemory device_memory(const at::Device& device) {
  DeviceMemory m;
  if (!device.is_cuda()) return m;
  const c10::DeviceIndex index = device.index() < 0 ? 0 : device.index();
  auto* a = dynamic_cast<c10::DeviceAllocator*>(c10::GetAllocator(device.type()));
  if (a == nullptr) return m;
  m.total = a->getMemoryInfo(index).second;
  if (started_allocator(device)) {
    const auto stats = a->getDeviceStats(index);
    constexpr auto kAll = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    m.allocated = static_cast<std::uint64_t>(stats.allocated_bytes[kAll].current);
    m.reserved = static_cast<std::uint64_t>(stats.reserved_bytes[kAll].current);
  }
  return m;
}

void release_cached_memory(const at::Device& device) {
  if (auto* a = started_allocator(device)) a->emptyCache();
}
#else
DeviceMemory device_memory(const at::Device&) {
  return {};
}
void release_cached_memory(const at::Device&) {}
#endif

}  // namespace tb::backend::libtorch
