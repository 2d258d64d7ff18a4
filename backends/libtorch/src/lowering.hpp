// How an op becomes ATen calls: the OpContext a lowering sees, and the table that maps every leaf
// of the IR (ir::OpKind) to its lowering. One registration function per op family
// (lower_<family>.cpp) fills the table; the coverage test checks that every leaf has an entry.
//
// Rules for a lowering:
// - Read inputs with ctx.in(tensor_ir); they are resolved, present and unpoisoned before it runs.
//   Inputs may alias each other or other live tensors (views): never modify one in place.
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

#include "dtype.hpp"
#include "torchbridge/ir/operation.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::backend::libtorch {

class OpContext {
 public:
  struct Input {
    std::uint64_t id;
    const at::Tensor* tensor;
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

  // Stores an output (see the rules above).
  Status out(const ir::TensorIr& t, const at::Tensor& value);
  // Stores an output that holds `held` rather than its declared dtype, and is read back as
  // `held`: where Burn's backends answer in a dtype of their own whatever the IR declares (Flex
  // and burn-tch give int argmax/argmin as I64).
  Status out(const ir::TensorIr& t, const at::Tensor& value, const ir::DType& held);

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

 protected:
  // Called by out() once the value is validated and in the storage form of `held`.
  virtual void store(const ir::TensorIr& t, at::Tensor value, const ir::DType& held) = 0;

 private:
  const ir::OperationIr& op_;
  const at::Device& device_;
  at::Generator& generator_;
  const CustomOpRegistry* custom_ops_;
};

using LowerFn = std::function<Status(OpContext&, const ir::OperationIr&)>;

class LoweringTable {
 public:
  struct Entry {
    LowerFn fn;
    bool lowered = false;
    std::string note;
  };

  // Registers the lowering of one leaf; `f(ctx, payload)` gets the leaf's payload type.
  template <ir::OpKind K, class F>
  void on(F f) {
    using P = ir::PayloadOfT<K>;
    set(K, [f](OpContext& ctx, const ir::OperationIr& op) -> Status {
      return f(ctx, std::get<P>(op.payload));
    });
  }
  // The same lowering for a Base variant under BaseFloat, BaseInt and BaseBool.
  template <ir::BaseOp V, class F>
  void on_base(F f) {
    on<ir::leaf_of(ir::OpCategory::BaseFloat, V)>(f);
    on<ir::leaf_of(ir::OpCategory::BaseInt, V)>(f);
    on<ir::leaf_of(ir::OpCategory::BaseBool, V)>(f);
  }
  // The same lowering for a Numeric variant under NumericFloat and NumericInt.
  template <ir::NumericOp V, class F>
  void on_numeric(F f) {
    on<ir::leaf_of(ir::OpCategory::NumericFloat, V)>(f);
    on<ir::leaf_of(ir::OpCategory::NumericInt, V)>(f);
  }
  // A leaf LibTorch truly cannot express: executing it is a clear error naming the reason.
  void unsupported(ir::OpKind kind, std::string reason);
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

// One per family file (lower_<family>.cpp).
void register_base_ops(LoweringTable& t);        // BaseOperationIr
void register_numeric_ops(LoweringTable& t);     // NumericOperationIr: element-wise, clamp, pad...
void register_reduce_ops(LoweringTable& t);      // NumericOperationIr: reductions, arg*, sort, cum*
void register_float_ops(LoweringTable& t);       // FloatOperationIr
void register_int_bool_ops(LoweringTable& t);    // IntOperationIr, BoolOperationIr
void register_activation_ops(LoweringTable& t);  // ActivationOperationIr
void register_conv_ops(LoweringTable& t);        // Module: conv, deformable, transposed
void register_module_ops(LoweringTable& t);      // Module: the rest
void register_quant_ops(LoweringTable& t);       // Float: Quantize, Dequantize
void register_misc_ops(LoweringTable& t);        // Init, Drop, Custom, Distributed

// The custom ops every LibTorch device serves whatever the host registers (burn-signal's
// `signal::rfft` / `signal::irfft`, signal_ops.cpp). A handler the host registers under the same
// id takes precedence.
void add_signal_ops(CustomOpRegistry& registry);
const CustomOpRegistry& builtin_custom_ops();

}  // namespace tb::backend::libtorch
