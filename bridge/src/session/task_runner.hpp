// Runs one session's tasks, in arrival order, against its executor. No networking: responses go
// out through a callback, so sessions can be tested without sockets.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cluster/collective.hpp"
#include "cluster/transfers.hpp"
#include "host_counters.hpp"
#include "memory.hpp"
#include "session/graph.hpp"
#include "torchbridge/backend/backend.hpp"
#include "torchbridge/bridge/host.hpp"

namespace tb::bridge {

// Host-wide services a session uses, and where its memory is counted.
struct SessionServices {
  LocalTransfers* local = nullptr;
  DataStore* data = nullptr;
  CollectiveHub* collectives = nullptr;
  Downloader* downloader = nullptr;
  Limits limits;
  // Devices the host serves: collectives naming others fail at once.
  std::uint32_t device_count = 0;
  // Same-host transfers stay inside this scope (the peer and its credential).
  std::string transfer_scope;
  // This session's bytes outside its tensors (queued tasks and answers, exposed copies); its
  // parent is the host's account.
  std::shared_ptr<MemoryAccount> held;
  // Tensor bytes in host memory of every session (each runner on a CPU device adds its own as they
  // change).
  std::atomic<std::uint64_t>* host_tensor_bytes = nullptr;
  // The session's device: its tensors count there, against that device's limit, and in
  // host_tensor_bytes only where the device's memory is the host's.
  DeviceAccount* device_memory = nullptr;
  // The host's warm message blocks: counted against its limit, freed first when over it.
  ir::BlockCache* message_blocks = nullptr;
  std::chrono::milliseconds transfer_timeout{60000};
  // Set when the host stops: blocking waits (downloads) give up.
  const std::atomic<bool>* stopping = nullptr;
  // The host's counters: ops executed per leaf count there.
  HostCounters* counters = nullptr;
  // The session's wire version (ir/profile.hpp): its ops outside that version's leaf set fail.
  std::uint16_t protocol = ir::kProtocolVersion;
  // The federation this host belongs to, if any: all-reduces over other members' devices reduce
  // across members through it.
  Federation* federation = nullptr;
  // Whether a session is connected (protocol 6's all-reduce names its members' sessions).
  std::function<bool(std::uint64_t)> session_open;
};

class TaskRunner {
 public:
  using Respond = std::function<void(ir::TaskResponse)>;

  TaskRunner(std::uint64_t session_id, std::uint32_t device_index,
             std::unique_ptr<backend::Executor> executor, SessionServices services,
             Respond respond);
  ~TaskRunner();

  void run(ir::Task& task);

  backend::Executor& executor() { return *executor_; }
  // This session's bytes (updating the host's and its device's counts of tensor bytes) with
  // `extra` more; over the session's, its device's or the host's limit, the error that says so.
  std::optional<Error> over_memory_limit(std::uint64_t extra = 0);
  std::uint64_t session_id() const { return session_id_; }

 private:
  // One handler per task kind, which run() visits (task_runner_tasks.cpp; the transfers' and
  // the collectives' are in task_runner.cpp and task_runner_collective.cpp).
  void on(std::monostate&) {}
  void on(ir::SeedTask& t);
  void on(ir::RegisterOperationTask& t) { execute(t.op); }
  void on(ir::RegisterAndExecuteGraphTask& t);
  void on(ir::ExecuteGraphTask& t);
  void on(ir::RegisterTensorTask& t);
  void on(ir::RegisterAliasTask& t);
  void on(ir::RegisterTensorRemoteTask& t);
  void on(ir::ExposeTensorRemoteTask& t) { expose_remote(t); }
  void on(ir::ExposeTensorLocalTask& t);
  void on(ir::RegisterTensorLocalTask& t);
  void on(ir::AllReduceLocalTask& t) { all_reduce_local(t); }
  void on(ir::ReadTensorsTask& t) { read_tensors(t); }
  void on(ir::ReadTensorTask& t);
  void on(ir::SyncBackendTask& t);
  void on(ir::DTypeUsageTask& t);
  void on(ir::ProfileStartTask& t);
  void on(ir::ProfileEndTask& t);
  void on(ir::ProfileAbandonTask& t);
  // Answers request `id` with a `Response` whose result is `result`'s value, or its error as the
  // wire carries it.
  template <typename Response, typename T>
  void answer(ir::RequestId id, Result<T> result);

  void note(const Status& s) const;
  void execute(const ir::OperationIr& op);
  void execute_graph(const std::vector<ir::OperationIr>& relative,
                     const ir::GraphBindings& bindings);
  // Each fails the op's outputs (or the registered id) when a tensor would exceed the per-tensor
  // limit, and says whether it is within.
  bool within_tensor_limit(const ir::OperationIr& op);
  bool within_tensor_limit(const char* task, ir::TensorId id, const ir::TensorData& data);
  void enforce_memory_limit(const ir::OperationIr* op);
  // Brings the host's and the device's counts to `tensors` bytes for this session; returns the
  // host's tensor bytes in host memory and the device's tensor bytes after the change.
  std::pair<std::uint64_t, std::uint64_t> report_tensor_bytes(std::uint64_t tensors);
  void expose_remote(const ir::ExposeTensorRemoteTask& t);
  // Serves `tensor` on `/data` under `key`, `count` times (to federation members alone when
  // `members_only`); false when the key is taken.
  bool expose_data(const ir::TensorIr& tensor, std::uint64_t key, std::uint32_t count,
                   const char* task, bool members_only = false);
  // Same-host transfers in a federation: through `/data`, from whichever member exposed them.
  void expose_across(const ir::ExposeTensorLocalTask& t);
  void register_across(const ir::RegisterTensorLocalTask& t);
  void all_reduce(const ir::OperationIr& op);
  // An all-reduce spanning members of a federation: this member's `parts` are reduced here (a
  // mean that divides first divides by `total` parts), the sum crosses to `ranks` under `key`,
  // and a mean that divides last divides the total.
  struct Across {
    std::vector<std::uint32_t> ranks;
    std::string key;
    std::uint64_t round = 0;
    std::size_t total = 0;
    std::vector<std::uint64_t> bound_to;
  };
  void reduce_across(const std::vector<CollectiveHub::Contribution>& parts, ir::DType dtype,
                     const ir::TensorIr& out, ir::ReduceOperation op, bool divide_first,
                     const Across& across, std::string_view what);
  void all_reduce_local(const ir::AllReduceLocalTask& task);
  // Registers `parts` and reduces them in order into `out` (a mean divides each part first when
  // `divide_first`, else the sum).
  void reduce(const std::vector<CollectiveHub::Contribution>& parts, ir::DType dtype,
              const ir::TensorIr& out, ir::ReduceOperation op, bool divide_first,
              std::size_t count = 0);
  void read_tensors(const ir::ReadTensorsTask& t);
  // Error -> Burn's ExecutionError.
  static ir::ExecutionError to_wire(const Error& e);

  std::uint64_t session_id_;
  std::uint32_t device_index_;
  std::unique_ptr<backend::Executor> executor_;
  SessionServices services_;
  Respond respond_;
  GraphCache graphs_;
  IntermediateIds intermediates_;
  // The session's tensor bytes as last added to the host's and the device's counts.
  std::uint64_t reported_tensor_bytes_ = 0;
};

}  // namespace tb::bridge
