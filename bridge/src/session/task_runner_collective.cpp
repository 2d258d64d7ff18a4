// The collective tasks of a session: Burn 0.22.1's Distributed.AllReduce (within this host, and
// across the members of a federation) and Burn 0.23's AllReduceLocal.
#include <algorithm>

#include <fmt/format.h>

#include "session/task_runner.hpp"
#include "torchbridge/ir/format.hpp"

namespace tb::bridge {

void TaskRunner::all_reduce(const ir::OperationIr& op) {
  const auto& p = op.as<ir::AllReduceOpIr>();
  const auto fail = [&](Error e) {
    executor_->fail(with_context(std::move(e), op.name()), {p.out.id});
  };
  std::vector<std::uint32_t> devices;
  for (const auto& d : p.device_ids) devices.push_back(d.index_id);
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  if (!devices.empty() && devices.back() >= services_.device_count) {
    // Burn's host fails it at once too: the missing device can never take part.
    return fail(make_error(ErrorCode::kInvalidArgument,
                           "devices [{}] include device {}, and this host serves {} device(s)",
                           fmt::join(devices, ", "), devices.back(), services_.device_count));
  }
  if (!services_.collectives ||
      !std::binary_search(devices.begin(), devices.end(), device_index_)) {
    return fail(make_error(ErrorCode::kInvalidArgument,
                           "this session's device {} is not among the devices [{}]", device_index_,
                           fmt::join(devices, ", ")));
  }
  // In a federation, the devices of this member reduce here first, then across members.
  std::vector<std::uint32_t> here = devices, members;
  if (const Federation* f = services_.federation) {
    const std::uint32_t me = f->rank();
    here.clear();
    for (const std::uint32_t d : devices) {
      const std::uint32_t owner = f->owner_of(d).rank;
      if (owner == me) here.push_back(d);
      if (members.empty() || members.back() != owner) members.push_back(owner);
    }
  }
  auto mine = executor_->take_for_transfer(p.tensor);
  if (!mine) return fail(mine.error());
  std::uint64_t round = 0;
  auto all = services_.collectives->all_reduce(
      devices, here, device_index_, std::move(mine).value(), services_.transfer_timeout, &round);
  if (!all) return fail(all.error());
  if (members.size() <= 1) {
    return reduce(all.value(), p.tensor.dtype, p.out, p.op, /*divide_first=*/false);
  }
  reduce_across(
      all.value(), p.tensor.dtype, p.out, p.op, /*divide_first=*/false,
      Across{
          members, fmt::format("devices {}", fmt::join(devices, ",")), round, devices.size(), {}},
      op.name());
}

void TaskRunner::reduce_across(const std::vector<CollectiveHub::Contribution>& parts,
                               ir::DType dtype, const ir::TensorIr& out, ir::ReduceOperation op,
                               bool divide_first, const Across& across, std::string_view what) {
  const auto fail = [&](Error e) { executor_->fail(with_context(std::move(e), what), {out.id}); };
  // This member's sum, the same bits on each of its devices, crosses to the other members once;
  // every member then holds the same total, and divides it alike for a mean.
  const bool mean = op == ir::ReduceOperation::Mean;
  ir::TensorIr partial{ir::TensorId{intermediates_.next()}, out.shape, ir::TensorStatus::NotInit,
                       dtype};
  reduce(parts, dtype, partial, divide_first ? op : ir::ReduceOperation::Sum, divide_first,
         across.total);
  partial.status = ir::TensorStatus::ReadWrite;
  auto local = executor_->read_tensor(partial);
  if (!local) return fail(local.error());
  auto total =
      services_.federation->sum_across(across.ranks, across.key, across.round, local.value(),
                                       services_.transfer_timeout, across.bound_to);
  if (!total) return fail(total.error());
  const ir::TensorIr sum{ir::TensorId{intermediates_.next()}, out.shape,
                         ir::TensorStatus::ReadWrite, dtype};
  if (auto s = executor_->register_tensor(sum.id, total.value()); !s) return fail(s.error());
  const double divisor = mean && !divide_first ? static_cast<double>(across.total) : 1.0;
  execute(ir::make_op<ir::OpKind::NumericFloat_DivScalar>(
      ir::ScalarOpIr{sum, ir::ScalarIr::f(divisor), out}, dtype));
}

void TaskRunner::reduce(const std::vector<CollectiveHub::Contribution>& parts, ir::DType dtype,
                        const ir::TensorIr& out, ir::ReduceOperation op, bool divide_first,
                        std::size_t count_override) {
  // Every participant reduces the same contributions in the same order (member or device
  // position), through ordinary ops, so every device gets identical bits.
  auto temp = [&](ir::TensorStatus status) {
    return ir::TensorIr{ir::TensorId{intermediates_.next()}, out.shape, status, dtype};
  };
  const bool mean = op == ir::ReduceOperation::Mean;
  const auto count = static_cast<double>(count_override ? count_override : parts.size());
  std::optional<ir::TensorIr> acc;
  for (const auto& contribution : parts) {
    ir::TensorIr t = temp(ir::TensorStatus::ReadWrite);
    if (auto s = executor_->register_transferred(t.id, *contribution); !s) {
      executor_->fail(with_context(s.error(), "all-reduce"), {out.id});
      return;
    }
    if (mean && divide_first) {
      // Burn 0.23's float_reduced divides each part first, as NCCL averages floats.
      ir::TensorIr part = temp(ir::TensorStatus::NotInit);
      execute(ir::make_op<ir::OpKind::NumericFloat_DivScalar>(
          ir::ScalarOpIr{t, ir::ScalarIr::f(count), part}, dtype));
      part.status = ir::TensorStatus::ReadWrite;
      t = part;
    }
    if (!acc) {
      acc = t;
      continue;
    }
    ir::TensorIr sum = temp(ir::TensorStatus::NotInit);
    execute(ir::make_op<ir::OpKind::NumericFloat_Add>(ir::BinaryOpIr{*acc, t, sum}, dtype));
    sum.status = ir::TensorStatus::ReadWrite;
    acc = sum;
  }
  const double divisor = mean && !divide_first ? count : 1.0;
  execute(ir::make_op<ir::OpKind::NumericFloat_DivScalar>(
      ir::ScalarOpIr{*acc, ir::ScalarIr::f(divisor), out}, dtype));
}

void TaskRunner::all_reduce_local(const ir::AllReduceLocalTask& task) {
  const auto& p = task.part;
  const ir::TensorIr out{p.out, p.tensor.shape, ir::TensorStatus::NotInit, p.tensor.dtype};
  std::vector<std::uint64_t> sessions;
  sessions.reserve(p.sessions.size());
  for (const auto& s : p.sessions) sessions.push_back(s.id);
  const auto open = [this](std::uint64_t s) {
    return s == session_id_ || (services_.session_open && services_.session_open(s));
  };
  // In a federation the members' sessions may run on other members: the store says which (the
  // members that serve them), and this member's parts meet here first.
  std::vector<std::uint32_t> here, ranks;
  // What is wrong with this member's part fails the whole collective, so every member hears it.
  Result<CollectiveHub::Contribution> input = [&]() -> Result<CollectiveHub::Contribution> {
    if (Federation* f = services_.federation) {
      ranks.push_back(f->rank());
      for (std::uint32_t m = 0; m < sessions.size(); ++m) {
        if (open(sessions[m])) {
          here.push_back(m);
          continue;
        }
        auto owner = f->locate_session(sessions[m], services_.transfer_timeout);
        if (!owner) return owner.error();
        ranks.push_back(owner.value());
      }
      std::sort(ranks.begin(), ranks.end());
      ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    }
    if (sessions.size() > services_.device_count) {
      return make_error(ErrorCode::kInvalidArgument,
                        "an all-reduce over {} members, and this host serves {} device(s)",
                        sessions.size(), services_.device_count);
    }
    if (!p.tensor.dtype.is_float()) {
      return make_error(ErrorCode::kInvalidArgument, "member {}'s input is {}, not a float",
                        p.member, p.tensor.dtype.name());
    }
    return executor_->take_for_transfer(p.tensor);
  }();
  if (!services_.collectives) {
    executor_->fail(make_error(ErrorCode::kUnsupported, "AllReduceLocal: no collective hub"),
                    {p.out});
    return;
  }
  const bool across = ranks.size() > 1;
  auto all = services_.collectives->join_local(session_id_, p.collective, p.member, sessions,
                                               std::move(input), open, services_.transfer_timeout,
                                               across ? here : std::vector<std::uint32_t>{});
  if (!all) {
    executor_->fail(all.error(), {p.out});
    return;
  }
  if (across) {
    reduce_across(all.value(), p.tensor.dtype, out, p.op, /*divide_first=*/true,
                  Across{ranks, fmt::format("sessions {:016x}", fmt::join(sessions, ",")),
                         p.collective, sessions.size(), sessions},
                  fmt::format("AllReduceLocal {:#018x}", p.collective));
  } else {
    reduce(all.value(), p.tensor.dtype, out, p.op, /*divide_first=*/true);
  }
  enforce_memory_limit(nullptr);
}

}  // namespace tb::bridge
