// How an op becomes ATen calls: the OpContext a lowering sees, and the table that maps every leaf
// of the IR (ir::OpKind) to its lowering. The table is built from the op tables' rows (their
// Lowering and Fn columns, see below and lowering.cpp): no op is listed here or in lowering.cpp.
//
// Rules for a lowering:
// - Read inputs with ctx.in(tensor_ir); they are resolved, present and unpoisoned before it runs.
//   Inputs may alias each other or other live tensors (views): never modify one in place, except
//   the tensor ctx.exclusive(t) hands out.
// - Write every output with ctx.out(out_ir, value); out() casts to the storage type of the
//   declared dtype and checks the declared shape, which is authoritative (Burn's semantics).
// - Semantics are Burn's, not PyTorch's, where they differ.
// - Return an Error (ctx.unsupported / ctx.invalid) for what cannot be done; ATen exceptions may
//   propagate: the executor catches them in one place per op and names the op.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "runtime/dtype.hpp"
#include "torchbridge/ir/operation.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::backend::libtorch {

// The value a slice assignment assigns, where the executor deferred computing it: `base[region] -
// w` for the region of a view of the tensor assigned into (exec/deferred_subtract.hpp). Set only
// for that op; the lowering takes it in place or has it computed.
class DeferredValue {
 public:
  // Writes the value into `target`'s region (sizes, strides, storage offset) where that region is
  // the one it was deferred for and nothing else it reads is there; false otherwise.
  virtual bool absorb_into(at::Tensor& target, at::IntArrayRef sizes, at::IntArrayRef strides,
                           std::int64_t offset) = 0;
  // Computes the value into the input tensor that holds it, reading the region of `base` (the
  // tensor assigned into, unchanged since).
  virtual void compute_from(const at::Tensor& base) = 0;

 protected:
  ~DeferredValue() = default;
};

class OpContext {
 public:
  struct Input {
    std::uint64_t id;
    const at::Tensor* tensor;
    // The op consumes this input (ReadWrite) and it is a plain tensor of the session's table: it
    // may be updated in place if nothing else shares it (exclusive()).
    bool consumed = false;
  };

  OpContext(const ir::OperationIr& op, const at::Device& device, at::Generator& generator,
            const CustomOpRegistry* custom_ops)
      : op_(op), device_(device), generator_(generator), custom_ops_(custom_ops) {}
  virtual ~OpContext() = default;

  const ir::OperationIr& op() const { return op_; }
  const at::Device& device() const { return device_; }
  at::Generator& generator() { return generator_; }
  const CustomOpRegistry* custom_ops() const { return custom_ops_; }

  const at::Tensor& in(const ir::TensorIr& t) const;
  std::optional<at::Tensor> in(const std::optional<ir::TensorIr>& t) const;
  std::vector<at::Tensor> in(const std::vector<ir::TensorIr>& ts) const;

  // Input `t` for an update in place, or null. Set only where the op consumes it and nothing else
  // can observe its memory: the one reference is the session's handle (no alias, no pending read
  // or download), no other tensor views its storage, the op does not read it a second time, and
  // its elements are dense (no expanded or overlapping strides). The result must still be stored
  // with out(): an update in place saves the copy of the whole tensor that a slice or scatter
  // assignment otherwise costs (Burn's LU and CTC loops assign rows into large tensors).
  const at::Tensor* exclusive(const ir::TensorIr& t) const;
  // The storage of the last input exclusive() handed out (the executor counts outputs over it).
  const void* handed_out() const { return handed_out_; }

  // Stores an output (see the rules above).
  Status out(const ir::TensorIr& t, const at::Tensor& value);
  // Stores an output that holds `held` rather than its declared dtype, and is read back as
  // `held`: where Burn's backends answer in a dtype of their own whatever the IR declares (Flex
  // and burn-tch give int argmax/argmin as I64).
  Status out(const ir::TensorIr& t, const at::Tensor& value, const ir::DType& held);

  // For ops whose work a scalar sizes (repeat counts, interpolation sizes): the output `t` must be
  // declared with the shape the scalars make, checked *before* the work. The host's memory limits
  // check declared shapes, so a scalar larger than its declared output would bypass them.
  Status declared_as(const ir::TensorIr& t, at::IntArrayRef expected) const;

  // Options for creating a tensor of `dtype` on this device.
  at::TensorOptions options(const ir::DType& dtype) const {
    return at::TensorOptions().dtype(storage_type(dtype)).device(device_);
  }

  template <class... Args>
  Error unsupported(fmt::format_string<Args...> f, Args&&... args) const {
    return make_error(ErrorCode::kUnsupported, f, std::forward<Args>(args)...);
  }
  template <class... Args>
  Error invalid(fmt::format_string<Args...> f, Args&&... args) const {
    return make_error(ErrorCode::kInvalidArgument, f, std::forward<Args>(args)...);
  }

  // Filled by the executor.
  std::vector<Input> inputs;
  // Set by the executor for a slice assignment whose value it deferred (see DeferredValue).
  DeferredValue* deferred_value = nullptr;

 protected:
  // Called by out() once the value is validated and in the storage form of `held`.
  virtual void store(const ir::TensorIr& t, at::Tensor value, const ir::DType& held) = 0;
  // Gives the session's other tensors that view `x` (input `id`, not a view itself) copies of
  // their own, so that `x` becomes the sole holder of its memory; false where nothing changed
  // (here: there is no session table to look in).
  virtual bool unshare(std::uint64_t /*id*/, const at::Tensor& /*x*/) const { return false; }

 private:
  // Nothing but `x` (and, for a view, its base) holds `x`'s memory.
  static bool sole_holder(const at::Tensor& x);

  const ir::OperationIr& op_;
  const at::Device& device_;
  at::Generator& generator_;
  const CustomOpRegistry* custom_ops_;
  mutable std::size_t next_input_ = 0;  // in()'s guess at the next input read
  mutable const void* handed_out_ = nullptr;
};

using LowerFn = std::function<Status(OpContext&, const ir::OperationIr&)>;

class LoweringTable {
 public:
  struct Entry {
    LowerFn fn;
    std::string note;  // a documented limit (limit()), empty for most leaves
  };

  // Registers the lowering of one leaf; `f(ctx, payload)` gets the leaf's payload type.
  template <ir::OpKind K, class F>
  void on(F f) {
    using P = ir::PayloadOfT<K>;
    set(K, [f](OpContext& ctx, const ir::OperationIr& op) -> Status {
      return f(ctx, std::get<P>(op.payload));
    });
  }
  // A lowered leaf with a documented limit (some options answer a clear error); shown by
  // `torchbridge ops` and docs/op-coverage.md.
  void limit(ir::OpKind kind, std::string note);

  const Entry& entry(ir::OpKind kind) const { return entries_[static_cast<std::size_t>(kind)]; }
  // Leaves registered more than once (a bug the coverage test reports).
  const std::vector<ir::OpKind>& duplicates() const { return duplicates_; }

 private:
  void set(ir::OpKind kind, LowerFn fn);
  std::array<Entry, ir::kOpKindCount> entries_;
  std::vector<ir::OpKind> duplicates_;
};

const LoweringTable& lowering_table();

// ---- The lowering of every leaf, generated from the op tables' Lowering column --------------
//
// An `own` row is lowered by a function of its own, declared here and defined in the family file
// (lower_<family>.cpp), so a missing one is a link error: `lower_<Table>_<Variant>`, one function
// for every category of the table (lower_Base_Reshape serves BaseFloat, BaseInt and BaseBool;
// lower_Numeric_Abs serves NumericFloat and NumericInt). A `split` row has one function per
// category, `lower_<Category>_<Variant>` (lower_NumericFloat_Mean, lower_NumericInt_Mean): the
// float/int choice is made once, when the table is built. Every other family is a template or
// function of lower_families.hpp, conv_family.hpp or pool_family.hpp, expanded in lowering.cpp
// from the row's Fn column; the Numeric families
// (arith, compare, ...) are also templates on TB_LOWER_IS_FLOAT(Category), so their float/int
// choice is made when the table is built too.
#define TB_LOWER_TABLE_BaseFloat Base
#define TB_LOWER_TABLE_BaseInt Base
#define TB_LOWER_TABLE_BaseBool Base
#define TB_LOWER_TABLE_NumericFloat Numeric
#define TB_LOWER_TABLE_NumericInt Numeric
#define TB_LOWER_TABLE_Bool Bool
#define TB_LOWER_TABLE_Int Int
#define TB_LOWER_TABLE_Float Float
#define TB_LOWER_TABLE_Module Module
#define TB_LOWER_TABLE_Init Init
#define TB_LOWER_TABLE_Custom Custom
#define TB_LOWER_TABLE_Drop Drop
#define TB_LOWER_TABLE_Distributed Distributed
#define TB_LOWER_TABLE_Activation Activation
// Whether a Numeric category's rows lower float tensors (the IsFloat of the Numeric families).
#define TB_LOWER_IS_FLOAT_NumericFloat true
#define TB_LOWER_IS_FLOAT_NumericInt false
#define TB_LOWER_IS_FLOAT(Cat) TB_LOWER_IS_FLOAT_##Cat
#define TB_LOWER_NAME_II(T, V) lower_##T##_##V
#define TB_LOWER_NAME_I(T, V) TB_LOWER_NAME_II(T, V)
// The function of an `own` row, and of a `split` row.
#define TB_LOWER_OWN(Cat, V) TB_LOWER_NAME_I(TB_LOWER_TABLE_##Cat, V)
#define TB_LOWER_SPLIT(Cat, V) TB_LOWER_NAME_II(Cat, V)

#define TB_LOWER_DECLARE(Cat, V, P, Lowering, Fn, Wire) TB_LOWER_DECLARE_##Lowering(Cat, V, P)
#define TB_LOWER_DECLARE_own(Cat, V, P) \
  Status TB_LOWER_OWN(Cat, V)(OpContext & ctx, const ir::P& op);
#define TB_LOWER_DECLARE_split(Cat, V, P) \
  Status TB_LOWER_SPLIT(Cat, V)(OpContext & ctx, const ir::P& op);
#define TB_LOWER_DECLARE_float_unary(Cat, V, P)
#define TB_LOWER_DECLARE_float_binary(Cat, V, P)
#define TB_LOWER_DECLARE_along_dim(Cat, V, P)
#define TB_LOWER_DECLARE_bitwise(Cat, V, P)
#define TB_LOWER_DECLARE_bitwise_scalar(Cat, V, P)
#define TB_LOWER_DECLARE_logical(Cat, V, P)
#define TB_LOWER_DECLARE_arith(Cat, V, P)
#define TB_LOWER_DECLARE_arith_scalar(Cat, V, P)
#define TB_LOWER_DECLARE_compare(Cat, V, P)
#define TB_LOWER_DECLARE_compare_elem(Cat, V, P)
#define TB_LOWER_DECLARE_conv(Cat, V, P)
#define TB_LOWER_DECLARE_conv_backward(Cat, V, P)
#define TB_LOWER_DECLARE_conv_bias_backward(Cat, V, P)
#define TB_LOWER_DECLARE_conv_transpose(Cat, V, P)
#define TB_LOWER_DECLARE_conv_transpose_weight_backward(Cat, V, P)
#define TB_LOWER_DECLARE_avg_pool(Cat, V, P)
#define TB_LOWER_DECLARE_avg_pool_backward(Cat, V, P)
#define TB_LOWER_DECLARE_max_pool(Cat, V, P)
#define TB_LOWER_DECLARE_max_pool_backward(Cat, V, P)
#define TB_LOWER_DECLARE_extremum(Cat, V, P)
#define TB_LOWER_DECLARE_arg_extremum(Cat, V, P)
#define TB_LOWER_DECLARE_clamp_bound(Cat, V, P)
#define TB_LOWER_DECLARE_float_test(Cat, V, P)
#define TB_LOWER_DECLARE_shift(Cat, V, P)
#define TB_LOWER_DECLARE_shift_scalar(Cat, V, P)
TB_OP_LEAVES(TB_LOWER_DECLARE)

// The custom ops every LibTorch device serves whatever the host registers (burn-signal's
// `signal::rfft` / `signal::irfft`, signal_ops.cpp). A handler the host registers under the same
// id takes precedence.
void add_signal_ops(CustomOpRegistry& registry);
const CustomOpRegistry& builtin_custom_ops();

}  // namespace tb::backend::libtorch
