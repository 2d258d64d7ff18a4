// One session's tensors on one LibTorch device.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>

#include "exec/deferred_subtract.hpp"
#include "exec/elementwise_run.hpp"
#include "exec/failure_log.hpp"
#include "exec/handle_table.hpp"
#include "exec/op_profile.hpp"
#include "exec/zero_slice_add.hpp"
#include "quant/quant.hpp"
#include "torchbridge/backend/backend.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::backend::libtorch {

class QuantRewrite;

// A tensor parked for a same-host transfer.
class TorchTransferable final : public Transferable {
 public:
  TorchTransferable(at::Tensor tensor, ir::DType dtype)
      : tensor_(std::move(tensor)), dtype_(dtype) {}
  const ir::DType& dtype() const override { return dtype_; }
  std::vector<std::int64_t> shape() const override { return tensor_.sizes().vec(); }
  std::uint64_t bytes() const override {
    return static_cast<std::uint64_t>(tensor_.numel()) * tensor_.element_size();
  }
  const at::Tensor& tensor() const { return tensor_; }

 private:
  at::Tensor tensor_;
  ir::DType dtype_;
};

// A quantized tensor parked for a same-host transfer: dequantized by torch, requantized with the
// same scales where it arrives (quant::Transfer).
class QuantTransferable final : public Transferable {
 public:
  explicit QuantTransferable(quant::Transfer transfer)
      : transfer_(std::move(transfer)), dtype_(ir::DType::qfloat(transfer_.meta.scheme)) {}
  const ir::DType& dtype() const override { return dtype_; }
  std::vector<std::int64_t> shape() const override {
    return transfer_.raw ? transfer_.meta.shape() : transfer_.dequantized.sizes().vec();
  }
  std::uint64_t bytes() const override {
    const at::Tensor& t = transfer_.raw ? transfer_.meta.values : transfer_.dequantized;
    return static_cast<std::uint64_t>(t.numel()) * t.element_size();
  }
  const quant::Transfer& transfer() const { return transfer_; }

 private:
  quant::Transfer transfer_;
  ir::DType dtype_;
};

class LibTorchExecutor final : public Executor {
 public:
  // `fuse`: defer element-wise chains and run them as one loop (BackendOptions::fuse_elementwise).
  LibTorchExecutor(at::Device device, std::shared_ptr<const CustomOpRegistry> custom_ops,
                   bool fuse = true);
  ~LibTorchExecutor() override;

  Status register_tensor(ir::TensorId id, const ir::TensorData& data) override;
  Status register_alias(ir::TensorId new_id, ir::TensorId src) override;
  Result<ir::TensorData> read_tensor(const ir::TensorIr& tensor) override;
  void set_quant_rules(const QuantRules& rules) override { quant_rules_ = rules; }
  quant::Encoding quant_encoding() const {
    return quant_rules_.divide_ties_to_even ? quant::Encoding::kDivideHalfEven
                                            : quant::Encoding::kMulInverseHalfAway;
  }
  Status execute(const ir::OperationIr& op) override;
  bool has_deferred() const override {
    return !run_.empty() || deferred_.pending() || zero_slice_.pending();
  }
  Status sync() override;
  void fail(const Error& error, const std::vector<ir::TensorId>& poisoned) override;
  ir::DTypeUsageSet dtype_usage(const ir::DType& dtype) override;
  void seed(std::uint64_t seed) override;
  Result<std::shared_ptr<const Transferable>> take_for_transfer(
      const ir::TensorIr& tensor) override;
  Status register_transferred(ir::TensorId id, const Transferable& tensor) override;
  Result<std::optional<ir::ProfileToken>> profile_start() override;
  Result<std::optional<ir::Duration>> profile_end(const ir::ProfileToken& token,
                                                  const ir::ProfileOptions& options) override;
  void profile_abandon(const ir::ProfileToken& token) override;
  ExecutorStats stats() const override;

  // For tests: the stored tensor under an id (undefined when absent or poisoned; the values of a
  // quantized one).
  at::Tensor stored(std::uint64_t id) const;
  // For tests: the ops deferred now.
  std::size_t deferred_ops() const { return run_.size(); }
  // For tests: the deferred subtractions written in place by a slice assignment.
  std::uint64_t subtractions_in_place() const { return deferred_.absorbed(); }
  std::uint64_t outer_products_fused() const { return deferred_.fused_outer(); }
  // For tests: the held zero slices added in place.
  std::uint64_t zero_slices_added() const { return zero_slice_.added(); }
  // For tests: the quantized tensor under an id (nullptr when none).
  const quant::QTensor* stored_quantized(std::uint64_t id) const;

 private:
  class Context;
  // Per-op vectors, kept with their capacity from one op to the next (execute is never
  // re-entered), so that running a plain op allocates nothing of the executor's own.
  struct Scratch;

  // execute's steps. resolve: the op's inputs' handles into scratch_ (or the error of the first
  // missing one, with its failure in `inherited` where it is poisoned). run: binds them and runs
  // the lowering, through `rewrite` where the op touches a quantized tensor. commit: consumes the
  // ReadWrite inputs and stores the outputs of `ctx`, or poisons them with `error`.
  Status execute_op(const ir::OperationIr& op);
  Status resolve(const ir::OperationIr& op, std::shared_ptr<FailureLog::Failure>& inherited);
  Status run(Context& ctx, QuantRewrite* rewrite);
  Status commit(const ir::OperationIr& op, Context* ctx, const Error* error,
                const std::shared_ptr<FailureLog::Failure>& inherited);
  // The handle of an input, or the error explaining why there is none.
  Result<const Handle*> lookup(const ir::TensorIr& tensor) const;
  void poison(std::uint64_t id, const std::shared_ptr<FailureLog::Failure>& failure);
  // A new failure, to be reported by the next sync unless a read reports it first.
  std::shared_ptr<FailureLog::Failure> record(const Error& error);
  void device_sync();
  // Runs what is deferred: the held zero slice, the subtraction, then the element-wise ops (a
  // failure poisons their outputs).
  void flush_run();
  void flush_zero_slice();
  void flush_deferred_subtract();
  void flush_elementwise();
  // Gives `op` to the held zero slice where it continues it (zero_slice_add.hpp).
  bool try_zero_slice(const ir::OperationIr& op);
  // Defers `op` where deferred_subtract.hpp says (false where it does not, or cannot allocate).
  bool try_defer_subtract(const ir::OperationIr& op);

  at::Device device_;
  std::shared_ptr<const CustomOpRegistry> custom_ops_;
  at::Generator generator_;
  QuantRules quant_rules_;
  HandleTable handles_;
  FailureLog failures_;
  std::unordered_map<std::uint64_t, std::chrono::steady_clock::time_point> windows_;
  std::uint64_t next_window_ = 1;
  ExecutorStats stats_;
  std::unique_ptr<Scratch> scratch_;
  // Element-wise ops deferred to run as one (elementwise_run.hpp); every other entry point runs
  // them first.
  ElementwiseRun run_;
  // A subtraction held back by one op for the slice assignment that may take it in place.
  DeferredSubtract deferred_;
  // Burn's gradient of a slice, held until the add that may take it in place.
  ZeroSliceAdd zero_slice_;
  std::unique_ptr<OpProfile> profile_ = OpProfile::from_env();  // TB_OP_PROFILE
  bool fuse_;
};

}  // namespace tb::backend::libtorch
