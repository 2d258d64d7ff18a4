// What the executor defers, run when anything else reaches it: the held zero slice
// (zero_slice_add.hpp), the held-back subtraction and outer product (deferred_subtract.hpp) and the
// element-wise run (elementwise_run.hpp). A failure poisons what they would have produced, as the
// ops' own failures would.
#include <ATen/core/LegacyTypeDispatch.h>

#include "exec/executor.hpp"
#include "runtime/aten_guard.hpp"

namespace tb::backend::libtorch {

void LibTorchExecutor::flush_deferred_subtract() {
  if (!deferred_.pending()) return;
  const std::uint64_t id = deferred_.out_id();
  const Status s = aten_guard("computing a subtraction", [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    deferred_.materialize();
    return ok();
  });
  if (!s) {
    deferred_.clear();
    poison(id, record(s.error()));
  }
}

bool LibTorchExecutor::try_defer_subtract(const ir::OperationIr& op) {
  if (!fuse_ || !run_.empty()) return false;
  bool deferred = false;
  // An allocation that fails leaves the op to its lowering, which reports it.
  const Status s = aten_guard("", [&] {
    switch (op.kind) {
      case ir::OpKind::NumericFloat_Sub:
        deferred = deferred_.try_defer(op, handles_);
        break;
      case ir::OpKind::Float_Matmul:
        deferred = deferred_.try_defer_outer(op, handles_);
        break;
      case ir::OpKind::BaseFloat_SwapDims:
        deferred = deferred_.try_transpose_outer(op, handles_);
        break;
      default:
        break;
    }
  });
  return s && deferred;
}

void LibTorchExecutor::flush_zero_slice() {
  if (zero_slice_.idle()) return;
  if (!zero_slice_.pending()) return zero_slice_.clear();
  const std::uint64_t id = zero_slice_.held_id();
  const Status s = aten_guard("filling a zero tensor", [&] {
    zero_slice_.materialize();
    return ok();
  });
  if (!s) poison(id, record(s.error()));
}

bool LibTorchExecutor::try_zero_slice(const ir::OperationIr& op) {
  if (!fuse_ || !zero_slice_.continues(op)) return false;
  // What the op reads may be deferred: it is computed first.
  flush_deferred_subtract();
  flush_elementwise();
  bool taken = false;
  // An allocation that fails leaves the op to its lowering, which reports it.
  const Status s = aten_guard("", [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    taken = zero_slice_.take(op, handles_);
    return ok();
  });
  return s && taken;
}

void LibTorchExecutor::flush_run() {
  flush_zero_slice();
  flush_deferred_subtract();
  flush_elementwise();
}

void LibTorchExecutor::flush_elementwise() {
  if (run_.empty()) return;
  const auto started = profile_ ? OpProfile::Clock::now() : OpProfile::Clock::time_point();
  const std::size_t ops = run_.size();
  const Status ran = aten_guard("running a graph's element-wise ops", [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;  // as every op but a model's (run())
    run_.flush(handles_);
    return ok();
  });
  if (!ran) {
    const auto failure = record(ran.error());
    for (const std::uint64_t id : run_.outputs()) poison(id, failure);
    run_.clear();
  }
  if (profile_) profile_->flush(OpProfile::Clock::now() - started, ops);
}

}  // namespace tb::backend::libtorch
