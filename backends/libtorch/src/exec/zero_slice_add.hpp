// Burn's autodiff of a slice, held until the add that takes it.
//
// The gradient of x.slice(r) is zeros(x.shape).slice_assign(r, g), added to x's gradient: three
// ops, and a fill and an add over the whole of x for a region of it. CTC loss's backward does this
// at every time step into its [T, N, C] gradient (1,480 times per run of Burn's heavy benchmark,
// for 258 of 103,716 elements each), the largest part of its host's work. The executor holds a
// large zero tensor (stored, not filled); when the next op assigns a slice of it, it holds the
// assignment (the value and its region); when the next op adds that to a tensor it may update in
// place (consumed, contiguous, nothing else holding its memory), it writes the sum into that
// tensor's own memory: `a[r] + g` in the region, `a + 0` outside it. Any other next op, and every
// other way into the executor, first fills what is held, as the ops would have.
//
// `0 + a` is `a` except that -0.0 becomes +0.0, so outside the region the elements that may hold
// -0.0 are rewritten as `a + 0`: the same bits as the add. Burn adds the slices of one gradient
// one after another into one sum, so the executor remembers which region of the last sum it wrote,
// the only place a -0.0 may remain, for as long as nothing else runs, and then rewrites that
// region only.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "exec/handle_table.hpp"
#include "lower/slice_region.hpp"
#include "torchbridge/ir/operation.hpp"

namespace tb::backend::libtorch {

class ZeroSliceAdd {
 public:
  // Zero tensors of fewer elements join element-wise runs instead: for them a fill and an add
  // cost less than the bookkeeping.
  static constexpr std::uint64_t kMinElements = 4096;

  // A zero tensor, or one with a slice assigned, is held: it is filled before any other op.
  bool pending() const { return state_ != State::kNone; }
  // Nothing held and no last sum remembered: nothing to do before another op.
  bool idle() const { return state_ == State::kNone && !has_sum_; }
  std::uint64_t held_id() const { return id_; }
  // Bytes held outside the handle table (a consumed slice value), for the memory limits.
  std::uint64_t held_bytes() const { return value_erased_ ? value_.nbytes() : 0; }
  // Sums written in place (for tests).
  std::uint64_t added() const { return added_; }

  // Whether `op` continues the pattern where it stands, by its kind, ids, dtype and size: the
  // executor runs what else it defers first, then calls take().
  bool continues(const ir::OperationIr& op) const;
  // Takes `op` where its tensors in `handles` qualify; false, nothing changed, otherwise. May
  // throw (an allocation) before changing anything. `op` must continue the pattern.
  bool take(const ir::OperationIr& op, HandleTable& handles);
  // Fills what is held into its stored tensor and forgets the last sum. May throw; cleared
  // either way.
  void materialize();
  void clear();

 private:
  enum class State { kNone, kZeros, kSlice };
  bool hold_zeros(const ir::CreationOpIr& p, HandleTable& handles);
  bool hold_slice(const ir::SliceAssignOpIr& p, HandleTable& handles);
  bool add_into(const ir::BinaryOpIr& p, HandleTable& handles);
  // a[r] + g into the region, a + 0 over `dirty_` or, where `whole`, over all of `a`.
  template <class T>
  void write_sum(at::Tensor& a, bool held_first, bool whole);

  State state_ = State::kNone;
  std::uint64_t id_ = 0;
  at::Tensor held_;  // stored under id_, contiguous, not yet written
  ir::DType held_dtype_;
  SliceRegion region_;
  at::Tensor value_;  // kSlice: what goes into region_ of held_
  bool value_erased_ = false;
  // The last sum add_into wrote, while nothing else has run: -0.0 may remain in dirty_ only.
  bool has_sum_ = false;
  std::uint64_t sum_id_ = 0;
  const c10::TensorImpl* sum_impl_ = nullptr;
  SliceRegion dirty_;
  std::vector<double> scratch_;  // a[r] + g, before the region is written
  std::uint64_t added_ = 0;
};

}  // namespace tb::backend::libtorch
