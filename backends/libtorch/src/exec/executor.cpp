// The executor's op path: an op's inputs resolved, its lowering run, its outputs committed (or its
// failure recorded), syncs and profiling windows. Tensors that enter or leave the session other
// than through an op are executor_data.cpp's; what is deferred is run by executor_deferred.cpp.
#include "exec/executor.hpp"

#include <optional>

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>

#include "exec/executor_context.hpp"
#include "runtime/aten_guard.hpp"
#include "runtime/dtype.hpp"

namespace tb::backend::libtorch {

namespace {

at::Generator make_generator(const at::Device& device) {
  return at::globalContext().defaultGenerator(device).clone();
}

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

bool LibTorchExecutor::Context::produced_output(std::uint64_t id) const {
  for (const auto& p : produced)
    if (p.t->id.value == id) return true;
  for (const auto& p : produced_quantized)
    if (p.first->id.value == id) return true;
  return false;
}

const quant::QTensor* LibTorchExecutor::Context::quantized(const ir::TensorIr& t) const {
  for (const auto& [id, q] : quantized_inputs)
    if (id == t.id.value) return q;
  return nullptr;
}

Status LibTorchExecutor::Context::store_quantized(const ir::TensorIr& t, quant::QTensor value) {
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

void LibTorchExecutor::Context::store(const ir::TensorIr& t, at::Tensor value,
                                      const ir::DType& held) {
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

LibTorchExecutor::LibTorchExecutor(at::Device device,
                                   std::shared_ptr<const CustomOpRegistry> custom_ops, bool fuse)
    : device_(device),
      custom_ops_(std::move(custom_ops)),
      generator_(make_generator(device)),
      scratch_(std::make_unique<Scratch>()),
      fuse_(fuse && device.is_cpu()) {
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

Status LibTorchExecutor::execute(const ir::OperationIr& op) {
  if (!profile_) return execute_op(op);
  // A flush the op starts is counted as the runs' time, not the op's.
  const auto started = OpProfile::Clock::now();
  const OpProfile::Clock::duration flushed_before = profile_->flushed();
  const Status s = execute_op(op);
  // An op that does not join the run flushes it: a run is left only by one the op joined.
  profile_->op(op.kind, OpProfile::Clock::now() - started - (profile_->flushed() - flushed_before),
               has_deferred());
  return s;
}

// An op runs in three steps: resolve its inputs, run its lowering (through the quantized rewrite
// only when it touches a quantized tensor), commit its outputs or its failure.
Status LibTorchExecutor::execute_op(const ir::OperationIr& op) {
  ++stats_.ops;
  if (try_zero_slice(op)) return ok();
  flush_zero_slice();
  // A deferred subtraction is computed first, unless this op may take it in place; a held-back
  // outer product, unless this op is the subtraction that takes its operands.
  const bool absorbing = deferred_.prepare_absorb(op, handles_);
  if (!absorbing) {
    if (deferred_.outer_pending() && try_defer_subtract(op)) return ok();
    if (!deferred_.lets_outer_wait(op)) flush_deferred_subtract();
  }
  struct Done {
    DeferredSubtract* d;
    ~Done() {
      if (d) d->clear();
    }
  } done{absorbing ? &deferred_ : nullptr};
  if (fuse_ && run_.try_add(op, handles_)) return ok();
  if (!run_.empty()) {
    flush_run();
    // The op that ended a run (another shape, a bound reached) may begin the next.
    if (fuse_ && run_.try_add(op, handles_)) return ok();
  }
  switch (op.category()) {
    case ir::OpCategory::Init:
      return ok();  // registered by RegisterTensor already
    case ir::OpCategory::Drop:
      handles_.erase(op.as<ir::TensorIr>().id.value);
      return ok();
    default:
      break;
  }
  if (try_defer_subtract(op)) return ok();
  // The statuses stay where they are made (commit reads their errors): an Error is two strings,
  // and moving it from step to step showed in the per-op cost.
  std::shared_ptr<FailureLog::Failure> inherited;  // a poisoned input's failure
  const Status resolved = resolve(op, inherited);
  if (!resolved) return commit(op, nullptr, &resolved.error(), inherited);
  std::optional<QuantRewrite> rewrite;
  if (QuantRewrite::needed(op, scratch_->resolved, scratch_->outputs)) {
    rewrite.emplace(op, scratch_->resolved, quant_encoding());
  }
  Context ctx(rewrite ? rewrite->plain() : op, device_, generator_, custom_ops_.get());
  ctx.quant_encoding = quant_encoding();
  if (absorbing && !rewrite) ctx.deferred_value = &deferred_;
  if (!rewrite) ctx.handles = &handles_;
  ScratchLease<Scratch, Context> lease(*scratch_, ctx);
  const Status ran = run(ctx, rewrite ? &*rewrite : nullptr);
  return commit(op, &ctx, ran ? nullptr : &ran.error(), inherited);
}

Status LibTorchExecutor::resolve(const ir::OperationIr& op,
                                 std::shared_ptr<FailureLog::Failure>& inherited) {
  SplitTensors tensors(scratch_->inputs, scratch_->outputs);
  ir::visit(op, tensors);
  std::vector<const Handle*>& resolved = scratch_->resolved;
  resolved.clear();
  for (const ir::TensorIr* t : scratch_->inputs) {
    auto handle = lookup(*t);
    if (!handle) {
      if (const auto it = handles_.find(t->id.value); it != handles_.end()) {
        inherited = it->second.failure;
      }
      return handle.error();
    }
    resolved.push_back(handle.value());
  }
  return ok();
}

Status LibTorchExecutor::run(Context& ctx, QuantRewrite* rewrite) {
  const std::vector<const Handle*>& resolved = scratch_->resolved;
  if (rewrite) {
    ctx.inputs.reserve(resolved.size());
    TB_TRY(rewrite->bind_inputs(ctx.inputs, ctx.quantized_inputs));
  } else {
    TB_TRY(aten_guard("binding the inputs", [&] {
      ctx.inputs.reserve(resolved.size());
      for (std::size_t i = 0; i < resolved.size(); ++i) {
        const Handle& h = *resolved[i];
        const ir::TensorIr& t = *scratch_->inputs[i];
        const std::uint64_t id = t.id.value;
        if (!h.q) {
          ctx.inputs.push_back({id, &h.tensor, t.status == ir::TensorStatus::ReadWrite});
        } else {  // only the dequantize lowering gets here with a quantized input
          ctx.inputs.push_back({id, &h.q->values});
          ctx.quantized_inputs.emplace_back(id, h.q.get());
        }
      }
    }));
  }
  const auto& entry = lowering_table().entry(ctx.op().kind);
  if (!entry.fn) return make_error(ErrorCode::kUnsupported, "no lowering registered");
  // Burn's client differentiates its programs itself, so the host's ops never need autograd:
  // dispatching straight to the kernels skips ATen's autograd and view-tracking layers on every
  // op (their bookkeeping showed in the per-op cost of Burn's LU). A Torch model may train, so
  // autograd sees a custom op's.
  std::optional<at::AutoDispatchBelowADInplaceOrView> below_autograd;
  if (ctx.op().category() != ir::OpCategory::Custom) below_autograd.emplace();
  TB_TRY(aten_guard("", [&] { return entry.fn(ctx, ctx.op()); }));
  for (const ir::TensorIr* o : rewrite ? rewrite->plain_outputs() : scratch_->outputs) {
    if (!ctx.produced_output(o->id.value)) {
      return make_error(ErrorCode::kInternal, "the lowering did not produce output #{}",
                        o->id.value);
    }
  }
  if (rewrite) TB_TRY(rewrite->requantize(scratch_->outputs, ctx.produced, ctx.requantized));
  return ok();
}

Status LibTorchExecutor::commit(const ir::OperationIr& op, Context* ctx, const Error* error,
                                const std::shared_ptr<FailureLog::Failure>& inherited) {
  // The client counts a ReadWrite input as consumed whether or not the op succeeded.
  for (const ir::TensorIr* t : scratch_->inputs) {
    if (t->status == ir::TensorStatus::ReadWrite) handles_.erase(t->id.value);
  }
  if (error) {
    Error e = with_context(*error, op.name());
    // An op on a poisoned input fails for that input's reason: its outputs carry the same
    // failure, reported once in all (Burn's host reports each failure once), not once per op
    // that touches a tensor derived from it.
    std::shared_ptr<FailureLog::Failure> failure = inherited;
    if (failure) {
      ++stats_.failed_ops;
    } else {
      failure = record(e);
    }
    for (const ir::TensorIr* o : scratch_->outputs) poison(o->id.value, failure);
    return e;
  }
  for (auto& p : ctx->produced) {
    if (ctx->handed_out() != nullptr && p.value.has_storage() &&
        p.value.storage().unsafeGetStorageImpl() == ctx->handed_out()) {
      ++stats_.in_place_updates;
    }
    handles_.set(p.t->id.value, Handle{std::move(p.value), nullptr, nullptr, p.held});
  }
  const auto quantized = [](quant::QTensor value) {
    return Handle{at::Tensor(), nullptr, std::make_shared<const quant::QTensor>(std::move(value))};
  };
  for (auto& [t, value] : ctx->produced_quantized)
    handles_.set(t->id.value, quantized(std::move(value)));
  for (auto& [id, value] : ctx->requantized) handles_.set(id, quantized(std::move(value)));
  return ok();
}

void LibTorchExecutor::device_sync() {
  if (device_.is_cuda()) at::detail::getCUDAHooks().deviceSynchronize(device_.index());
}

Status LibTorchExecutor::sync() {
  flush_run();
  if (Status s = aten_guard("device synchronisation failed", [&] { device_sync(); }); !s) {
    record(s.error());
  }
  return failures_.take_report();
}

void LibTorchExecutor::fail(const Error& error, const std::vector<ir::TensorId>& poisoned) {
  flush_run();
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

Result<std::optional<ir::ProfileToken>> LibTorchExecutor::profile_start() {
  flush_run();  // the window times what comes after it only
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
  flush_run();  // deferred ops run inside the window that holds them
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
  // Deferred ops count as run: the host's memory limits see what eager execution would hold.
  ExecutorStats s = stats_;
  s.live_tensors = handles_.size() + run_.pending_tensors() - run_.consumed_tensors();
  s.live_bytes =
      handles_.bytes() + run_.pending_bytes() - run_.consumed_bytes() + zero_slice_.held_bytes();
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
