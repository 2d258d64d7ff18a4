// What each task does (TaskRunner::run visits the task with these). A task that answers goes
// through `answer`, which puts a Result on the wire one way for every response.
#include <fmt/format.h>

#include "session/task_runner.hpp"

namespace tb::bridge {

template <typename Response, typename T>
void TaskRunner::answer(ir::RequestId id, Result<T> result) {
  Response r;
  if (!result) {
    r.result = to_wire(result.error());
  } else if constexpr (std::is_void_v<T>) {
    r.result = std::monostate{};
  } else {
    r.result = std::move(result).value();
  }
  respond_(ir::TaskResponse{std::move(r), id});
}

void TaskRunner::on(ir::SeedTask& t) {
  executor_->seed(t.seed);
}

void TaskRunner::on(ir::RegisterAndExecuteGraphTask& t) {
  graphs_.put(t.graph_id, t.relative_graph);
  execute_graph(t.relative_graph, t.bindings);
}

void TaskRunner::on(ir::ExecuteGraphTask& t) {
  if (const auto* graph = graphs_.find(t.graph_id)) return execute_graph(*graph, t.bindings);
  std::vector<ir::TensorId> outputs;
  for (const auto& b : t.bindings.tensors) outputs.push_back(b.concrete);
  executor_->fail(
      make_error(ErrorCode::kNotFound,
                 "ExecuteGraph: graph {} was never registered in this session", t.graph_id),
      outputs);
}

void TaskRunner::on(ir::RegisterTensorTask& t) {
  if (!within_tensor_limit("RegisterTensor", t.id, t.data)) return;
  if (!executor_->register_tensor(t.id, t.data)) return;
  if (auto over = over_memory_limit()) {
    executor_->fail(with_context(std::move(*over), fmt::format("RegisterTensor #{}", t.id.value)),
                    {t.id});
    over_memory_limit();
  }
}

void TaskRunner::on(ir::RegisterAliasTask& t) {
  note(executor_->register_alias(t.new_id, t.src_id));
}

void TaskRunner::on(ir::RegisterTensorRemoteTask& t) {
  if (t.remote.peer.kind != ir::PeerKind::WebSocket) {
    return executor_->fail(make_error(ErrorCode::kUnsupported,
                                      "RegisterTensorRemote: this host speaks websocket only, the "
                                      "source is an Iroh peer"),
                           {t.new_id});
  }
  if (!services_.downloader) {
    return executor_->fail(make_error(ErrorCode::kUnsupported,
                                      "RegisterTensorRemote: this host downloads from no peer"),
                           {t.new_id});
  }
  auto data =
      services_.downloader->download(t.remote.peer.address, DataStore::key_of(t.remote.capability));
  if (!data) {
    return executor_->fail(
        with_context(data.error(), fmt::format("RegisterTensorRemote #{}", t.new_id.value)),
        {t.new_id});
  }
  if (!within_tensor_limit("RegisterTensorRemote", t.new_id, data.value())) return;
  note(executor_->register_tensor(t.new_id, data.value()));
}

void TaskRunner::on(ir::ExposeTensorLocalTask& t) {
  if (services_.federation) return expose_across(t);
  if (!services_.local->expose(services_.transfer_scope, t.transfer_id, session_id_,
                               executor_->take_for_transfer(t.tensor))) {
    executor_->fail(make_error(ErrorCode::kInvalidArgument,
                               "ExposeTensorLocal: transfer {} is already exposed and not yet "
                               "taken; the first exposure stands",
                               t.transfer_id),
                    {});
  }
}

void TaskRunner::on(ir::RegisterTensorLocalTask& t) {
  if (services_.federation) return register_across(t);
  auto tensor =
      services_.local->take(services_.transfer_scope, t.transfer_id, services_.transfer_timeout);
  if (!tensor) {
    return executor_->fail(
        with_context(tensor.error(), fmt::format("RegisterTensorLocal #{}", t.new_id.value)),
        {t.new_id});
  }
  note(executor_->register_transferred(t.new_id, *tensor.value()));
}

void TaskRunner::on(ir::ReadTensorTask& t) {
  answer<ir::ReadTensorResponse>(t.request_id, executor_->read_tensor(t.tensor));
}

void TaskRunner::on(ir::SyncBackendTask& t) {
  answer<ir::SyncBackendResponse>(t.request_id, executor_->sync());
}

void TaskRunner::on(ir::DTypeUsageTask& t) {
  respond_(ir::TaskResponse{ir::DTypeUsageResponse{executor_->dtype_usage(t.dtype)}, t.request_id});
}

void TaskRunner::on(ir::ProfileStartTask& t) {
  answer<ir::ProfileStartResponse>(t.request_id, executor_->profile_start());
}

void TaskRunner::on(ir::ProfileEndTask& t) {
  answer<ir::ProfileEndResponse>(t.request_id, executor_->profile_end(t.token, t.options));
}

void TaskRunner::on(ir::ProfileAbandonTask& t) {
  executor_->profile_abandon(t.token);
}

}  // namespace tb::bridge
