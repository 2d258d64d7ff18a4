#include "executor.hpp"

#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include "dtype.hpp"
#include "lowering.hpp"
#include "torchbridge/ir/visit.hpp"

namespace tb::backend::libtorch {

namespace {

using TensorIrs = std::vector<const ir::TensorIr*>;

// Splits an op's tensors into inputs and outputs (into the given vectors, emptied first).
struct Resolver final : ir::ConstOpVisitor {
  TensorIrs& inputs;
  TensorIrs& outputs;
  Resolver(TensorIrs& in, TensorIrs& out) : inputs(in), outputs(out) {
    inputs.clear();
    outputs.clear();
  }
  void tensor(const ir::TensorIr& t, bool is_output) override {
    (is_output ? outputs : inputs).push_back(&t);
  }
};

at::Generator make_generator(const at::Device& device) {
  return at::globalContext().defaultGenerator(device).clone();
}

// Ops that only move values: on a per-tensor quantized input their output keeps its scale, as
// burn-flex's q_reshape, q_swap_dims, q_select... keep it (block schemes requantize).
bool moves_values(ir::OpKind kind) {
  using ir::BaseOp;
  using ir::OpCategory;
  constexpr BaseOp kMoves[] = {BaseOp::Reshape, BaseOp::SwapDims, BaseOp::Permute, BaseOp::Flip,
                               BaseOp::Expand,  BaseOp::Unfold,   BaseOp::Slice,   BaseOp::Select,
                               BaseOp::Gather,  BaseOp::RepeatDim};
  for (BaseOp b : kMoves)
    if (kind == ir::leaf_of(OpCategory::BaseFloat, b)) return true;
  return false;
}

// The op as it runs on dequantized values: quantized inputs (and outputs, which are requantized
// afterwards) in the float dtype `compute`.
struct Dequantized final : ir::OpVisitor {
  const std::vector<bool>* quantized_inputs = nullptr;
  ir::DType compute;
  bool keep_outputs = false;
  std::size_t input = 0;
  void tensor(ir::TensorIr& t, bool is_output) override {
    if (!is_output) {
      if ((*quantized_inputs)[input++]) t.dtype = compute;
    } else if (t.dtype.is_quantized() && !keep_outputs) {
      t.dtype = compute;
    }
  }
};
}  // namespace

struct Produced {
  const ir::TensorIr* t;
  at::Tensor value;
  std::optional<ir::DType> held;  // set where it differs from t's declared dtype
};

class LibTorchExecutor::Context final : public OpContext, public quant::QuantIo {
 public:
  using OpContext::OpContext;
  std::vector<Produced> produced;
  std::vector<std::pair<const ir::TensorIr*, quant::QTensor>> produced_quantized;
  std::vector<std::pair<std::uint64_t, const quant::QTensor*>> quantized_inputs;

  bool produced_output(std::uint64_t id) const {
    for (const auto& p : produced)
      if (p.t->id.value == id) return true;
    for (const auto& p : produced_quantized)
      if (p.first->id.value == id) return true;
    return false;
  }

  const quant::QTensor* quantized(const ir::TensorIr& t) const override {
    for (const auto& [id, q] : quantized_inputs)
      if (id == t.id.value) return q;
    return nullptr;
  }

  Status store_quantized(const ir::TensorIr& t, quant::QTensor value) override {
    if (!same_shape(value.values.sizes(), t.shape.dims)) {
      return make_error(ErrorCode::kInvalidArgument, "output #{} has shape {}, declared [{}]",
                        t.id.value, shape_string(value.values.sizes()),
                        fmt::join(t.shape.dims, ", "));
    }
    value = quant::to_device(value, device());
    for (auto& p : produced_quantized) {
      if (p.first->id.value == t.id.value) {
        p.second = std::move(value);
        return ok();
      }
    }
    produced_quantized.emplace_back(&t, std::move(value));
    return ok();
  }

 protected:
  void store(const ir::TensorIr& t, at::Tensor value, const ir::DType& held) override {
    std::optional<ir::DType> differs;
    if (!(held == t.dtype)) differs = held;
    for (auto& p : produced) {
      if (p.t->id.value == t.id.value) {
        p.value = std::move(value);
        p.held = differs;
        return;
      }
    }
    produced.push_back(Produced{&t, std::move(value), differs});
  }
};

struct LibTorchExecutor::Scratch {
  TensorIrs inputs, outputs;
  std::vector<const Handle*> resolved;
  std::vector<OpContext::Input> ctx_inputs;
  std::vector<Produced> produced;
};

namespace {
// Lends the scratch vectors to an op's context and takes them back, emptied, when the op is done.
template <class Scratch, class Context>
class ScratchLease {
 public:
  ScratchLease(Scratch& scratch, Context& ctx) : scratch_(scratch), ctx_(ctx) {
    ctx_.inputs.swap(scratch_.ctx_inputs);
    ctx_.produced.swap(scratch_.produced);
  }
  ~ScratchLease() {
    ctx_.inputs.clear();
    ctx_.produced.clear();
    ctx_.inputs.swap(scratch_.ctx_inputs);
    ctx_.produced.swap(scratch_.produced);
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;

 private:
  Scratch& scratch_;
  Context& ctx_;
};
}  // namespace

LibTorchExecutor::LibTorchExecutor(at::Device device,
                                   std::shared_ptr<const CustomOpRegistry> custom_ops)
    : device_(device),
      custom_ops_(std::move(custom_ops)),
      generator_(make_generator(device)),
      scratch_(std::make_unique<Scratch>()) {
  handles_.reserve(1024);
}

LibTorchExecutor::~LibTorchExecutor() = default;

Result<const Handle*> LibTorchExecutor::lookup(const ir::TensorIr& t) const {
  const auto it = handles_.find(t.id.value);
  if (it == handles_.end()) {
    return make_error(ErrorCode::kNotFound,
                      "tensor #{} is unknown to this session (never registered, or already freed)",
                      t.id.value);
  }
  if (it->second.failure) {
    Error e = it->second.failure->error;
    e.message = fmt::format("tensor #{} holds no value because an earlier operation failed: {}",
                            t.id.value, it->second.failure->error.what());
    e.context.clear();
    return e;
  }
  return &it->second;
}

void LibTorchExecutor::poison(std::uint64_t id,
                              const std::shared_ptr<FailureLog::Failure>& failure) {
  handles_.set(id, Handle{at::Tensor(), failure, nullptr});
}

std::shared_ptr<FailureLog::Failure> LibTorchExecutor::record(const Error& error) {
  ++stats_.failed_ops;
  return failures_.record(error);
}

Status LibTorchExecutor::register_tensor(ir::TensorId id, const ir::TensorData& data) {
  Handle handle;
  Status status = ok();
  try {
    if (data.dtype.is_quantized()) {
      auto q = quant::from_data(data, device_);
      if (q) {
        handle.q = std::make_shared<const quant::QTensor>(std::move(q).value());
      } else {
        status = q.error();
      }
    } else {
      auto tensor = tensor_from_data(data, device_);
      if (tensor) {
        handle.tensor = std::move(tensor).value();
      } else {
        status = tensor.error();
      }
    }
  } catch (const std::exception& e) {
    status = make_error(ErrorCode::kExecution, "{}", e.what());
  }
  if (!status) {
    Error e = with_context(status.error(), fmt::format("RegisterTensor #{}", id.value));
    poison(id.value, record(e));
    return e;
  }
  handles_.set(id.value, std::move(handle));
  return ok();
}

Status LibTorchExecutor::register_alias(ir::TensorId new_id, ir::TensorId src) {
  const auto it = handles_.find(src.value);
  if (it == handles_.end()) {
    Error e = make_error(ErrorCode::kNotFound, "alias source tensor #{} is unknown", src.value);
    e.context = fmt::format("RegisterAlias #{}", new_id.value);
    poison(new_id.value, record(e));
    return e;
  }
  Handle copy = it->second;  // shares the tensor (and the poison, if any)
  handles_.set(new_id.value, std::move(copy));
  return ok();
}

Result<ir::TensorData> LibTorchExecutor::read_tensor(const ir::TensorIr& t) {
  auto handle = lookup(t);
  if (!handle) {
    // This answer tells the client of the failure, so the next sync does not tell it again.
    const auto it = handles_.find(t.id.value);
    if (it != handles_.end() && it->second.failure) {
      failures_.mark_reported(*it->second.failure);
      if (t.status == ir::TensorStatus::ReadWrite) handles_.erase(it);
    }
    return handle.error();
  }
  const at::Tensor tensor = handle.value()->tensor;
  const std::shared_ptr<const quant::QTensor> q = handle.value()->q;
  const std::optional<ir::DType> held = handle.value()->held;
  if (t.status == ir::TensorStatus::ReadWrite) handles_.erase(t.id.value);
  const at::IntArrayRef sizes = q ? q->values.sizes() : tensor.sizes();
  if (!same_shape(sizes, t.shape.dims)) {
    return make_error(ErrorCode::kInvalidArgument, "tensor #{} has shape {}, read as [{}]",
                      t.id.value, shape_string(sizes), fmt::join(t.shape.dims, ", "));
  }
  try {
    if (q) {
      // Read as stored, whatever scheme the read names (as Burn's backends answer).
      if (t.dtype.is_quantized()) return quant::to_data(*q);
      if (!t.dtype.is_float()) {
        return make_error(ErrorCode::kInvalidArgument, "tensor #{} is quantized ({}), read as {}",
                          t.id.value, quant::describe(q->scheme), t.dtype.name());
      }
      TB_TRY_ASSIGN(const at::Tensor values, quant::dequantize(*q));
      return data_from_tensor(values, t.dtype);
    }
    if (t.dtype.is_quantized()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "tensor #{} holds {} values, not quantized ones; read as {}", t.id.value,
                        c10::toString(tensor.scalar_type()), quant::describe(t.dtype.scheme));
    }
    return data_from_tensor(tensor, held.value_or(t.dtype));
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

  Resolver tensors(scratch_->inputs, scratch_->outputs);
  ir::visit(op, tensors);
  Status status = ok();
  std::vector<const Handle*>& resolved = scratch_->resolved;
  resolved.clear();
  std::shared_ptr<FailureLog::Failure> inherited;  // a poisoned input's failure
  for (const ir::TensorIr* t : tensors.inputs) {
    auto handle = lookup(*t);
    if (!handle) {
      status = handle.error();
      if (const auto it = handles_.find(t->id.value); it != handles_.end()) {
        inherited = it->second.failure;
      }
      break;
    }
    resolved.push_back(handle.value());
  }

  // Quantized tensors reach only the quantization lowering as such; any other op runs on their
  // dequantized values, and its quantized outputs are requantized afterwards.
  const bool dequantize_op = op.kind == ir::OpKind::Float_Dequantize;
  const bool quantize_op = op.kind == ir::OpKind::Float_Quantize;
  const auto dequantized_input = [&](std::size_t i) { return resolved[i]->q && !dequantize_op; };
  bool rewrite = false;
  for (std::size_t i = 0; i < resolved.size(); ++i) rewrite = rewrite || dequantized_input(i);
  for (const ir::TensorIr* o : tensors.outputs)
    rewrite = rewrite || (o->dtype.is_quantized() && !quantize_op);
  const bool tagged = ir::category_has_dtype(op.category()) && op.dtype.is_quantized();
  rewrite = rewrite || (tagged && !quantize_op && !dequantize_op);

  ir::OperationIr plain;
  const ir::OperationIr* run = &op;
  TensorIrs rewritten_inputs, rewritten_outputs;
  Resolver run_tensors(rewritten_inputs, rewritten_outputs);
  ir::DType compute = ir::DTypeKind::F32;
  if (ir::category_has_dtype(op.category()) && op.dtype.is_float()) compute = op.dtype;
  if (status && rewrite) {
    plain = op;
    if (tagged && !quantize_op && !dequantize_op) plain.dtype = compute;
    std::vector<bool> quantized_inputs(resolved.size());
    for (std::size_t i = 0; i < resolved.size(); ++i) quantized_inputs[i] = dequantized_input(i);
    Dequantized rewriter;
    rewriter.quantized_inputs = &quantized_inputs;
    rewriter.compute = compute;
    rewriter.keep_outputs = quantize_op;
    ir::visit(plain, rewriter);
    run = &plain;
    ir::visit(plain, run_tensors);
  }
  const auto& run_inputs = rewrite ? run_tensors.inputs : tensors.inputs;
  const auto& run_outputs = rewrite ? run_tensors.outputs : tensors.outputs;

  Context ctx(*run, device_, generator_, custom_ops_.get());
  ScratchLease<Scratch, Context> lease(*scratch_, ctx);
  std::vector<at::Tensor> dequantized;
  if (rewrite) dequantized.reserve(resolved.size());  // stable addresses for ctx.inputs
  if (status) {
    ctx.inputs.reserve(resolved.size());
    try {
      for (std::size_t i = 0; i < resolved.size() && status; ++i) {
        const Handle& h = *resolved[i];
        const std::uint64_t id = run_inputs[i]->id.value;
        if (!h.q) {
          ctx.inputs.push_back({id, &h.tensor});
        } else if (!dequantized_input(i)) {
          ctx.inputs.push_back({id, &h.q->values});
          ctx.quantized_inputs.emplace_back(id, h.q.get());
        } else if (auto values = quant::dequantize(*h.q)) {
          dequantized.push_back(to_storage(values.value(), compute));
          ctx.inputs.push_back({id, &dequantized.back()});
        } else {
          status = with_context(values.error(), fmt::format("dequantizing input #{}", id));
        }
      }
    } catch (const std::exception& e) {
      status = make_error(ErrorCode::kExecution, "dequantizing an input: {}", e.what());
    }
  }
  if (status) {
    const auto& entry = lowering_table().entry(op.kind);
    try {
      status = entry.fn ? entry.fn(ctx, *run)
                        : Status(make_error(ErrorCode::kUnsupported, "no lowering registered"));
    } catch (const c10::Error& e) {
      status = make_error(ErrorCode::kExecution, "{}", e.what_without_backtrace());
    } catch (const std::exception& e) {
      status = make_error(ErrorCode::kExecution, "{}", e.what());
    }
  }
  if (status) {
    for (const ir::TensorIr* o : run_outputs) {
      if (!ctx.produced_output(o->id.value)) {
        status = make_error(ErrorCode::kInternal, "the lowering did not produce output #{}",
                            o->id.value);
        break;
      }
    }
  }

  // Outputs declared quantized but computed in float.
  std::vector<std::pair<std::uint64_t, quant::QTensor>> requantized;
  if (status && rewrite && !quantize_op) {
    const quant::QTensor* source = nullptr;
    std::size_t sources = 0;
    for (std::size_t i = 0; i < resolved.size(); ++i) {
      if (dequantized_input(i) && resolved[i]->q.get() != source) {
        source = resolved[i]->q.get();
        ++sources;
      }
    }
    try {
      for (const ir::TensorIr* o : tensors.outputs) {
        if (!o->dtype.is_quantized()) continue;
        const at::Tensor* value = nullptr;
        for (const auto& p : ctx.produced)
          if (p.t->id.value == o->id.value) value = &p.value;
        if (!value) continue;
        const ir::QuantScheme& scheme = o->dtype.scheme;
        Result<quant::QTensor> q = make_error(ErrorCode::kInternal, "unset");
        if (moves_values(op.kind) && sources == 1 && !source->scheme.block && !scheme.block &&
            source->scheme.value == scheme.value && source->scheme.mode == scheme.mode &&
            source->scheme.tensor == scheme.tensor) {
          quant::QTensor like = *source;
          if (like.scheme != scheme) like.packing = quant::Packing::kPerLine;
          like.scheme = scheme;
          q = quant::requantize_like(*value, like);
        } else {
          q = quant::quantize_dynamic(*value, scheme);
        }
        if (!q) {
          status = with_context(q.error(), fmt::format("requantizing output #{}", o->id.value));
          break;
        }
        requantized.emplace_back(o->id.value, std::move(q).value());
      }
    } catch (const c10::Error& e) {
      status = make_error(ErrorCode::kExecution, "requantizing: {}", e.what_without_backtrace());
    } catch (const std::exception& e) {
      status = make_error(ErrorCode::kExecution, "requantizing: {}", e.what());
    }
  }

  // The client counts a ReadWrite input as consumed whether or not the op succeeded.
  for (const ir::TensorIr* t : tensors.inputs) {
    if (t->status == ir::TensorStatus::ReadWrite) handles_.erase(t->id.value);
  }

  if (!status) {
    Error e = with_context(status.error(), op.name());
    // An op on a poisoned input fails for that input's reason: its outputs carry the same
    // failure, reported once in all (Burn's host reports each failure once), not once per op
    // that touches a tensor derived from it.
    std::shared_ptr<FailureLog::Failure> failure = inherited;
    if (failure) {
      ++stats_.failed_ops;
    } else {
      failure = record(e);
    }
    for (const ir::TensorIr* o : tensors.outputs) poison(o->id.value, failure);
    return e;
  }
  for (auto& p : ctx.produced) {
    handles_.set(p.t->id.value, Handle{std::move(p.value), nullptr, nullptr, p.held});
  }
  for (auto& [t, value] : ctx.produced_quantized) {
    handles_.set(t->id.value, Handle{at::Tensor(), nullptr,
                                     std::make_shared<const quant::QTensor>(std::move(value))});
  }
  for (auto& [id, value] : requantized) {
    handles_.set(id, Handle{at::Tensor(), nullptr,
                            std::make_shared<const quant::QTensor>(std::move(value))});
  }
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
  return failures_.take_report();
}

void LibTorchExecutor::fail(const Error& error, const std::vector<ir::TensorId>& poisoned) {
  const auto failure = record(error);
  for (const auto& id : poisoned) poison(id.value, failure);
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
      return quant::usage(dtype.scheme);
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
  std::shared_ptr<const Transferable> out;
  if (const auto& q = handle.value()->q) {
    try {
      TB_TRY_ASSIGN(auto transfer, quant::prepare_transfer(*q));
      out = std::make_shared<const QuantTransferable>(std::move(transfer));
    } catch (const std::exception& e) {
      return make_error(ErrorCode::kExecution, "dequantizing tensor #{} for its transfer: {}",
                        t.id.value, e.what());
    }
  } else {
    out = std::make_shared<const TorchTransferable>(handle.value()->tensor, t.dtype);
  }
  if (t.status == ir::TensorStatus::ReadWrite) handles_.erase(t.id.value);
  return out;
}

Status LibTorchExecutor::register_transferred(ir::TensorId id, const Transferable& tensor) {
  const auto* torch = dynamic_cast<const TorchTransferable*>(&tensor);
  const auto* quantized = dynamic_cast<const QuantTransferable*>(&tensor);
  if (!torch && !quantized) {
    return make_error(ErrorCode::kInvalidArgument, "tensor #{} comes from another backend",
                      id.value);
  }
  try {
    if (quantized) {
      auto q = quant::finish_transfer(quantized->transfer(), device_);
      if (!q) {
        Error err = with_context(q.error(), fmt::format("requantizing tensor #{}", id.value));
        poison(id.value, record(err));
        return err;
      }
      handles_.set(id.value, Handle{at::Tensor(), nullptr,
                                    std::make_shared<const quant::QTensor>(std::move(q).value())});
    } else {
      handles_.set(id.value, Handle{torch->tensor().to(device_), nullptr, nullptr});
    }
  } catch (const std::exception& e) {
    Error err = make_error(ErrorCode::kExecution, "moving tensor #{} to {}: {}", id.value,
                           device_.str(), e.what());
    poison(id.value, record(err));
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
  s.live_bytes = handles_.bytes();
  return s;
}

at::Tensor LibTorchExecutor::stored(std::uint64_t id) const {
  const auto it = handles_.find(id);
  if (it == handles_.end()) return at::Tensor();
  return it->second.q ? it->second.q->values : it->second.tensor;
}

const quant::QTensor* LibTorchExecutor::stored_quantized(std::uint64_t id) const {
  const auto it = handles_.find(id);
  return it == handles_.end() ? nullptr : it->second.q.get();
}

}  // namespace tb::backend::libtorch
