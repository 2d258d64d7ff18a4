// The LibTorch backend: Burn's IR lowered to ATen, on CPU and, where LibTorch has it, CUDA.
#pragma once

#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>

#include "torchbridge/backend/backend.hpp"

namespace tb::backend::libtorch {

// What a custom-op handler receives: the op as the client declared it, its input tensors in order
// (on the session's device, in their storage dtype) and the device.
struct CustomOpCall {
  const ir::CustomOpIr& op;
  std::vector<at::Tensor> inputs;
  at::Device device;
};

// Returns one tensor per declared output, in order. The host checks them against the declared
// shapes and dtypes; an error (or an exception) poisons the outputs, never the session.
using CustomOpHandler = std::function<Result<std::vector<at::Tensor>>(const CustomOpCall&)>;

// Custom ops by id (`OperationIr::Custom`), shared read-only by every session of a host.
class CustomOpRegistry {
 public:
  // Replaces any handler under `id`.
  void add(const std::string& id, CustomOpHandler handler);
  // In one step, so that no call sees half of a change: removes `remove` (a later call of one of
  // them fails with `why`, when given), then adds `add`. A model version's ids move together.
  void replace(const std::vector<std::string>& remove,
               std::vector<std::pair<std::string, CustomOpHandler>> add, const std::string& why);
  // nullptr when none is registered. A call holds its handler (and what it captured) until it
  // returns, whatever replaces it meanwhile.
  std::shared_ptr<const CustomOpHandler> find(const std::string& id) const;
  // The same, and when there is none, why `id` is no longer served (`replace`'s `why`; empty for
  // an id never served), read in the same step.
  std::shared_ptr<const CustomOpHandler> find(const std::string& id, std::string& why) const;
  std::vector<std::string> ids() const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const CustomOpHandler>> handlers_;
  // Bounded by the ids ever served (a repository's names), never by what clients ask.
  std::unordered_map<std::string, std::string> removed_;
};

struct BackendOptions {
  // "cpu", "cuda", "cuda:N".
  std::string device = "cpu";
  std::shared_ptr<CustomOpRegistry> custom_ops;
  // Chains of element-wise f32 ops on small CPU tensors are deferred and run as one loop
  // (elementwise_run.hpp), whether they come op by op or in a graph replay. Off: every op runs
  // eagerly through its lowering (the reference the fused path is tested against).
  bool fuse_elementwise = true;
};

Result<std::unique_ptr<Backend>> make_backend(const BackendOptions& options);

// The LibTorch build we run on.
std::string torch_version();
// Whether this binary carries LibTorch's CUDA kernels (the wheel's libtorch_cuda), whatever the
// machine has; its CUDA runtime's version ("13.2"), empty when not.
bool cuda_built();
std::string cuda_runtime_version();
// "LibTorch 2.15.0 with CUDA 13.2" or "LibTorch 1.13.0, CPU only": for --version and logs.
std::string describe_libtorch();
// Whether a GPU can be used now (a CUDA build, a driver, at least one visible device).
bool cuda_available();
int cuda_device_count();
// Why no CUDA device can be served here: no CUDA in this build, no driver, a driver too old for
// this LibTorch's CUDA, or none visible (cuda_probe.cpp). For start-up errors.
std::string cuda_unavailable_reason();

// Whether a leaf is lowered, and why not when it is not; from the lowering tables.
struct LoweringStatus {
  bool lowered = false;
  std::string note;
};
LoweringStatus lowering_status(ir::OpKind kind);

}  // namespace tb::backend::libtorch
