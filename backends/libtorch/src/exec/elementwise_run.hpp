// Chains of element-wise ops run as one loop (issue 18, compiled replays).
//
// Burn's fusion client sends chains of element-wise ops as one registered graph and replays it by
// id; its plain client sends them one by one. Each op on a small tensor costs ATen's dispatch, a
// TensorIterator and a new storage, several times what the arithmetic costs. The executor defers
// the ops this class accepts, whichever way they come, and evaluates the whole run block by block
// when anything else reaches it (another op, a read, a sync, a transfer): every op over one block
// of elements while it is in cache, intermediates consumed within the run never materialised.
// Only ops whose results are bit for bit those of their lowerings are accepted (which ones, and
// with which kernel, is read off the op tables' rows: elementwise_rows.hpp), on contiguous CPU
// tensors of the run's one shape (or, for a binary op's second operand, a one-element tensor
// broadcast over it): f32 add, sub, mul and div (with a tensor or a scalar), neg, abs
// and relu; reciprocal, floor, ceil, trunc and round; Burn's sign; exp, log and sqrt through
// MKL's functions, as ATen computes them (runtime/vml.hpp); zeros, ones and full (Burn's autodiff
// makes a zero tensor for nearly every masked choice it differentiates); comparisons (with a tensor
// or a scalar), the mask fill and the masked choice (which make ReLU as the fusion client sends it,
// and Burn's decompositions such as CTC loss's log-sum-exp); not, and, or and xor of bools.
// Anything else ends the run: it is evaluated, then the op runs as usual. The kernels are in
// elementwise_kernels.cpp.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "exec/elementwise_rows.hpp"
#include "exec/handle_table.hpp"
#include "torchbridge/ir/operation.hpp"

namespace tb::backend::libtorch {

class ElementwiseRun {
 public:
  // Records `op` when it can join the run, given the tensors in `handles` (never changed here).
  bool try_add(const ir::OperationIr& op, const HandleTable& handles);
  bool empty() const { return ops_.empty(); }
  std::size_t size() const { return ops_.size(); }
  // Evaluates the recorded ops: stores the results still referenced afterwards in `handles`,
  // erases the inputs the run consumed (ReadWrite), and empties the run. ATen allocates the
  // stored results: it may throw (the caller's guard poisons `outputs()` then).
  void flush(HandleTable& handles);
  // The ids the pending ops will store (for poisoning when flush fails).
  std::vector<std::uint64_t> outputs() const;
  // What running the ops one by one would have changed in the handle table by now: the results
  // still referenced (stored at flush), and the stored inputs consumed (erased at flush).
  std::uint64_t pending_tensors() const { return pending_.size(); }
  std::uint64_t pending_bytes() const { return pending_bytes_; }
  std::uint64_t consumed_tensors() const { return consumed_.size(); }
  std::uint64_t consumed_bytes() const { return consumed_bytes_; }
  void clear();

 private:
  // An operand: a tensor of the handle table, a pending op's result, or nothing.
  struct Operand {
    const at::Tensor* tensor = nullptr;  // a stored tensor (kept alive by `handles` until flush)
    std::int32_t value = -1;             // index of the pending op whose result it is
  };
  struct Op {
    fused::Kernel kernel;
    Operand a, b, mask;
    float scalar = 0;      // the scalar operand, or the fill value
    bool b_one = false;    // b is a stored one-element f32 tensor, broadcast: read as a scalar
    bool bool_in = false;  // a and b are bool
    bool bool_out = false;
    std::uint64_t out_id;
    std::int32_t last_use = -1;  // the last op reading this result (-1: none in the run)
    bool stored = false;         // referenced after the run: materialised in a tensor
  };

  // Where an operand is during flush: its base pointer, and whether it moves with the block (a
  // tensor) or not (a scratch slot of one block).
  struct Place {
    void* base = nullptr;
    bool moves = false;
    template <class T>
    T* at(std::int64_t start) const {
      return reinterpret_cast<T*>(static_cast<char*>(base) + (moves ? start * sizeof(T) : 0));
    }
  };
  struct Bound {
    Place a, b, mask, out;
  };

  // The tensors an op names, by its payload's form.
  struct Named {
    const ir::TensorIr* a = nullptr;
    const ir::TensorIr* b = nullptr;
    const ir::TensorIr* mask = nullptr;
    const ir::TensorIr* out = nullptr;
  };
  static bool name_operands(const ir::OperationIr& op, fused::Form form, Op& o, Named& t);
  // Whether a result of `out`'s shape fits the run (its shape, its live bytes, a fresh id).
  bool fits(const ir::TensorIr& out, const HandleTable& handles);
  bool operand(const ir::TensorIr& t, bool is_bool, const HandleTable& handles, Operand& out);
  // `t`'s tensor in `handles` where a run may read it: of `type`, on the CPU, strided, not
  // consumed by the run, failed, quantized or held; else null.
  const at::Tensor* stored(const ir::TensorIr& t, at::ScalarType type,
                           const HandleTable& handles) const;
  // A binary f32 op's second operand as a stored tensor of one element, broadcast over the run
  // (Burn's LU divides its column by the pivot, a [1, 1] tensor; QR by its u0): its value is read
  // at flush, as the op would have read it then.
  bool one_element(const ir::TensorIr& t, const HandleTable& handles, Operand& out) const;
  // Records an accepted op: its reads, and the inputs it consumes (ReadWrite: their last use).
  void record(Op o, const Named& t);
  // flush's steps: where each result lives, then each op's kernel over one block of elements.
  void place_results(std::size_t stride_floats);
  static void evaluate(const Op& o, const Bound& p, std::int64_t start, std::int64_t len);
  std::uint64_t result_bytes(const Op& op) const;
  // The position of `id` in pending_, or -1.
  std::ptrdiff_t find_pending(std::uint64_t id) const;

  std::vector<Op> ops_;
  std::vector<std::int64_t> sizes_;  // the run's shape
  std::int64_t numel_ = 0;
  // Live results: (out id, op index). A flat list searched from its end, where a chain's next
  // input is: a hash map's node allocation per op was most of the deferral's cost, and a run
  // holds at most kMaxOps entries.
  std::vector<std::pair<std::uint64_t, std::int32_t>> pending_;
  std::vector<std::uint64_t> consumed_;  // stored inputs read ReadWrite
  std::uint64_t pending_bytes_ = 0;      // of the results in pending_
  std::uint64_t consumed_bytes_ = 0;     // of the inputs in consumed_
  // flush's working space, kept with its capacity from one run to the next: a run of a few ops on
  // small tensors (Burn's CTC loop) was mostly this bookkeeping, allocated and zeroed each time.
  std::vector<at::Tensor> stored_;
  std::vector<std::int32_t> slot_, free_slots_;
  std::vector<float> scratch_;
  std::vector<Bound> bound_;
};

}  // namespace tb::backend::libtorch
