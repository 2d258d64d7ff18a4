// The backend interface the host runs sessions on: our BackendIr.
//
// A Backend is one device a host serves (device index = its position). An Executor is one
// session's state on that device: its tensor handles, its error record, its RNG. The bridge
// sees only this interface, so a session can run against LibTorch or a fake alike.
//
// Handles follow Burn's TensorStatus rules (burn-ir src/handle.rs): outputs arrive NotInit; an
// input marked ReadWrite is the client's last reference and is freed after the op; Drop frees;
// Init after a register is a no-op. Unlike Burn's reference server, a failing op never ends the
// session: its outputs are poisoned with the error, the error is recorded, and the next read of a
// poisoned tensor, or the next sync, reports it. Like Burn's host, each failure is reported once:
// a sync leaves out what a read has already reported, and an op on a poisoned tensor passes the
// poison on without counting as a new failure (reading its outputs still names the cause).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "torchbridge/ir/protocol.hpp"
#include "torchbridge/result.hpp"

namespace tb::backend {

// A device-resident tensor handed from one session to another on the same host (same-host
// transfers). Opaque to the bridge; only the backend that made it can register it.
class Transferable {
 public:
  virtual ~Transferable() = default;
  virtual const ir::DType& dtype() const = 0;
  // The logical shape (a quantized tensor's values, not its packed bytes).
  virtual std::vector<std::int64_t> shape() const = 0;
  virtual std::uint64_t bytes() const = 0;
};

struct ExecutorStats {
  std::uint64_t live_tensors = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t ops = 0;
  std::uint64_t failed_ops = 0;
  // Ops whose output took over the memory of an input they consumed (an update in place).
  std::uint64_t in_place_updates = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;

  virtual Status register_tensor(ir::TensorId id, const ir::TensorData& data) = 0;
  // `new_id` becomes a second handle on `src`'s tensor.
  virtual Status register_alias(ir::TensorId new_id, ir::TensorId src) = 0;
  // The tensor in the dtype and shape `tensor` declares, honouring its status (ReadWrite frees).
  virtual Result<ir::TensorData> read_tensor(const ir::TensorIr& tensor) = 0;
  // How this session's quantized tensors behave, where Burn's versions differ (the bridge sets it
  // from the session's protocol profile before the first op).
  struct QuantRules {
    // Reads (and exposures) in burn-std's canonical layout only, whatever layout the data was
    // registered in: Burn 0.23's client rejects any other.
    bool canonical_layout = false;
    // Quantize as burn-flex 0.23 does, x / scale rounded half to even; otherwise as 0.22.1 does,
    // x * (1 / scale) rounded half away from zero.
    bool divide_ties_to_even = false;
  };
  virtual void set_quant_rules(const QuantRules& rules) { (void)rules; }
  // Runs one op. A failure poisons the op's outputs and is recorded for the next sync; the
  // returned Status is for logging and metrics only.
  virtual Status execute(const ir::OperationIr& op) = 0;
  // The executor may defer ops and run several as one (compiled element-wise runs): every other
  // call runs what is deferred first, so a deferred op is observable only through its effects.
  // Whether ops are deferred now: a read or a sync would run them first.
  virtual bool has_deferred() const { return false; }
  // Waits for queued device work; reports (and clears) the failures recorded since the last sync
  // that no read has reported yet.
  virtual Status sync() = 0;
  // Records an error found outside an op (an unknown graph, a failed transfer) for the next sync;
  // the listed tensor ids now hold that error (reading them reports it).
  virtual void fail(const Error& error, const std::vector<ir::TensorId>& poisoned) = 0;
  virtual ir::DTypeUsageSet dtype_usage(const ir::DType& dtype) = 0;
  virtual void seed(std::uint64_t seed) = 0;

  // Same-host transfers: take the tensor out (honouring its status) / register one taken from
  // another executor of the same backend family, moving it onto this executor's device.
  virtual Result<std::shared_ptr<const Transferable>> take_for_transfer(
      const ir::TensorIr& tensor) = 0;
  virtual Status register_transferred(ir::TensorId id, const Transferable& tensor) = 0;

  // Profiling windows: wall-clock time between two device syncs, keyed by token.
  virtual Result<std::optional<ir::ProfileToken>> profile_start() = 0;
  virtual Result<std::optional<ir::Duration>> profile_end(const ir::ProfileToken& token,
                                                          const ir::ProfileOptions& options) = 0;
  virtual void profile_abandon(const ir::ProfileToken& token) = 0;

  virtual ExecutorStats stats() const = 0;
};

// What a device's allocator reports. A host's own count of session tensors is kept beside it
// (bridge/src/memory.hpp); these are the device's view, for /metrics and the default limit.
struct DeviceMemory {
  std::uint64_t total = 0;      // the device's memory; 0 where the allocator does not say (CPU)
  std::uint64_t allocated = 0;  // held by live tensors, as the allocator counts them
  std::uint64_t reserved = 0;   // taken from the driver: allocated plus the allocator's cache
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu", "cuda:0".
  virtual std::string device_name() const = 0;
  // The defaults announced in the handshake (float/int/bool dtypes, quantization).
  virtual ir::DeviceSettings settings() const = 0;
  virtual std::unique_ptr<Executor> new_executor() = 0;
  // The device's memory as its allocator sees it; all zero where it keeps no statistics.
  virtual DeviceMemory memory() const { return {}; }
  // Gives memory the allocator caches but no tensor uses back to the driver (CUDA's caching
  // allocator keeps what a finished session freed). A no-op where nothing is cached.
  virtual void release_cached_memory() {}
};

}  // namespace tb::backend
