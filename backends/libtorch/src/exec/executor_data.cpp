// Tensors that enter or leave a session other than through an op: uploads (RegisterTensor),
// aliases, reads, and transfers to and from another device's executor. Each flushes the deferred
// element-wise run first, since it may read or replace a tensor the run holds.
#include <optional>

#include <fmt/format.h>

#include "exec/executor.hpp"
#include "exec/executor_context.hpp"
#include "runtime/aten_guard.hpp"
#include "runtime/dtype.hpp"

namespace tb::backend::libtorch {

Status LibTorchExecutor::register_tensor(ir::TensorId id, const ir::TensorData& data) {
  flush_run();
  Handle handle;
  const Status status = aten_guard("", [&]() -> Status {
    if (data.dtype.is_quantized()) {
      TB_TRY_ASSIGN(auto q, quant::from_data(data, device_));
      handle.q = std::make_shared<const quant::QTensor>(std::move(q));
    } else {
      TB_TRY_ASSIGN(handle.tensor, tensor_from_data(data, device_));
    }
    return ok();
  });
  if (!status) {
    Error e = with_context(status.error(), fmt::format("RegisterTensor #{}", id.value));
    poison(id.value, record(e));
    return e;
  }
  handles_.set(id.value, std::move(handle));
  return ok();
}

Status LibTorchExecutor::register_alias(ir::TensorId new_id, ir::TensorId src) {
  flush_run();
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
  flush_run();
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
  return aten_guard(fmt::format("reading tensor #{}", t.id.value), [&]() -> Result<ir::TensorData> {
    if (q) {
      // Read as stored, whatever scheme the read names (as Burn's backends answer).
      if (t.dtype.is_quantized()) return quant::to_data(*q, quant_rules_.canonical_layout);
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
  });
}

Result<std::shared_ptr<const Transferable>> LibTorchExecutor::take_for_transfer(
    const ir::TensorIr& t) {
  flush_run();
  auto handle = lookup(t);
  if (!handle) return handle.error();
  std::shared_ptr<const Transferable> out;
  if (const auto& q = handle.value()->q) {
    TB_TRY(aten_guard(fmt::format("dequantizing tensor #{} for its transfer", t.id.value),
                      [&]() -> Status {
                        TB_TRY_ASSIGN(auto transfer, quant::prepare_transfer(*q));
                        out = std::make_shared<const QuantTransferable>(std::move(transfer));
                        return ok();
                      }));
  } else {
    out = std::make_shared<const TorchTransferable>(handle.value()->tensor, t.dtype);
  }
  if (t.status == ir::TensorStatus::ReadWrite) handles_.erase(t.id.value);
  return out;
}

Status LibTorchExecutor::register_transferred(ir::TensorId id, const Transferable& tensor) {
  flush_run();
  const auto* torch = dynamic_cast<const TorchTransferable*>(&tensor);
  const auto* quantized = dynamic_cast<const QuantTransferable*>(&tensor);
  if (!torch && !quantized) {
    return make_error(ErrorCode::kInvalidArgument, "tensor #{} comes from another backend",
                      id.value);
  }
  const auto where = fmt::format("moving tensor #{} to {}", id.value, device_.str());
  const Status status = aten_guard(where, [&]() -> Status {
    if (quantized) {
      auto q = quant::finish_transfer(quantized->transfer(), device_);
      if (!q) return with_context(q.error(), fmt::format("requantizing tensor #{}", id.value));
      handles_.set(id.value, Handle{at::Tensor(), nullptr,
                                    std::make_shared<const quant::QTensor>(std::move(q).value())});
    } else {
      handles_.set(id.value, Handle{torch->tensor().to(device_), nullptr, nullptr});
    }
    return ok();
  });
  if (!status) poison(id.value, record(status.error()));
  return status;
}

}  // namespace tb::backend::libtorch
