#include "lowering.hpp"

namespace tb::backend::libtorch {

const at::Tensor& OpContext::in(const ir::TensorIr& t) const {
  for (const auto& input : inputs)
    if (input.id == t.id.value) return *input.tensor;
  // The executor resolves every input before the lowering runs: reaching here is a bug.
  throw std::logic_error(fmt::format("input #{} was not resolved", t.id.value));
}

std::optional<at::Tensor> OpContext::in(const std::optional<ir::TensorIr>& t) const {
  if (!t) return std::nullopt;
  return in(*t);
}

std::vector<at::Tensor> OpContext::in(const std::vector<ir::TensorIr>& ts) const {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(in(t));
  return out;
}

Status OpContext::out(const ir::TensorIr& t, const at::Tensor& value) {
  return out(t, value, t.dtype);
}

Status OpContext::out(const ir::TensorIr& t, const at::Tensor& value, const ir::DType& held) {
  if (!same_shape(value.sizes(), t.shape.dims)) {
    return make_error(ErrorCode::kInvalidArgument, "output #{} has shape {}, declared [{}]",
                      t.id.value, shape_string(value.sizes()), fmt::join(t.shape.dims, ", "));
  }
  at::Tensor v = to_storage(value, held);
  if (v.device() != device_) v = v.to(device_);
  store(t, std::move(v), held);
  return ok();
}

void LoweringTable::set(ir::OpKind kind, LowerFn fn) {
  auto& e = entries_[static_cast<std::size_t>(kind)];
  if (e.fn) duplicates_.push_back(kind);
  e.fn = std::move(fn);
  e.lowered = true;
  e.note.clear();
}

void LoweringTable::unsupported(ir::OpKind kind, std::string reason) {
  set(kind, [reason](OpContext&, const ir::OperationIr&) -> Status {
    return make_error(ErrorCode::kUnsupported, "{}", reason);
  });
  auto& e = entries_[static_cast<std::size_t>(kind)];
  e.lowered = false;
  e.note = std::move(reason);
}

void LoweringTable::limit(ir::OpKind kind, std::string note) {
  entries_[static_cast<std::size_t>(kind)].note = std::move(note);
}

const LoweringTable& lowering_table() {
  static const LoweringTable table = [] {
    LoweringTable t;
    register_base_ops(t);
    register_numeric_ops(t);
    register_reduce_ops(t);
    register_float_ops(t);
    register_int_bool_ops(t);
    register_activation_ops(t);
    register_conv_ops(t);
    register_module_ops(t);
    register_quant_ops(t);
    register_misc_ops(t);
    return t;
  }();
  return table;
}

LoweringStatus lowering_status(ir::OpKind kind) {
  const auto& e = lowering_table().entry(kind);
  if (!e.fn) return {false, "not lowered yet"};
  return {e.lowered, e.note};
}

}  // namespace tb::backend::libtorch
