#include "session/task_runner.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cluster/relay.hpp"
#include "torchbridge/ir/codec.hpp"
#include "torchbridge/ir/format.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/ir/visit.hpp"

namespace tb::bridge {

namespace {
// An op's output ids: poisoned when the op or its graph cannot run, so reads report why.
struct Outputs final : ir::ConstOpVisitor {
  std::vector<ir::TensorId> ids;
  void tensor(const ir::TensorIr& t, bool is_output) override {
    if (is_output) ids.push_back(t.id);
  }
};

// The first output over `limit`, found without copying anything: this runs for every op.
struct OversizedOutput final : ir::ConstOpVisitor {
  explicit OversizedOutput(std::uint64_t l) : limit(l) {}
  std::uint64_t limit;
  const ir::TensorIr* found = nullptr;
  std::uint64_t bytes = 0;
  void tensor(const ir::TensorIr& t, bool is_output) override;
};

// Bytes a tensor of `shape` takes, saturating: a hostile shape must not wrap around to a small
// number. Sub-byte quantized values count as one byte, an upper bound.
std::uint64_t tensor_bytes(const ir::Dims& shape, const ir::DType& dtype) {
  std::uint64_t n = std::max<std::uint64_t>(dtype.element_size(), 1);
  for (const auto d : shape) {
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n)) return UINT64_MAX;
  }
  return n;
}

void OversizedOutput::tensor(const ir::TensorIr& t, bool is_output) {
  if (!is_output || found != nullptr) return;
  const std::uint64_t b = tensor_bytes(t.shape.dims, t.dtype);
  if (b > limit) {
    found = &t;
    bytes = b;
  }
}

}  // namespace

// A registration the executor refused: it has recorded the error for the next sync and poisoned
// the id, so the client hears of it there; this is only for the log.
void TaskRunner::note(const Status& s) const {
  if (!s) spdlog::debug("session {:016x}: {}", session_id_, s.error().what());
}

TaskRunner::TaskRunner(std::uint64_t session_id, std::uint32_t device_index,
                       std::unique_ptr<backend::Executor> executor, SessionServices services,
                       Respond respond)
    : session_id_(session_id),
      device_index_(device_index),
      executor_(std::move(executor)),
      services_(services),
      respond_(std::move(respond)),
      graphs_(services.limits.max_graphs_per_session) {
  const ir::ProtocolProfile* profile = ir::find_profile(services_.protocol);
  if (profile) {
    executor_->set_quant_rules({profile->canonical_quantized_only, profile->quantize_ties_to_even});
  }
}

TaskRunner::~TaskRunner() {
  if (services_.local) services_.local->purge_session(session_id_);
  if (services_.data) services_.data->purge_session(session_id_);
  report_tensor_bytes(0);
}

std::pair<std::uint64_t, std::uint64_t> TaskRunner::report_tensor_bytes(std::uint64_t tensors) {
  // Moves `counter` from this session's last report to `tensors` and returns its new value.
  const auto follow = [&](std::atomic<std::uint64_t>& counter) {
    const std::uint64_t before = reported_tensor_bytes_;
    if (tensors == before) return counter.load(std::memory_order_relaxed);
    if (tensors > before) return counter.fetch_add(tensors - before) + (tensors - before);
    return counter.fetch_sub(before - tensors) - (before - tensors);
  };
  DeviceAccount* device = services_.device_memory;
  const bool in_host_memory = device == nullptr || device->in_host_memory;
  std::uint64_t host = in_host_memory ? tensors : 0;
  if (services_.host_tensor_bytes) {
    host = in_host_memory ? follow(*services_.host_tensor_bytes)
                          : services_.host_tensor_bytes->load(std::memory_order_relaxed);
  }
  const std::uint64_t on_device = device ? follow(device->tensor_bytes) : tensors;
  reported_tensor_bytes_ = tensors;
  return {host, on_device};
}

std::optional<Error> TaskRunner::over_memory_limit(std::uint64_t extra) {
  const auto& limits = services_.limits;
  const std::uint64_t tensors = executor_->stats().live_bytes;
  const auto [host_tensors, device_tensors] = report_tensor_bytes(tensors);
  const std::uint64_t held = services_.held ? services_.held->bytes() : 0;
  const std::uint64_t session = tensors + held + extra;
  if (limits.max_session_bytes && session > limits.max_session_bytes) {
    return make_error(ErrorCode::kLimit,
                      "session holds {} bytes ({} of tensors, {} of queued work, answers and "
                      "exposed copies), over the host's limit of {} bytes (--max-session-bytes)",
                      session, tensors, held + extra, limits.max_session_bytes);
  }
  if (const DeviceAccount* device = services_.device_memory;
      device && device->limit && device_tensors > device->limit) {
    return make_error(ErrorCode::kLimit,
                      "the sessions on {} hold {} bytes of tensors ({} of them this session's), "
                      "over the device's limit of {} bytes (--max-device-bytes)",
                      device->name, device_tensors, tensors, device->limit);
  }
  const std::uint64_t host_held =
      services_.held && services_.held->parent() ? services_.held->parent()->bytes() : held;
  if (const auto host = host_bytes_over(limits.max_host_bytes, host_tensors, host_held, extra,
                                        services_.message_blocks)) {
    return make_error(ErrorCode::kLimit,
                      "the host holds {} bytes for all its sessions, over its limit of {} bytes "
                      "(--max-host-bytes)",
                      *host, limits.max_host_bytes);
  }
  return std::nullopt;
}

ir::ExecutionError TaskRunner::to_wire(const Error& e) {
  return ir::ExecutionError{ir::ExecutionErrorKind::Generic, e.what()};
}

void TaskRunner::execute(const ir::OperationIr& op) {
  if (services_.counters) services_.counters->count_op(op.kind);
  if (!ir::op_on_wire(op.kind, services_.protocol)) {
    // Each Burn version has its own leaf set; an op its client could not have sent is refused
    // rather than run on a guess.
    Outputs outputs;
    ir::visit(op, outputs);
    executor_->fail(make_error(ErrorCode::kUnsupported, "{} is not an op of protocol {}", op.name(),
                               services_.protocol),
                    outputs.ids);
    return;
  }
  if (!within_tensor_limit(op)) return;
  if (op.kind == ir::OpKind::Distributed_AllReduce) return all_reduce(op);
  // Our all-reduce completes before its task ends: there is nothing left to wait for.
  if (op.kind == ir::OpKind::Distributed_SyncCollective) return;
  auto status = executor_->execute(op);
  if (!status) {
    spdlog::debug("session {:016x}: {}", session_id_, status.error().what());
    return;
  }
  enforce_memory_limit(&op);
}

bool TaskRunner::within_tensor_limit(const ir::OperationIr& op) {
  const std::uint64_t limit = services_.limits.max_tensor_bytes;
  if (!limit) return true;
  OversizedOutput over(limit);
  ir::visit(op, over);
  if (over.found == nullptr) return true;
  const ir::TensorIr& t = *over.found;
  Outputs outputs;
  ir::visit(op, outputs);
  Error e = make_error(
      ErrorCode::kLimit,
      "output #{} of shape [{}] ({}) would take {} bytes, over the host's "
      "per-tensor limit of {} bytes",
      t.id.value, fmt::join(t.shape.dims, ", "), t.dtype.name(),
      over.bytes == UINT64_MAX ? std::string("more than 2^64") : std::to_string(over.bytes), limit);
  e.context = std::string(op.name());
  executor_->fail(e, outputs.ids);
  return false;
}

bool TaskRunner::within_tensor_limit(const char* task, ir::TensorId id,
                                     const ir::TensorData& data) {
  const std::uint64_t limit = services_.limits.max_tensor_bytes;
  const std::uint64_t bytes =
      std::max<std::uint64_t>(data.bytes.size(), tensor_bytes(data.shape, data.dtype));
  if (!limit || bytes <= limit) return true;
  executor_->fail(make_error(ErrorCode::kLimit,
                             "{} #{}: a tensor of {} bytes, over the host's per-tensor limit of {} "
                             "bytes",
                             task, id.value, bytes, limit),
                  {id});
  return false;
}

void TaskRunner::enforce_memory_limit(const ir::OperationIr* op) {
  auto over = over_memory_limit();
  if (!over) return;
  // Over the budget: the tensors just produced are dropped and poisoned, so the client's reads
  // say why and memory goes back under the limit.
  Outputs outputs;
  if (op) ir::visit(*op, outputs);
  if (op) over->context = std::string(op->name());
  executor_->fail(*over, outputs.ids);
  over_memory_limit();  // the host's count follows the freed outputs
}

void TaskRunner::read_tensors(const ir::ReadTensorsTask& t) {
  // All or nothing, in request order (burn-router 0.23 interpreter.rs:2335-2346): the client
  // panics on any other count.
  ir::ReadTensorsResponse r;
  std::vector<ir::TensorData> data;
  data.reserve(t.tensors.size());
  for (const auto& tensor : t.tensors) {
    auto one = executor_->read_tensor(tensor);
    if (!one) {
      r.result =
          to_wire(with_context(one.error(), fmt::format("ReadTensors #{}", tensor.id.value)));
      respond_(ir::TaskResponse{std::move(r), t.request_id});
      return;
    }
    data.push_back(std::move(one).value());
  }
  r.result = std::move(data);
  respond_(ir::TaskResponse{std::move(r), t.request_id});
}

void TaskRunner::expose_remote(const ir::ExposeTensorRemoteTask& t) {
  expose_data(t.tensor, DataStore::key_of(t.capability), t.count, "ExposeTensorRemote");
}

bool TaskRunner::expose_data(const ir::TensorIr& tensor, std::uint64_t key, std::uint32_t count,
                             const char* task, bool members_only) {
  const auto expires = std::chrono::steady_clock::now() + services_.transfer_timeout;
  const auto expose = [&](DataStore::Payload payload, MemoryCharge charge) {
    if (!services_.data->expose(key, session_id_, std::move(payload), count, std::move(charge),
                                expires, members_only)) {
      executor_->fail(
          make_error(ErrorCode::kInvalidArgument,
                     "{}: transfer {:#x} is already exposed; the first exposure stands", task, key),
          {});
      return false;
    }
    return true;
  };
  auto data = executor_->read_tensor(tensor);
  if (!data) return expose(with_context(data.error(), task), {});
  // The payload is a view of the tensor's storage; it is charged in full all the same, since it
  // outlives the tensor when the client drops it.
  auto frame = OutFrame::encode(ir::DataMessage{ir::TensorMessage{std::move(data).value()}});
  if (auto over = over_memory_limit(frame->size)) {
    Error e = with_context(std::move(*over), task);
    executor_->fail(e, {});
    return expose(std::move(e), {});
  }
  MemoryCharge charge(services_.held, frame->size);
  return expose(std::move(frame), std::move(charge));
}

void TaskRunner::expose_across(const ir::ExposeTensorLocalTask& t) {
  // Its taker may be on any member: the tensor is served on /data, and the store says where.
  const std::uint64_t key = transfer_key(services_.federation->transfer_secret(),
                                         services_.transfer_scope, t.transfer_id);
  if (!expose_data(t.tensor, key, 1, "ExposeTensorLocal", /*members_only=*/true)) return;
  if (auto s = services_.federation->announce_transfer(key); !s) {
    executor_->fail(with_context(s.error(), "ExposeTensorLocal"), {});
  }
}

void TaskRunner::register_across(const ir::RegisterTensorLocalTask& t) {
  const auto fail = [&](Error e) {
    executor_->fail(
        with_context(std::move(e), fmt::format("RegisterTensorLocal #{}", t.new_id.value)),
        {t.new_id});
  };
  const std::uint64_t key = transfer_key(services_.federation->transfer_secret(),
                                         services_.transfer_scope, t.transfer_id);
  auto rank = services_.federation->locate_transfer(key, services_.transfer_timeout);
  if (!rank) return fail(rank.error());
  const std::string& address = services_.federation->members()[rank.value()].address;
  const auto peer = member_address(address);
  if (!peer) {
    return fail(make_error(ErrorCode::kInvalidArgument,
                           "member {}'s address {} is not ws:// or wss://", rank.value(), address));
  }
  auto data = services_.downloader->download_from_member(*peer, key);
  if (!data) return fail(data.error());
  if (!within_tensor_limit("RegisterTensorLocal", t.new_id, data.value())) return;
  note(executor_->register_tensor(t.new_id, data.value()));
}

void TaskRunner::execute_graph(const std::vector<ir::OperationIr>& relative,
                               const ir::GraphBindings& bindings) {
  for_each_bound_op(relative, bindings, intermediates_,
                    [this](const ir::OperationIr& op) { execute(op); });
}

void TaskRunner::run(ir::Task& task) {
  // One handler per task kind (task_runner_tasks.cpp): a kind without one does not compile.
  std::visit([this](auto& t) { on(t); }, task);
}

}  // namespace tb::bridge
