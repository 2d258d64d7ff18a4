#include "exec/elementwise_run.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/Parallel.h>

namespace tb::backend::libtorch {
namespace {

using ir::OpKind;

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

// The second operand of a binary op: a tensor's elements, or one scalar for all.
struct Scalar {
  float v;
  float operator[](std::int64_t) const { return v; }
};

template <class Fn, class B>
void arith(Fn fn, const float* a, B b, std::int64_t len, float* y) {
  switch (fn) {
    case Fn::kAdd:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] + b[k];
      break;
    case Fn::kSub:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] - b[k];
      break;
    case Fn::kMul:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] * b[k];
      break;
    default:  // kDiv
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] / b[k];
      break;
  }
}

template <class Fn, class B>
void compare(Fn fn, const float* a, B b, std::int64_t len, bool* y) {
  switch (fn) {
    case Fn::kLower:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] < b[k];
      break;
    case Fn::kLowerEqual:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] <= b[k];
      break;
    case Fn::kGreater:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] > b[k];
      break;
    case Fn::kGreaterEqual:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] >= b[k];
      break;
    case Fn::kEqual:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] == b[k];
      break;
    default:  // kNotEqual
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] != b[k];
      break;
  }
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
  if (std::find(consumed_.begin(), consumed_.end(), t.id.value) != consumed_.end()) return false;
  const auto it = handles.find(t.id.value);
  if (it == handles.end()) return false;
  const Handle& h = it->second;
  if (h.failure || h.q || h.held || !h.tensor.defined() || !h.tensor.device().is_cpu() ||
      h.tensor.scalar_type() != (is_bool ? at::kBool : at::kFloat) || !h.tensor.is_contiguous() ||
      h.tensor.sizes() != at::IntArrayRef(sizes_)) {
    return false;
  }
  out.tensor = &h.tensor;
  return true;
}

bool ElementwiseRun::try_add(const ir::OperationIr& op, const HandleTable& handles) {
  if (ops_.size() >= kMaxOps) return false;
  Op o{};
  const ir::TensorIr* a = nullptr;
  const ir::TensorIr* b = nullptr;
  const ir::TensorIr* mask = nullptr;
  const ir::TensorIr* out = nullptr;
  const auto unary = [&](Fn fn) {
    const auto& p = op.as<ir::UnaryOpIr>();
    o.fn = fn;
    a = &p.input;
    out = &p.out;
    return true;
  };
  const auto binary = [&](Fn fn) {
    const auto& p = op.as<ir::BinaryOpIr>();
    o.fn = fn;
    a = &p.lhs;
    b = &p.rhs;
    out = &p.out;
    return true;
  };
  const auto scalar = [&](Fn fn) {
    const auto& p = op.as<ir::ScalarOpIr>();
    o.fn = fn;
    a = &p.lhs;
    out = &p.out;
    return f32_scalar(p.rhs, o.scalar);
  };
  bool known = false;
  switch (op.kind) {
    case OpKind::NumericFloat_Add:
      known = binary(Fn::kAdd);
      break;
    case OpKind::NumericFloat_Sub:
      known = binary(Fn::kSub);
      break;
    case OpKind::NumericFloat_Mul:
      known = binary(Fn::kMul);
      break;
    case OpKind::NumericFloat_Div:
      known = binary(Fn::kDiv);
      break;
    case OpKind::NumericFloat_AddScalar:
      known = scalar(Fn::kAdd);
      break;
    case OpKind::NumericFloat_SubScalar:
      known = scalar(Fn::kSub);
      break;
    case OpKind::NumericFloat_MulScalar:
      known = scalar(Fn::kMul);
      break;
    case OpKind::NumericFloat_DivScalar:
      known = scalar(Fn::kDiv);
      break;
    case OpKind::NumericFloat_Neg:
      known = unary(Fn::kNeg);
      break;
    case OpKind::NumericFloat_Abs:
      known = unary(Fn::kAbs);
      break;
    case OpKind::Activation_Relu:
      known = unary(Fn::kRelu);
      break;
    case OpKind::NumericFloat_Lower:
      known = binary(Fn::kLower);
      break;
    case OpKind::NumericFloat_LowerEqual:
      known = binary(Fn::kLowerEqual);
      break;
    case OpKind::NumericFloat_Greater:
      known = binary(Fn::kGreater);
      break;
    case OpKind::NumericFloat_GreaterEqual:
      known = binary(Fn::kGreaterEqual);
      break;
    case OpKind::BaseFloat_Equal:
      known = binary(Fn::kEqual);
      break;
    case OpKind::BaseFloat_NotEqual:
      known = binary(Fn::kNotEqual);
      break;
    case OpKind::NumericFloat_LowerElem:
      known = scalar(Fn::kLower);
      break;
    case OpKind::NumericFloat_LowerEqualElem:
      known = scalar(Fn::kLowerEqual);
      break;
    case OpKind::NumericFloat_GreaterElem:
      known = scalar(Fn::kGreater);
      break;
    case OpKind::NumericFloat_GreaterEqualElem:
      known = scalar(Fn::kGreaterEqual);
      break;
    case OpKind::BaseFloat_EqualElem:
      known = scalar(Fn::kEqual);
      break;
    case OpKind::BaseFloat_NotEqualElem:
      known = scalar(Fn::kNotEqual);
      break;
    case OpKind::BaseFloat_MaskFill: {
      const auto& p = op.as<ir::MaskFillOpIr>();
      o.fn = Fn::kMaskFill;
      a = &p.tensor;
      mask = &p.mask;
      out = &p.out;
      known = f32_scalar(p.value, o.scalar);
      break;
    }
    case OpKind::BaseFloat_MaskWhere: {
      const auto& p = op.as<ir::MaskWhereOpIr>();
      o.fn = Fn::kMaskWhere;
      a = &p.tensor;
      b = &p.value;
      mask = &p.mask;
      out = &p.out;
      known = true;
      break;
    }
    case OpKind::Bool_Not:
      known = unary(Fn::kNot);
      break;
    case OpKind::Bool_And:
      known = binary(Fn::kAnd);
      break;
    case OpKind::Bool_Or:
      known = binary(Fn::kOr);
      break;
    case OpKind::Bool_Xor:
      known = binary(Fn::kXor);
      break;
    default:
      return false;
  }
  if (!known) return false;
  o.bool_in = o.fn >= Fn::kNot;
  o.bool_out = o.fn >= Fn::kLower;
  if (ir::category_has_dtype(op.category()) && op.dtype.kind != ir::DTypeKind::F32) return false;
  if (o.bool_out ? !out->dtype.is_bool() : out->dtype.kind != ir::DTypeKind::F32) return false;

  if (ops_.empty()) {
    sizes_.assign(out->shape.dims.begin(), out->shape.dims.end());
    numel_ = static_cast<std::int64_t>(ir::num_elements(out->shape.dims));
    if (numel_ == 0 || (numel_ >= kParallelFrom && at::get_num_threads() > 1)) return false;
  } else if (!same_dims(out->shape.dims, sizes_)) {
    return false;
  }
  if (static_cast<std::int64_t>(pending_.size() + 1) * numel_ * 4 > kMaxLiveBytes) return false;
  const std::uint64_t out_id = out->id.value;
  if (handles.find(out_id) != handles.end() || find_pending(out_id) >= 0 ||
      std::find(consumed_.begin(), consumed_.end(), out_id) != consumed_.end()) {
    return false;
  }
  if (!operand(*a, o.bool_in, handles, o.a)) return false;
  if (b && !operand(*b, o.bool_in, handles, o.b)) return false;
  if (mask && !operand(*mask, true, handles, o.mask)) return false;

  // Accepted: record the reads, then what the op consumes (ReadWrite: the input's last use).
  const auto index = static_cast<std::int32_t>(ops_.size());
  o.out_id = out_id;
  for (const auto& [t, operand] : {std::pair{a, o.a}, std::pair{b, o.b}, std::pair{mask, o.mask}}) {
    if (t == nullptr) continue;
    if (operand.value >= 0) ops_[operand.value].last_use = index;
    if (t->status != ir::TensorStatus::ReadWrite) continue;
    if (operand.value >= 0) {
      if (const std::ptrdiff_t at = find_pending(t->id.value); at >= 0) {
        pending_[static_cast<std::size_t>(at)] = pending_.back();
        pending_.pop_back();
        pending_bytes_ -= result_bytes(ops_[operand.value]);
      }
    } else if (std::find(consumed_.begin(), consumed_.end(), t->id.value) == consumed_.end()) {
      consumed_.push_back(t->id.value);
      // A stored operand is a plain contiguous f32 or bool tensor of the run's shape.
      consumed_bytes_ += static_cast<std::uint64_t>(numel_) * (t->dtype.is_bool() ? 1 : 4);
    }
  }
  ops_.push_back(o);
  pending_.emplace_back(out_id, index);
  pending_bytes_ += result_bytes(o);
  return true;
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

void ElementwiseRun::flush(HandleTable& handles) {
  if (ops_.empty()) return;
  const std::size_t n = ops_.size();
  for (const auto& [id, index] : pending_) ops_[index].stored = true;

  // Where each result lives: its own tensor when stored, else a scratch slot of one block (of the
  // run's size where that is smaller), reused once its last reader has run.
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
      stored_[i] = at::empty(sizes_, o.bool_out ? at::kBool : at::kFloat);
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
  // One block of 4-byte elements per slot (a bool result uses the first quarter), 64-byte
  // multiples. Never read before it is written: its old contents do not matter.
  const std::size_t stride = static_cast<std::size_t>((std::min(kBlock, numel_) + 15) / 16 * 16);
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

  for (std::int64_t start = 0; start < numel_; start += kBlock) {
    const std::int64_t len = std::min(kBlock, numel_ - start);
    for (std::size_t i = 0; i < n; ++i) {
      const Op& o = ops_[i];
      const Bound& p = bound_[i];
      const bool has_b = o.b.tensor != nullptr || o.b.value >= 0;
      if (o.bool_in) {
        const bool* a = p.a.at<const bool>(start);
        const bool* b = has_b ? p.b.at<const bool>(start) : nullptr;
        bool* y = p.out.at<bool>(start);
        switch (o.fn) {
          case Fn::kNot:
            for (std::int64_t k = 0; k < len; ++k) y[k] = !a[k];
            break;
          case Fn::kAnd:
            for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] && b[k];
            break;
          case Fn::kOr:
            for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] || b[k];
            break;
          default:  // kXor
            for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] != b[k];
            break;
        }
        continue;
      }
      const float* a = p.a.at<const float>(start);
      if (o.bool_out) {
        // IEEE comparisons, as ATen's: false for NaN, except not-equal.
        bool* y = p.out.at<bool>(start);
        if (has_b) {
          compare(o.fn, a, p.b.at<const float>(start), len, y);
        } else {
          compare(o.fn, a, Scalar{o.scalar}, len, y);
        }
        continue;
      }
      float* y = p.out.at<float>(start);
      const float s = o.scalar;
      switch (o.fn) {
        case Fn::kRelu:
          // ATen's threshold(x, 0, 0), the relu lowering: -0 becomes +0, NaN passes.
          for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] <= 0.0f ? 0.0f : a[k];
          continue;
        case Fn::kNeg:
          for (std::int64_t k = 0; k < len; ++k) y[k] = -a[k];
          continue;
        case Fn::kAbs:
          for (std::int64_t k = 0; k < len; ++k) y[k] = std::fabs(a[k]);
          continue;
        case Fn::kMaskFill: {
          const bool* m = p.mask.at<const bool>(start);
          for (std::int64_t k = 0; k < len; ++k) y[k] = m[k] ? s : a[k];
          continue;
        }
        case Fn::kMaskWhere: {
          const bool* m = p.mask.at<const bool>(start);
          const float* v = p.b.at<const float>(start);
          for (std::int64_t k = 0; k < len; ++k) y[k] = m[k] ? v[k] : a[k];
          continue;
        }
        default:
          break;
      }
      if (has_b) {
        arith(o.fn, a, p.b.at<const float>(start), len, y);
      } else {
        arith(o.fn, a, Scalar{s}, len, y);
      }
    }
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
