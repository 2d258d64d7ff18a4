#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>

#include "exec/executor.hpp"
#include "runtime/aten_guard.hpp"
#include "runtime/device_memory.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

#if __has_include(<torch/version.h>)
#include <torch/version.h>
#endif

namespace tb::backend::libtorch {

void CustomOpRegistry::add(const std::string& id, CustomOpHandler handler) {
  std::unique_lock lock(mutex_);
  handlers_[id] = std::make_shared<const CustomOpHandler>(std::move(handler));
}

void CustomOpRegistry::replace(const std::vector<std::string>& remove,
                               std::vector<std::pair<std::string, CustomOpHandler>> add,
                               const std::string& why) {
  std::vector<std::shared_ptr<const CustomOpHandler>> made;
  made.reserve(add.size());
  for (auto& [id, handler] : add) {
    made.push_back(std::make_shared<const CustomOpHandler>(std::move(handler)));
  }
  // The old handlers are released after the lock: dropping the last reference to a model frees
  // its weights, which must not stall every session's lookups.
  std::vector<std::shared_ptr<const CustomOpHandler>> dropped;
  {
    std::unique_lock lock(mutex_);
    for (const auto& id : remove) {
      if (auto it = handlers_.find(id); it != handlers_.end()) {
        dropped.push_back(std::move(it->second));
        handlers_.erase(it);
      }
      if (!why.empty()) removed_[id] = why;
    }
    for (std::size_t i = 0; i < add.size(); ++i) {
      removed_.erase(add[i].first);
      auto& slot = handlers_[add[i].first];
      if (slot) dropped.push_back(std::move(slot));
      slot = std::move(made[i]);
    }
  }
}

std::shared_ptr<const CustomOpHandler> CustomOpRegistry::find(const std::string& id,
                                                              std::string& why) const {
  std::shared_lock lock(mutex_);
  if (const auto it = handlers_.find(id); it != handlers_.end()) return it->second;
  const auto gone = removed_.find(id);
  why = gone == removed_.end() ? std::string() : gone->second;
  return nullptr;
}

std::shared_ptr<const CustomOpHandler> CustomOpRegistry::find(const std::string& id) const {
  std::shared_lock lock(mutex_);
  const auto it = handlers_.find(id);
  return it == handlers_.end() ? nullptr : it->second;
}

std::vector<std::string> CustomOpRegistry::ids() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [id, h] : handlers_) out.push_back(id);
  return out;
}

std::string torch_version() {
#ifdef TORCH_VERSION
  return TORCH_VERSION;
#else
  return "unknown";
#endif
}

bool cuda_available() {
  return at::detail::getCUDAHooks().hasCUDA();
}

int cuda_device_count() {
  return cuda_available() ? at::detail::getCUDAHooks().getNumGPUs() : 0;
}

namespace {

class LibTorchBackend final : public Backend {
 public:
  LibTorchBackend(at::Device device, std::shared_ptr<CustomOpRegistry> custom_ops, bool fuse)
      : device_(device), custom_ops_(std::move(custom_ops)), fuse_(fuse && device.is_cpu()) {}

  std::string device_name() const override { return device_.str(); }

  // Burn's reference CPU backend (Flex) announces the same defaults, so an unmodified program
  // gets the dtypes it gets there (I32 indices and ints; ATen's int64 is converted at the edges).
  ir::DeviceSettings settings() const override {
    ir::DeviceSettings s;
    s.float_dtype = ir::FloatDType::F32;
    s.int_dtype = ir::IntDType::I32;
    s.bool_dtype = ir::BoolStore::Native;
    s.quantization = ir::QuantConfig{ir::default_quant_scheme(), ir::QuantPropagation::Inhibit};
    return s;
  }

  std::unique_ptr<Executor> new_executor() override {
    return std::make_unique<LibTorchExecutor>(device_, custom_ops_, fuse_);
  }

  // Both are called from the host's own threads (sweeper, session ends, /metrics): a failing
  // driver call is an unknown figure or a cache left for the next sweep, never an exception.
  DeviceMemory memory() const override {
    auto m = aten_guard("", [&] { return device_memory(device_); });
    return m ? m.value() : DeviceMemory{};
  }
  void release_cached_memory() override {
    (void)aten_guard("", [&] { libtorch::release_cached_memory(device_); });
  }

 private:
  at::Device device_;
  std::shared_ptr<CustomOpRegistry> custom_ops_;
  bool fuse_;
};

}  // namespace

Result<std::unique_ptr<Backend>> make_backend(const BackendOptions& options) {
  TB_TRY_ASSIGN(c10::optional<at::Device> device, parse_device(options.device));
  if (device->is_cuda()) {
    if (!cuda_available()) {
      return make_error(cuda_built() ? ErrorCode::kInvalidArgument : ErrorCode::kUnsupported,
                        "device {}: {}", options.device, cuda_unavailable_reason());
    }
    if (!device->has_index()) device = at::Device(at::kCUDA, 0);
    if (device->index() >= cuda_device_count()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "device {}: no such GPU; {} CUDA device(s) are visible (cuda:0 to cuda:{})",
                        options.device, cuda_device_count(), cuda_device_count() - 1);
    }
  } else if (!device->is_cpu()) {
    return make_error(ErrorCode::kUnsupported, "device {}: only cpu and cuda:N are served",
                      options.device);
  }
  auto registry = options.custom_ops ? options.custom_ops : std::make_shared<CustomOpRegistry>();
  return std::unique_ptr<Backend>(
      std::make_unique<LibTorchBackend>(*device, std::move(registry), options.fuse_elementwise));
}

}  // namespace tb::backend::libtorch
