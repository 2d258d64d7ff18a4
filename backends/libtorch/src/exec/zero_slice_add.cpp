#include "exec/zero_slice_add.hpp"

#include <cstring>

#include <ATen/Parallel.h>

#include "lower/small_cpu.hpp"
#include "lower/strided_walk.hpp"
#include "runtime/avx2_clones.hpp"
#include "runtime/dtype.hpp"

namespace tb::backend::libtorch {

namespace {

bool f32_or_f64(const ir::DType& d) {
  return d.kind == ir::DTypeKind::F32 || d.kind == ir::DTypeKind::F64;
}

// A plain handle (Handle::plain) of a strided CPU tensor of `type`.
bool plain_cpu(const Handle& h, at::ScalarType type) {
  return h.plain() && h.tensor.device().is_cpu() && h.tensor.layout() == at::kStrided &&
         h.tensor.scalar_type() == type && !h.tensor.is_neg() && !h.tensor.is_conj() &&
         h.tensor.has_storage();
}

// Whether `t`'s memory may be written: contiguous, and nothing but its handle holds it.
bool sole_contiguous(const at::Tensor& t) {
  return t.is_contiguous() && !t.is_view() && !t.requires_grad() && t.use_count() == 1 &&
         t.storage().use_count() == 1;
}

// x + 0 over a block of a sum: -0.0 becomes +0.0, every other value (NaN included) stays.
TB_AVX2_CLONES void add_zero(float* x, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) x[k] = x[k] + 0.0f;
}
TB_AVX2_CLONES void add_zero(double* x, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) x[k] = x[k] + 0.0;
}

strided_walk::Dims walk_dims(const std::vector<std::int64_t>& v) {
  return strided_walk::Dims(v.begin(), v.end());
}

}  // namespace

bool ZeroSliceAdd::continues(const ir::OperationIr& op) const {
  switch (state_) {
    case State::kNone: {
      if (op.kind != ir::OpKind::BaseFloat_Zeros) return false;
      const ir::TensorIr& out = op.as<ir::CreationOpIr>().out;
      return f32_or_f64(out.dtype) && ir::num_elements(out.shape.dims) >= kMinElements;
    }
    case State::kZeros:
      return op.kind == ir::OpKind::BaseFloat_SliceAssign &&
             op.as<ir::SliceAssignOpIr>().tensor.id.value == id_;
    case State::kSlice: {
      if (op.kind != ir::OpKind::NumericFloat_Add) return false;
      const auto& p = op.as<ir::BinaryOpIr>();
      return p.lhs.id.value == id_ || p.rhs.id.value == id_;
    }
  }
  return false;
}

bool ZeroSliceAdd::take(const ir::OperationIr& op, HandleTable& handles) {
  switch (state_) {
    case State::kNone:
      return hold_zeros(op.as<ir::CreationOpIr>(), handles);
    case State::kZeros:
      return hold_slice(op.as<ir::SliceAssignOpIr>(), handles);
    case State::kSlice:
      return (!ir::category_has_dtype(op.category()) || op.dtype == held_dtype_) &&
             add_into(op.as<ir::BinaryOpIr>(), handles);
  }
  return false;
}

bool ZeroSliceAdd::hold_zeros(const ir::CreationOpIr& p, HandleTable& handles) {
  // The only call that may throw comes before anything changes.
  at::Tensor t =
      small_cpu::empty(std::vector<std::int64_t>(p.out.shape.dims.begin(), p.out.shape.dims.end()),
                       storage_type(p.out.dtype));
  held_ = t;
  held_dtype_ = p.out.dtype;
  id_ = p.out.id.value;
  state_ = State::kZeros;
  handles.set(id_, Handle{std::move(t), nullptr, nullptr, std::nullopt});
  return true;
}

bool ZeroSliceAdd::hold_slice(const ir::SliceAssignOpIr& p, HandleTable& handles) {
  const std::uint64_t value_id = p.value.id.value, out = p.out.id.value;
  if (p.tensor.status != ir::TensorStatus::ReadWrite || value_id == id_ ||
      !(p.out.dtype == held_dtype_) || !(p.value.dtype == held_dtype_) ||
      !same_shape(held_.sizes(), p.out.shape.dims)) {
    return false;
  }
  const auto v = handles.find(value_id);
  if (v == handles.end() || !plain_cpu(v->second, held_.scalar_type())) return false;
  Result<SliceRegion> region = slice_region(held_, p.ranges);
  // A reversed region or a broadcast value is left to the lowering.
  if (!region || !region.value().flips.empty() ||
      v->second.tensor.sizes() != at::IntArrayRef(region.value().sizes) ||
      v->second.tensor.numel() == 0) {
    return false;
  }
  region_ = std::move(region).value();
  value_ = v->second.tensor;
  value_erased_ = p.value.status == ir::TensorStatus::ReadWrite;
  // As the op's commit would: the inputs it consumes go, the result is stored.
  if (value_erased_) handles.erase(value_id);
  handles.erase(id_);
  handles.set(out, Handle{held_, nullptr, nullptr, std::nullopt});
  id_ = out;
  state_ = State::kSlice;
  return true;
}

bool ZeroSliceAdd::add_into(const ir::BinaryOpIr& p, HandleTable& handles) {
  const bool held_first = p.lhs.id.value == id_;
  const ir::TensorIr& held = held_first ? p.lhs : p.rhs;
  const ir::TensorIr& other = held_first ? p.rhs : p.lhs;
  const std::uint64_t a_id = other.id.value, out = p.out.id.value;
  if (held.status != ir::TensorStatus::ReadWrite || other.status != ir::TensorStatus::ReadWrite ||
      !(held.dtype == held_dtype_) || a_id == id_ || !(other.dtype == held_dtype_) ||
      !(p.out.dtype == held_dtype_) || !same_shape(held_.sizes(), p.out.shape.dims)) {
    return false;
  }
  const auto it = handles.find(a_id);
  if (it == handles.end() || !plain_cpu(it->second, held_.scalar_type()) ||
      it->second.tensor.sizes() != held_.sizes() || !sole_contiguous(it->second.tensor)) {
    return false;
  }
  at::Tensor a = it->second.tensor;
  // The only allocation, before anything changes.
  scratch_.resize(static_cast<std::size_t>(value_.numel()));
  // Unless `a` is the last sum, any of its elements may hold -0.0.
  const bool whole = !(has_sum_ && a_id == sum_id_ && a.unsafeGetTensorImpl() == sum_impl_);
  if (held_.scalar_type() == at::kFloat) {
    write_sum<float>(a, held_first, whole);
  } else {
    write_sum<double>(a, held_first, whole);
  }
  // As the op's commit would: both inputs go (the held tensor is never filled), the sum is stored.
  handles.erase(id_);
  handles.erase(a_id);
  handles.set(out, Handle{a, nullptr, nullptr, std::nullopt});
  has_sum_ = true;
  sum_id_ = out;
  sum_impl_ = a.unsafeGetTensorImpl();
  dirty_ = std::move(region_);
  held_ = at::Tensor();
  value_ = at::Tensor();
  value_erased_ = false;
  state_ = State::kNone;
  ++added_;
  return true;
}

template <class T>
void ZeroSliceAdd::write_sum(at::Tensor& a, bool held_first, bool whole) {
  T* data = a.data_ptr<T>();
  const T* g = value_.data_ptr<T>();
  const strided_walk::Dims sizes = walk_dims(region_.sizes), strides = walk_dims(region_.strides);
  strided_walk::Dims g_sizes, g_strides;
  strided_walk::dims_of(value_, g_sizes, g_strides);
  // 1. a[r] + g (as the add takes its operands), from a as it is.
  std::size_t i = 0;
  strided_walk::for_each_offsets<2>(
      sizes, {&strides, &g_strides}, [&](const std::array<std::int64_t, 2>& o) {
        const T x = data[region_.offset + o[0]];
        scratch_[i++] = static_cast<double>(held_first ? g[o[1]] + x : x + g[o[1]]);
      });
  // 2. a + 0 where -0.0 may be: everywhere, or the last sum's region.
  if (whole) {
    // As ATen's add would be, on its threads for a large sum.
    at::parallel_for(0, a.numel(), at::internal::GRAIN_SIZE,
                     [&](std::int64_t b, std::int64_t e) { add_zero(data + b, e - b); });
  } else {
    const strided_walk::Dims d_sizes = walk_dims(dirty_.sizes),
                             d_strides = walk_dims(dirty_.strides);
    strided_walk::for_each_offset(d_sizes, d_strides, [&](std::int64_t o) {
      data[dirty_.offset + o] = data[dirty_.offset + o] + T(0);
    });
  }
  // 3. The region's sums.
  i = 0;
  strided_walk::for_each_offset(sizes, strides, [&](std::int64_t o) {
    data[region_.offset + o] = static_cast<T>(scratch_[i++]);
  });
}

void ZeroSliceAdd::materialize() {
  struct Clear {
    ZeroSliceAdd* z;
    ~Clear() { z->clear(); }
  } clear_after{this};
  if (state_ == State::kNone) return;
  // +0.0 is all zero bits.
  std::memset(held_.data_ptr(), 0, held_.nbytes());
  if (state_ == State::kSlice &&
      !small_cpu::copy_into(held_, region_.sizes, region_.strides, region_.offset, value_)) {
    held_.as_strided(region_.sizes, region_.strides, region_.offset).copy_(value_);
  }
}

void ZeroSliceAdd::clear() {
  state_ = State::kNone;
  held_ = at::Tensor();
  value_ = at::Tensor();
  value_erased_ = false;
  region_ = {};
  has_sum_ = false;
  sum_impl_ = nullptr;
}

}  // namespace tb::backend::libtorch
