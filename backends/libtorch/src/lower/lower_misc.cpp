// Init, Drop, Custom and Distributed. Init and Drop are handled by the executor itself (they touch
// only the handle table); Custom dispatches to the host's registry, then to the built-in ops.
#include "lower/lowering.hpp"
#include "runtime/aten_guard.hpp"

namespace tb::backend::libtorch {

const CustomOpRegistry& builtin_custom_ops() {
  struct Builtins {
    CustomOpRegistry registry;
    Builtins() { add_signal_ops(registry); }
  };
  static const Builtins builtins;
  return builtins.registry;
}

// Handled before dispatch by the executor; registered so the tables show them lowered.
Status lower_Init_Op(OpContext&, const ir::InitOperationIr&) {
  return ok();
}

Status lower_Drop_Op(OpContext&, const ir::TensorIr&) {
  return ok();
}

Status lower_Custom_Op(OpContext& ctx, const ir::CustomOpIr& op) {
  std::string why;
  auto handler = ctx.custom_ops() ? ctx.custom_ops()->find(op.id, why) : nullptr;
  if (!handler) handler = builtin_custom_ops().find(op.id);
  if (!handler && !why.empty()) return ctx.invalid("custom op \"{}\": {}", op.id, why);
  if (!handler) return ctx.invalid("no custom op \"{}\" is registered on this host", op.id);
  CustomOpCall call{op, ctx.in(op.inputs), ctx.device()};
  // A handler is user code: whatever it throws becomes this op's error, named after the op.
  auto result = aten_guard("", [&] { return (*handler)(call); });
  if (!result) return with_context(result.error(), fmt::format("custom op \"{}\"", op.id));
  auto& outputs = result.value();
  if (outputs.size() != op.outputs.size()) {
    return ctx.invalid("custom op \"{}\" returned {} output(s), the op declares {}", op.id,
                       outputs.size(), op.outputs.size());
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& declared = op.outputs[i];
    const auto& value = outputs[i];
    if (!value.defined()) return ctx.invalid("custom op \"{}\" output {} is undefined", op.id, i);
    if (!same_shape(value.sizes(), declared.shape.dims)) {
      return ctx.invalid("custom op \"{}\" output {} has shape {}, the op declares [{}]", op.id, i,
                         shape_string(value.sizes()), fmt::join(declared.shape.dims, ", "));
    }
    if (value.scalar_type() != storage_type(declared.dtype)) {
      return ctx.invalid("custom op \"{}\" output {} has dtype {}, the op declares {}", op.id, i,
                         c10::toString(value.scalar_type()), declared.dtype.name());
    }
    TB_TRY(ctx.out(declared, value));
  }
  return ok();
}

// Collectives span the sessions of several devices: the host runs them
// (bridge/src/cluster/collective.cpp) and never hands them to a single executor.
Status lower_Distributed_AllReduce(OpContext& ctx, const ir::AllReduceOpIr&) {
  return ctx.unsupported(
      "all_reduce is coordinated by the host across its devices; a lone "
      "executor cannot run it");
}

Status lower_Distributed_SyncCollective(OpContext&, const ir::UnitPayload&) {
  return ok();
}

}  // namespace tb::backend::libtorch
