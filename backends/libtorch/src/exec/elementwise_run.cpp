#include "exec/elementwise_run.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/Parallel.h>

#include "lower/small_cpu.hpp"

namespace tb::backend::libtorch {
namespace {

// Elements evaluated per op before moving to the next op: every intermediate of the block stays
// in L1.
constexpr std::int64_t kBlock = 1024;
// Larger runs would lose ATen's intra-op parallelism; below this ATen runs them on one thread too.
constexpr std::int64_t kParallelFrom = 32768;
// The bytes a run's live results may take once stored. The executor counts them as live already
// (ExecutorStats, so the host's memory limits see what eager execution would hold); the bound
// keeps a run's stores and its inputs within a few cache-sized blocks of work per element.
constexpr std::int64_t kMaxLiveBytes = 16 << 20;
// The ops a run may hold. Each op's bookkeeping looks through the run's consumed inputs, so an
// unbounded run of tiny tensors (which the byte bound never ends) would cost quadratic time: a
// 100,000-op graph consuming as many stored inputs, ~5e9 comparisons. Fused graphs from Burn's
// client hold tens of ops.
constexpr std::size_t kMaxOps = 1024;
// Scratch floats kept from one run to the next (64 slots of a full block, 256 KiB).
constexpr std::size_t kKeepScratch = 64 * kBlock;

bool same_dims(const ir::Dims& dims, const std::vector<std::int64_t>& sizes) {
  if (dims.size() != sizes.size()) return false;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (static_cast<std::int64_t>(dims[i]) != sizes[i]) return false;
  }
  return true;
}

// An f32 scalar operand as the lowerings use it: a double scalar rounded once to f32. A finite
// value beyond f32's range is left to the lowering, which reports it (ATen's fill refuses it).
bool f32_scalar(const ir::ScalarIr& s, float& out) {
  if (s.kind() != ir::ScalarKind::Float) return false;
  const double v = std::get<double>(s.value);
  if (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max()) return false;
  out = static_cast<float>(v);
  return true;
}

}  // namespace

bool ElementwiseRun::operand(const ir::TensorIr& t, bool is_bool, const HandleTable& handles,
                             Operand& out) {
  if (t.dtype.is_bool() != is_bool || (!is_bool && t.dtype.kind != ir::DTypeKind::F32)) {
    return false;
  }
  if (!same_dims(t.shape.dims, sizes_)) return false;
  if (const std::ptrdiff_t at = find_pending(t.id.value); at >= 0) {
    const std::int32_t index = pending_[static_cast<std::size_t>(at)].second;
    if (ops_[index].bool_out != is_bool) return false;
    out.value = index;
    return true;
  }
  const at::Tensor* x = stored(t, is_bool ? at::kBool : at::kFloat, handles);
  if (x == nullptr || !x->is_contiguous() || x->sizes() != at::IntArrayRef(sizes_)) return false;
  out.tensor = x;
  return true;
}

const at::Tensor* ElementwiseRun::stored(const ir::TensorIr& t, at::ScalarType type,
                                         const HandleTable& handles) const {
  if (std::find(consumed_.begin(), consumed_.end(), t.id.value) != consumed_.end()) return nullptr;
  const auto it = handles.find(t.id.value);
  if (it == handles.end()) return nullptr;
  const Handle& h = it->second;
  if (!h.plain() || !h.tensor.device().is_cpu() || h.tensor.layout() != at::kStrided ||
      h.tensor.scalar_type() != type) {
    return nullptr;
  }
  return &h.tensor;
}

bool ElementwiseRun::one_element(const ir::TensorIr& t, const HandleTable& handles,
                                 Operand& out) const {
  if (t.dtype.kind != ir::DTypeKind::F32 || ir::num_elements(t.shape.dims) != 1 ||
      t.shape.dims.size() > sizes_.size() || find_pending(t.id.value) >= 0) {
    return false;
  }
  const at::Tensor* x = stored(t, at::kFloat, handles);
  if (x == nullptr || x->numel() != 1) return false;
  out.tensor = x;
  return true;
}

bool ElementwiseRun::name_operands(const ir::OperationIr& op, fused::Form form, Op& o, Named& t) {
  switch (form) {
    case fused::Form::kUnary: {
      const auto& p = op.as<ir::UnaryOpIr>();
      t = {&p.input, nullptr, nullptr, &p.out};
      return true;
    }
    case fused::Form::kBinary: {
      const auto& p = op.as<ir::BinaryOpIr>();
      t = {&p.lhs, &p.rhs, nullptr, &p.out};
      return true;
    }
    case fused::Form::kScalar: {
      const auto& p = op.as<ir::ScalarOpIr>();
      t = {&p.lhs, nullptr, nullptr, &p.out};
      return f32_scalar(p.rhs, o.scalar);
    }
    case fused::Form::kMaskFill: {
      const auto& p = op.as<ir::MaskFillOpIr>();
      t = {&p.tensor, nullptr, &p.mask, &p.out};
      return f32_scalar(p.value, o.scalar);
    }
    case fused::Form::kMaskWhere: {
      const auto& p = op.as<ir::MaskWhereOpIr>();
      t = {&p.tensor, &p.value, &p.mask, &p.out};
      return true;
    }
    case fused::Form::kCreation: {
      t = {nullptr, nullptr, nullptr, &op.as<ir::CreationOpIr>().out};
      o.scalar = o.kernel == fused::Kernel::kOnes ? 1.0f : 0.0f;
      return true;
    }
    case fused::Form::kFull: {
      const auto& p = op.as<ir::FullOpIr>();
      t = {nullptr, nullptr, nullptr, &p.out};
      return f32_scalar(p.value, o.scalar);
    }
    default:
      return false;
  }
}

bool ElementwiseRun::fits(const ir::TensorIr& out, const HandleTable& handles) {
  if (ops_.empty()) {
    sizes_.assign(out.shape.dims.begin(), out.shape.dims.end());
    numel_ = static_cast<std::int64_t>(ir::num_elements(out.shape.dims));
    if (numel_ == 0 || (numel_ >= kParallelFrom && at::get_num_threads() > 1)) return false;
  } else if (!same_dims(out.shape.dims, sizes_)) {
    return false;
  }
  if (static_cast<std::int64_t>(pending_.size() + 1) * numel_ * 4 > kMaxLiveBytes) return false;
  const std::uint64_t id = out.id.value;
  return handles.find(id) == handles.end() && find_pending(id) < 0 &&
         std::find(consumed_.begin(), consumed_.end(), id) == consumed_.end();
}

bool ElementwiseRun::try_add(const ir::OperationIr& op, const HandleTable& handles) {
  const fused::Fusion fusion = fused::fusion_of(op.kind);
  if (fusion.kernel == fused::Kernel::kNone || ops_.size() >= kMaxOps) return false;
  if (const auto fn = fused::vml_of(fusion.kernel); fn && !vml::usable(*fn)) return false;
  Op o{};
  o.kernel = fusion.kernel;
  const fused::Types types = fused::types_of(fusion.kernel);
  o.bool_in = types.bool_in;
  o.bool_out = types.bool_out;
  Named t;
  if (!name_operands(op, fusion.form, o, t)) return false;
  if (ir::category_has_dtype(op.category()) && op.dtype.kind != ir::DTypeKind::F32) return false;
  if (o.bool_out ? !t.out->dtype.is_bool() : t.out->dtype.kind != ir::DTypeKind::F32) return false;
  if (!fits(*t.out, handles)) return false;
  if (t.a && !operand(*t.a, o.bool_in, handles, o.a)) return false;
  if (t.b && !operand(*t.b, o.bool_in, handles, o.b)) {
    if (fusion.form != fused::Form::kBinary || o.bool_in || !one_element(*t.b, handles, o.b)) {
      return false;
    }
    o.b_one = true;
  }
  if (t.mask && !operand(*t.mask, true, handles, o.mask)) return false;
  record(o, t);
  return true;
}

void ElementwiseRun::record(Op o, const Named& t) {
  const auto index = static_cast<std::int32_t>(ops_.size());
  o.out_id = t.out->id.value;
  for (const auto& [in, operand] :
       {std::pair{t.a, o.a}, std::pair{t.b, o.b}, std::pair{t.mask, o.mask}}) {
    if (in == nullptr) continue;
    if (operand.value >= 0) ops_[operand.value].last_use = index;
    if (in->status != ir::TensorStatus::ReadWrite) continue;
    if (operand.value >= 0) {
      if (const std::ptrdiff_t at = find_pending(in->id.value); at >= 0) {
        pending_[static_cast<std::size_t>(at)] = pending_.back();
        pending_.pop_back();
        pending_bytes_ -= result_bytes(ops_[operand.value]);
      }
    } else if (std::find(consumed_.begin(), consumed_.end(), in->id.value) == consumed_.end()) {
      consumed_.push_back(in->id.value);
      // A stored operand is a plain f32 or bool tensor of the run's shape, or of one element.
      consumed_bytes_ += ir::num_elements(in->shape.dims) *
                         static_cast<std::uint64_t>(in->dtype.is_bool() ? 1 : 4);
    }
  }
  ops_.push_back(o);
  pending_.emplace_back(o.out_id, index);
  pending_bytes_ += result_bytes(o);
}

std::vector<std::uint64_t> ElementwiseRun::outputs() const {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, index] : pending_) ids.push_back(id);
  return ids;
}

std::ptrdiff_t ElementwiseRun::find_pending(std::uint64_t id) const {
  for (std::size_t i = pending_.size(); i-- > 0;) {
    if (pending_[i].first == id) return static_cast<std::ptrdiff_t>(i);
  }
  return -1;
}

std::uint64_t ElementwiseRun::result_bytes(const Op& op) const {
  return static_cast<std::uint64_t>(numel_) * (op.bool_out ? 1 : 4);
}

void ElementwiseRun::clear() {
  stored_.clear();
  pending_bytes_ = 0;
  consumed_bytes_ = 0;
  ops_.clear();
  pending_.clear();
  consumed_.clear();
  sizes_.clear();
  numel_ = 0;
}

void ElementwiseRun::place_results(std::size_t stride) {
  // Where each result lives: its own tensor when stored, else a scratch slot of one block (of the
  // run's size where that is smaller), reused once its last reader has run.
  const std::size_t n = ops_.size();
  stored_.clear();
  stored_.resize(n);
  slot_.assign(n, -1);
  free_slots_.clear();
  std::int32_t slots = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Op& o = ops_[i];
    // The result's place is taken before the inputs' are given back: a result never shares a
    // slot with an input (a bool and a float element differ in width).
    if (o.stored) {
      stored_[i] = small_cpu::empty(sizes_, o.bool_out ? at::kBool : at::kFloat);
    } else if (!free_slots_.empty()) {
      slot_[i] = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot_[i] = slots++;
    }
    for (const Operand* in : {&o.a, &o.b, &o.mask}) {
      if (in->value >= 0 && !ops_[in->value].stored && ops_[in->value].last_use == int(i) &&
          std::find(free_slots_.begin(), free_slots_.end(), slot_[in->value]) ==
              free_slots_.end()) {
        free_slots_.push_back(slot_[in->value]);
      }
    }
    if (!o.stored && o.last_use < 0) free_slots_.push_back(slot_[i]);  // never read: dead at once
  }
  // Never read before it is written: its old contents do not matter.
  if (scratch_.size() < static_cast<std::size_t>(slots) * stride) {
    scratch_.resize(static_cast<std::size_t>(slots) * stride);
  }
  const auto where_result = [&](std::int32_t v) {
    if (ops_[v].stored) return Place{stored_[v].data_ptr(), true};
    return Place{scratch_.data() + static_cast<std::size_t>(slot_[v]) * stride, false};
  };
  const auto where = [&](const Operand& o) {
    if (o.tensor != nullptr) return Place{o.tensor->data_ptr(), true};
    if (o.value >= 0) return where_result(o.value);
    return Place{};
  };
  bound_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    bound_[i] = {where(ops_[i].a), where(ops_[i].b), where(ops_[i].mask),
                 where_result(static_cast<std::int32_t>(i))};
  }
}

void ElementwiseRun::flush(HandleTable& handles) {
  if (ops_.empty()) return;
  const std::size_t n = ops_.size();
  for (const auto& [id, index] : pending_) ops_[index].stored = true;
  // One block of 4-byte elements per slot (a bool result uses the first quarter), 64-byte
  // multiples.
  place_results(static_cast<std::size_t>((std::min(kBlock, numel_) + 15) / 16 * 16));
  for (std::int64_t start = 0; start < numel_; start += kBlock) {
    const std::int64_t len = std::min(kBlock, numel_ - start);
    for (std::size_t i = 0; i < n; ++i) evaluate(ops_[i], bound_[i], start, len);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (ops_[i].stored) handles.set(ops_[i].out_id, Handle{std::move(stored_[i])});
  }
  for (const std::uint64_t id : consumed_) handles.erase(id);
  clear();
  // A long run's scratch (up to kMaxOps blocks, 4 MiB) is not kept for the session's lifetime.
  if (scratch_.capacity() > kKeepScratch) std::vector<float>().swap(scratch_);
}

}  // namespace tb::backend::libtorch
