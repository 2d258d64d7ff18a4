#include "exec/deferred_subtract.hpp"

#include "lower/small_cpu.hpp"
#include "runtime/dtype.hpp"

namespace tb::backend::libtorch {

namespace {

// A region of a larger tensor laid out row-major (strides positive and decreasing over the dims
// that are not 1): the subtraction's output, like at::sub's for it, is then contiguous.
bool row_major_region(const at::Tensor& view) {
  const auto elements = static_cast<std::uint64_t>(view.numel());
  if (elements == 0 || view.storage().nbytes() <= elements * view.element_size()) return false;
  std::int64_t inner = 0;  // elements one step of the next dim in spans
  for (std::int64_t d = view.dim() - 1; d >= 0; --d) {
    if (view.size(d) == 1) continue;
    const std::int64_t stride = view.stride(d);
    if (stride <= 0 || (inner == 0 ? stride != 1 : stride < inner)) return false;
    inner = stride * view.size(d);
  }
  return true;
}

bool qualifies(const at::Tensor& view, const at::Tensor& w) {
  const auto st = view.scalar_type();
  return view.defined() && w.defined() && view.device().is_cpu() && w.device().is_cpu() &&
         view.layout() == at::kStrided && w.layout() == at::kStrided &&
         (st == at::kFloat || st == at::kDouble) && w.scalar_type() == st && !view.is_neg() &&
         !w.is_neg() && view.has_storage() && w.has_storage() && view.sizes() == w.sizes() &&
         w.is_contiguous() && !w.storage().is_alias_of(view.storage()) && row_major_region(view);
}

}  // namespace

bool DeferredSubtract::try_defer_outer(const ir::OperationIr& op, HandleTable& handles) {
  if (pending() || op.kind != ir::OpKind::Float_Matmul) return false;
  const auto& p = op.as<ir::MatmulOpIr>();
  const std::uint64_t lhs = p.lhs.id.value, rhs = p.rhs.id.value, out = p.out.id.value;
  if (out == lhs || out == rhs || !(p.lhs.dtype == p.rhs.dtype) || !(p.out.dtype == p.lhs.dtype))
    return false;
  const auto a = handles.find(lhs), b = handles.find(rhs);
  if (a == handles.end() || b == handles.end() || !a->second.plain() || !b->second.plain() ||
      a->second.tensor.scalar_type() != storage_type(p.lhs.dtype)) {
    return false;
  }
  // The only call that may throw comes before anything changes.
  std::optional<at::Tensor> result =
      small_cpu::outer_product_output(a->second.tensor, b->second.tensor);
  if (!result || !same_shape(result->sizes(), p.out.shape.dims)) return false;
  a_ = a->second.tensor;
  b_ = b->second.tensor;
  out_id_ = out;
  out_ = *result;
  outer_ = true;
  // As the op's commit would: inputs it consumes go, the result is stored.
  if (p.lhs.status == ir::TensorStatus::ReadWrite) handles.erase(lhs);
  if (p.rhs.status == ir::TensorStatus::ReadWrite && rhs != lhs) handles.erase(rhs);
  handles.set(out, Handle{*result, nullptr, nullptr, std::nullopt});
  return true;
}

bool DeferredSubtract::try_transpose_outer(const ir::OperationIr& op, HandleTable& handles) {
  if (!outer_pending() || op.kind != ir::OpKind::BaseFloat_SwapDims) return false;
  const auto& p = op.as<ir::SwapDimsOpIr>();
  const std::int64_t rank = out_.dim();
  const auto matrix_dim = [&](std::uint64_t d) {
    return d == static_cast<std::uint64_t>(rank - 2) || d == static_cast<std::uint64_t>(rank - 1);
  };
  const std::uint64_t in = p.input.id.value, out = p.out.id.value;
  if (in != out_id_ || out == in || p.input.status != ir::TensorStatus::ReadWrite ||
      p.dim1 == p.dim2 || !matrix_dim(p.dim1) || !matrix_dim(p.dim2) ||
      !(p.out.dtype == p.input.dtype)) {
    return false;
  }
  std::vector<std::int64_t> sizes = out_.sizes().vec();
  std::swap(sizes[rank - 2], sizes[rank - 1]);
  if (!same_shape(sizes, p.out.shape.dims)) return false;
  // The only call that may throw comes before anything changes.
  at::Tensor result = small_cpu::empty(sizes, out_.scalar_type());
  at::Tensor column = b_.transpose(rank - 2, rank - 1);
  at::Tensor row = a_.transpose(rank - 2, rank - 1);
  a_ = std::move(column);
  b_ = std::move(row);
  out_ = result;
  out_id_ = out;
  // As the op's commit would: the product it consumes goes, the transpose is stored.
  handles.erase(in);
  handles.set(out, Handle{std::move(result), nullptr, nullptr, std::nullopt});
  return true;
}

bool DeferredSubtract::lets_outer_wait(const ir::OperationIr& op) const {
  if (!outer_pending()) return false;
  if (op.kind == ir::OpKind::Drop_Op) return op.as<ir::TensorIr>().id.value != out_id_;
  return op.kind == ir::OpKind::BaseFloat_Slice &&
         op.as<ir::SliceOpIr>().tensor.id.value != out_id_ &&
         op.as<ir::SliceOpIr>().out.id.value != out_id_;
}

bool DeferredSubtract::try_defer(const ir::OperationIr& op, HandleTable& handles) {
  if (op.kind != ir::OpKind::NumericFloat_Sub) return false;
  const auto& p = op.as<ir::BinaryOpIr>();
  const std::uint64_t lhs = p.lhs.id.value, rhs = p.rhs.id.value, out = p.out.id.value;
  // While an outer product is held back, only the subtraction of it may join it.
  const bool outer = outer_pending();
  if ((pending() && !outer) || (outer && rhs != out_id_)) return false;
  if (p.lhs.status != ir::TensorStatus::ReadWrite || p.rhs.status != ir::TensorStatus::ReadWrite ||
      lhs == rhs || out == lhs || out == rhs || !(p.lhs.dtype == p.rhs.dtype) ||
      !(p.out.dtype == p.lhs.dtype)) {
    return false;
  }
  const auto a = handles.find(lhs), b = handles.find(rhs);
  if (a == handles.end() || b == handles.end()) return false;
  const Handle& ha = a->second;
  const Handle& hb = b->second;
  if (ha.failure || hb.failure || ha.q || hb.q || ha.held || hb.held) return false;
  if (!qualifies(ha.tensor, hb.tensor) || ha.tensor.scalar_type() != storage_type(p.lhs.dtype) ||
      !same_shape(ha.tensor.sizes(), p.out.shape.dims)) {
    return false;
  }
  // What the subtraction would store (contiguous, as at::sub makes it here); the only call that
  // may throw comes before anything changes.
  at::Tensor result = small_cpu::empty(ha.tensor.sizes(), ha.tensor.scalar_type());
  // The held-back product's operands stay, as copies ([m, 1] and [1, n], against the [m, n]
  // product): as views they would hold the matrix's memory, and its slice assignment could no
  // longer take the difference in place. The product's own output, consumed here, is never
  // computed.
  if (outer) {
    at::Tensor column = a_.clone(), row = b_.clone();
    a_ = std::move(column);
    b_ = std::move(row);
  }
  outer_ = false;
  fused_ = outer;
  if (outer) ++fused_outer_;
  view_ = ha.tensor;
  w_ = hb.tensor;
  storage_ = view_.storage().unsafeGetStorageImpl();
  sizes_.assign(view_.sizes().begin(), view_.sizes().end());
  strides_.assign(view_.strides().begin(), view_.strides().end());
  offset_ = view_.storage_offset();
  out_id_ = out;
  out_ = result;
  // As the op's commit would: the consumed inputs go, the result is stored.
  handles.erase(a);
  handles.erase(rhs);
  handles.set(out, Handle{std::move(result), nullptr, nullptr, std::nullopt});
  return true;
}

bool DeferredSubtract::prepare_absorb(const ir::OperationIr& op, const HandleTable& handles) {
  if (!pending() || outer_pending() || op.kind != ir::OpKind::BaseFloat_SliceAssign) return false;
  const auto& p = op.as<ir::SliceAssignOpIr>();
  if (p.value.id.value != out_id_ || p.value.status != ir::TensorStatus::ReadWrite ||
      p.tensor.id.value == out_id_) {
    return false;
  }
  const auto t = handles.find(p.tensor.id.value);
  if (t == handles.end() || t->second.failure || t->second.q || !t->second.tensor.defined() ||
      !t->second.tensor.has_storage() ||
      t->second.tensor.storage().unsafeGetStorageImpl() != storage_) {
    return false;
  }
  view_ = at::Tensor();
  return true;
}

bool DeferredSubtract::absorb_into(at::Tensor& target, at::IntArrayRef sizes,
                                   at::IntArrayRef strides, std::int64_t offset) {
  if (!target.has_storage() || target.storage().unsafeGetStorageImpl() != storage_ ||
      target.scalar_type() != w_.scalar_type() || sizes != at::IntArrayRef(sizes_) ||
      strides != at::IntArrayRef(strides_) || offset != offset_ ||
      w_.storage().is_alias_of(target.storage())) {
    return false;
  }
  at::Tensor region = target.as_strided(sizes, strides, offset);
  // Its own output: each element is read, then written, by the same iteration.
  if (fused_) {
    small_cpu::subtract_outer(region, region, a_, b_);
  } else {
    at::sub_out(region, region, w_);
  }
  ++absorbed_;
  return true;
}

void DeferredSubtract::compute_from(const at::Tensor& base) {
  const at::Tensor view = base.as_strided(sizes_, strides_, offset_);
  if (fused_) {
    small_cpu::subtract_outer(out_, view, a_, b_);
  } else {
    at::sub_out(out_, view, w_);
  }
}

void DeferredSubtract::materialize() {
  if (outer_pending()) {
    small_cpu::outer_product_into(out_, a_, b_);
  } else if (view_.defined()) {
    if (fused_) {
      small_cpu::subtract_outer(out_, view_, a_, b_);
    } else {
      at::sub_out(out_, view_, w_);
    }
  }
  clear();
}

void DeferredSubtract::clear() {
  out_ = at::Tensor();
  view_ = at::Tensor();
  w_ = at::Tensor();
  a_ = at::Tensor();
  b_ = at::Tensor();
  outer_ = false;
  fused_ = false;
  storage_ = nullptr;
  out_id_ = 0;
}

}  // namespace tb::backend::libtorch
