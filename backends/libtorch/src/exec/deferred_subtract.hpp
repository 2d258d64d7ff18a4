// A subtraction deferred by one op, so that a slice assignment of its result can write it in place.
//
// Burn's LU (and so det) updates its trailing block at every pivot as
//   t = t.slice_assign(r, t.slice(r) - w)
// that is: a subtraction of a view of `t` into a fresh tensor, then a copy of that tensor into the
// same region of `t`. Run op by op, the block is read twice and written twice, and a tensor of its
// size is made and freed. The executor defers such a subtraction (a row-major view of a larger
// tensor minus a contiguous tensor of its shape, f32 or f64 on the CPU, both consumed by it): its
// result is stored at once as a tensor not yet computed. When the next op is the slice
// assignment of that result into exactly the region the view covers, of a tensor the assignment
// may update in place (OpContext::exclusive), the lowering writes `view - w` into the region
// itself, with ATen's subtraction (at::sub_out, its output the view it reads): the same kernel,
// so the same bits. Any other next op, and every other way into the executor (reads, syncs,
// transfers, failures), first computes the result into its stored tensor, as the op would have.
//
// The subtrahend is itself an op before: w = matmul(column, row), an outer product (inner
// dimension 1). That matmul is held back the same way (its output stored, not computed), and when
// the next op is the subtraction consuming it, the subtraction is deferred with the column and
// the row in place of w: `view - w` is then computed element by element as b[j] * a[i] subtracted
// from the view (small_cpu::subtract_outer), the same values, and the [m, n] product is never
// written or read. Callgrind put the outer product and the subtraction at 9.2% and 7.4% of LU
// 500's instructions (fusion client), each a pass over the block.
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/ATen.h>

#include "exec/handle_table.hpp"
#include "lower/lowering.hpp"
#include "torchbridge/ir/operation.hpp"

namespace tb::backend::libtorch {

class DeferredSubtract final : public DeferredValue {
 public:
  bool pending() const { return out_.defined(); }
  // An outer product is held back (the next op may be the subtraction that consumes it).
  bool outer_pending() const { return outer_; }
  // How many subtractions took their outer product's operands instead of its result (for tests).
  std::uint64_t fused_outer() const { return fused_outer_; }

  // Defers `op` when it is a matmul small_cpu::outer_product computes, its inputs and output
  // plain tensors of the CPU; as try_defer does for a subtraction.
  bool try_defer_outer(const ir::OperationIr& op, HandleTable& handles);
  // Holds back a transpose of the held-back product's matrix dims (Burn's QR updates Q with
  // `q_sub - (w @ aw^T)^T`): the transpose of a b is b^T a^T, so it is held as the outer product of
  // the row and the column, each transposed, under the transpose's id. Taken only where the
  // transpose consumes the product, so the product itself is never needed.
  bool try_transpose_outer(const ir::OperationIr& op, HandleTable& handles);
  // Whether `op` may run while an outer product is held back: a slice that does not read it
  // (Burn's LU takes the view it subtracts from between the product and the subtraction), or the
  // drop of another tensor (Burn's QR drops the product's operands' sources there; the operands
  // are held as tensors, so their memory lives on). Neither writes, so the operands stay as they
  // were.
  bool lets_outer_wait(const ir::OperationIr& op) const;
  // How many results were written in place (for tests).
  std::uint64_t absorbed() const { return absorbed_; }
  std::uint64_t out_id() const { return out_id_; }

  // Defers `op` when it is such a subtraction: consumes its inputs from `handles` and stores its
  // result, uncomputed, under its output id. False, nothing changed, otherwise. May throw (ATen's
  // allocation). Taken while an outer product is held back only when `op` consumes it as w.
  bool try_defer(const ir::OperationIr& op, HandleTable& handles);

  // Whether `op` is a slice assignment that may take the pending result in place: it assigns that
  // result, consuming it, into a tensor of the view's memory. If so, the view is let go (its
  // region is kept), so that the tensor's memory has no other holder.
  bool prepare_absorb(const ir::OperationIr& op, const HandleTable& handles);

  // For the slice assignment prepare_absorb accepted (lower_Base_SliceAssign): in place where
  // `target`'s region is the view's and `w` reads none of its memory; else computed from `base`.
  bool absorb_into(at::Tensor& target, at::IntArrayRef sizes, at::IntArrayRef strides,
                   std::int64_t offset) override;
  void compute_from(const at::Tensor& base) override;

  // Computes the pending result into its stored tensor (any op but the absorbing one, any entry
  // point). May throw; the state is cleared either way.
  void materialize();
  void clear();

 private:
  std::uint64_t out_id_ = 0;
  at::Tensor out_;   // the stored result (shares its TensorImpl with the handle)
  at::Tensor view_;  // the minuend, until prepare_absorb lets it go
  at::Tensor w_;     // the subtrahend
  // The held-back outer product's operands ([m, 1] and [1, n]); with fused_, the subtraction's w
  // is their product, never computed.
  at::Tensor a_, b_;
  bool outer_ = false;  // the matmul is held back (out_ is its product, not yet a difference)
  bool fused_ = false;
  std::uint64_t fused_outer_ = 0;
  // The view's region in its storage.
  const c10::StorageImpl* storage_ = nullptr;
  c10::SmallVector<std::int64_t, 4> sizes_, strides_;
  std::int64_t offset_ = 0;
  std::uint64_t absorbed_ = 0;
};

}  // namespace tb::backend::libtorch
