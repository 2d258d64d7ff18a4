#include "executor.hpp"

#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include "dtype.hpp"
#include "lowering.hpp"
#include "torchbridge/ir/visit.hpp"

namespace tb::backend::libtorch {

namespace {
constexpr std::size_t kErrorsKept = 8;

// Splits an op's tensors into inputs and outputs.
struct Resolver final : ir::ConstOpVisitor {
  std::vector<const ir::TensorIr*> inputs;
  std::vector<const ir::TensorIr*> outputs;
  void tensor(const ir::TensorIr& t, bool is_output) override {
    (is_output ? outputs : inputs).push_back(&t);
  }
};

at::Generator make_generator(const at::Device& device) {
  return at::globalContext().defaultGenerator(device).clone();
}
}  // namespace

class LibTorchExecutor::Context final : public OpContext {
 public:
  using OpContext::OpContext;
  std::vector<std::pair<const ir::TensorIr*, at::Tensor>> produced;

 protected:
  void store(const ir::TensorIr& t, at::Tensor value) override {
    for (auto& p : produced) {
      if (p.first->id.value == t.id.value) {
        p.second = std::move(value);
        return;
      }
    }
    produced.emplace_back(&t, std::move(value));
  }
};

LibTorchExecutor::LibTorchExecutor(at::Device device,
                                   std::shared_ptr<const CustomOpRegistry> custom_ops)
    : device_(device), custom_ops_(std::move(custom_ops)), generator_(make_generator(device)) {
  handles_.reserve(1024);
}

LibTorchExecutor::~LibTorchExecutor() = default;

Result<const LibTorchExecutor::Handle*> LibTorchExecutor::lookup(const ir::TensorIr& t) const {
  const auto it = handles_.find(t.id.value);
  if (it == handles_.end()) {
    return make_error(ErrorCode::kNotFound,
                      "tensor #{} is unknown to this session (never registered, or already freed)",
                      t.id.value);
  }
  if (it->second.error) {
    Error e = *it->second.error;
    e.message = fmt::format("tensor #{} holds no value because an earlier operation failed: {}",
                            t.id.value, it->second.error->what());
    e.context.clear();
    return e;
  }
  return &it->second;
}

void LibTorchExecutor::poison(std::uint64_t id, const std::shared_ptr<const Error>& error) {
  handles_[id] = Handle{at::Tensor(), error};
}

void LibTorchExecutor::record(const Error& error) {
  ++stats_.failed_ops;
  ++error_count_;
  if (errors_.size() < kErrorsKept) errors_.push_back(error);
}

Status LibTorchExecutor::register_tensor(ir::TensorId id, const ir::TensorData& data) {
  auto tensor = tensor_from_data(data, device_);
  if (!tensor) {
    Error e = with_context(tensor.error(), fmt::format("RegisterTensor #{}", id.value));
    poison(id.value, std::make_shared<const Error>(e));
    record(e);
    return e;
  }
  handles_[id.value] = Handle{std::move(tensor).value(), nullptr};
  return ok();
}

Status LibTorchExecutor::register_alias(ir::TensorId new_id, ir::TensorId src) {
  const auto it = handles_.find(src.value);
  if (it == handles_.end()) {
    Error e = make_error(ErrorCode::kNotFound, "alias source tensor #{} is unknown", src.value);
    e.context = fmt::format("RegisterAlias #{}", new_id.value);
    poison(new_id.value, std::make_shared<const Error>(e));
    record(e);
    return e;
  }
  Handle copy = it->second;  // shares the tensor (and the poison, if any)
  handles_[new_id.value] = std::move(copy);
  return ok();
}

Result<ir::TensorData> LibTorchExecutor::read_tensor(const ir::TensorIr& t) {
  auto handle = lookup(t);
  if (!handle) return handle.error();
  const at::Tensor tensor = handle.value()->tensor;
  if (t.status == ir::TensorStatus::ReadWrite) handles_.erase(t.id.value);
  if (!same_shape(tensor.sizes(), t.shape.dims)) {
    return make_error(ErrorCode::kInvalidArgument, "tensor #{} has shape {}, read as [{}]",
                      t.id.value, shape_string(tensor.sizes()), fmt::join(t.shape.dims, ", "));
  }
  try {
    return data_from_tensor(tensor, t.dtype);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kExecution, "reading tensor #{}: {}", t.id.value, e.what());
  }
}

Status LibTorchExecutor::execute(const ir::OperationIr& op) {
  ++stats_.ops;
  switch (op.category()) {
    case ir::OpCategory::Init:
      return ok();  // registered by RegisterTensor already
    case ir::OpCategory::Drop:
      handles_.erase(op.as<ir::TensorIr>().id.value);
      return ok();
    default:
      break;
  }

  Resolver tensors;
  ir::visit(op, tensors);
  Context ctx(op, device_, generator_, custom_ops_.get());
  ctx.inputs.reserve(tensors.inputs.size());

  Status status = ok();
  for (const ir::TensorIr* t : tensors.inputs) {
    auto handle = lookup(*t);
    if (!handle) {
      status = handle.error();
      break;
    }
    ctx.inputs.push_back({t->id.value, &handle.value()->tensor});
  }
  if (status) {
    const auto& entry = lowering_table().entry(op.kind);
    try {
      status = entry.fn ? entry.fn(ctx, op)
                        : Status(make_error(ErrorCode::kUnsupported, "no lowering registered"));
    } catch (const c10::Error& e) {
      status = make_error(ErrorCode::kExecution, "{}", e.what_without_backtrace());
    } catch (const std::exception& e) {
      status = make_error(ErrorCode::kExecution, "{}", e.what());
    }
  }
  if (status) {
    for (const ir::TensorIr* o : tensors.outputs) {
      bool found = false;
      for (const auto& p : ctx.produced) found = found || p.first->id.value == o->id.value;
      if (!found) {
        status = make_error(ErrorCode::kInternal, "the lowering did not produce output #{}",
                            o->id.value);
        break;
      }
    }
  }

  // The client counts a ReadWrite input as consumed whether or not the op succeeded.
  for (const ir::TensorIr* t : tensors.inputs) {
    if (t->status == ir::TensorStatus::ReadWrite) handles_.erase(t->id.value);
  }

  if (!status) {
    Error e = with_context(status.error(), op.name());
    auto shared = std::make_shared<const Error>(e);
    for (const ir::TensorIr* o : tensors.outputs) poison(o->id.value, shared);
    record(e);
    return e;
  }
  for (auto& [t, value] : ctx.produced) handles_[t->id.value] = Handle{std::move(value), nullptr};
  return ok();
}

void LibTorchExecutor::device_sync() {
  if (device_.is_cuda()) at::detail::getCUDAHooks().deviceSynchronize(device_.index());
}

Status LibTorchExecutor::sync() {
  try {
    device_sync();
  } catch (const std::exception& e) {
    record(make_error(ErrorCode::kExecution, "device synchronisation failed: {}", e.what()));
  }
  if (error_count_ == 0) return ok();
  Error first = errors_.front();
  std::string message = error_count_ == 1
                            ? first.what()
                            : fmt::format("{} operations failed since the last sync; the first: {}",
                                          error_count_, first.what());
  errors_.clear();
  error_count_ = 0;
  return Error{first.code, std::move(message), {}};
}

void LibTorchExecutor::fail(const Error& error, const std::vector<ir::TensorId>& poisoned) {
  auto shared = std::make_shared<const Error>(error);
  for (const auto& id : poisoned) poison(id.value, shared);
  record(error);
}

ir::DTypeUsageSet LibTorchExecutor::dtype_usage(const ir::DType& dtype) {
  using ir::DTypeKind;
  const std::uint8_t general = ir::kUsageStorage | ir::kUsageArithmetic;
  switch (dtype.kind) {
    case DTypeKind::F16:
    case DTypeKind::BF16:
    case DTypeKind::F32:
      return {static_cast<std::uint8_t>(general | (device_.is_cuda() ? ir::kUsageAccelerated : 0))};
    case DTypeKind::QFloat:
      return {0};  // completed by the quantization lowering
    default:
      return {general};
  }
}

void LibTorchExecutor::seed(std::uint64_t seed) {
  std::lock_guard<std::mutex> lock(generator_.mutex());
  generator_.set_current_seed(seed);
}

Result<std::shared_ptr<const Transferable>> LibTorchExecutor::take_for_transfer(
    const ir::TensorIr& t) {
  auto handle = lookup(t);
  if (!handle) return handle.error();
  auto out = std::make_shared<const TorchTransferable>(handle.value()->tensor, t.dtype);
  if (t.status == ir::TensorStatus::ReadWrite) handles_.erase(t.id.value);
  return std::shared_ptr<const Transferable>(std::move(out));
}

Status LibTorchExecutor::register_transferred(ir::TensorId id, const Transferable& tensor) {
  const auto* torch = dynamic_cast<const TorchTransferable*>(&tensor);
  if (!torch) {
    return make_error(ErrorCode::kInvalidArgument, "tensor #{} comes from another backend",
                      id.value);
  }
  try {
    handles_[id.value] = Handle{torch->tensor().to(device_), nullptr};
  } catch (const std::exception& e) {
    Error err = make_error(ErrorCode::kExecution, "moving tensor #{} to {}: {}", id.value,
                           device_.str(), e.what());
    poison(id.value, std::make_shared<const Error>(err));
    record(err);
    return err;
  }
  return ok();
}

Result<std::optional<ir::ProfileToken>> LibTorchExecutor::profile_start() {
  device_sync();
  const std::uint64_t id = next_window_++;
  windows_[id] = std::chrono::steady_clock::now();
  return std::optional<ir::ProfileToken>(ir::ProfileToken{id, 0});
}

Result<std::optional<ir::Duration>> LibTorchExecutor::profile_end(const ir::ProfileToken& token,
                                                                  const ir::ProfileOptions&) {
  const auto it = windows_.find(token.id);
  if (it == windows_.end()) {
    return make_error(ErrorCode::kNotFound, "profiling window {} is not open", token.id);
  }
  // Every op runs eagerly here, so there is no queue to flush beyond the device's.
  device_sync();
  const auto elapsed = std::chrono::steady_clock::now() - it->second;
  windows_.erase(it);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
  return std::optional<ir::Duration>(ir::Duration{static_cast<std::uint64_t>(ns / 1000000000),
                                                  static_cast<std::uint32_t>(ns % 1000000000)});
}

void LibTorchExecutor::profile_abandon(const ir::ProfileToken& token) {
  windows_.erase(token.id);
}

ExecutorStats LibTorchExecutor::stats() const {
  ExecutorStats s = stats_;
  s.live_tensors = handles_.size();
  s.live_bytes = 0;
  for (const auto& [id, h] : handles_) {
    if (h.tensor.defined()) {
      s.live_bytes += static_cast<std::uint64_t>(h.tensor.numel()) * h.tensor.element_size();
    }
  }
  return s;
}

at::Tensor LibTorchExecutor::stored(std::uint64_t id) const {
  const auto it = handles_.find(id);
  return it == handles_.end() ? at::Tensor() : it->second.tensor;
}

}  // namespace tb::backend::libtorch
