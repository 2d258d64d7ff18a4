#include "graph.hpp"

#include "torchbridge/ir/visit.hpp"

namespace tb::bridge {

namespace {

class Binder final : public ir::OpVisitor {
 public:
  Binder(const ir::GraphBindings& b, std::unordered_map<std::uint64_t, std::uint64_t>& table,
         IntermediateIds& ids)
      : b_(b), table_(table), ids_(ids) {}

  void tensor(ir::TensorIr& t, bool) override {
    auto [it, inserted] = table_.try_emplace(t.id.value, 0);
    if (inserted) it->second = ids_.next();
    t.id.value = it->second;
    for (auto& d : t.shape.dims)
      if (d < b_.shapes.size()) d = b_.shapes[d];
  }
  void scalar(ir::ScalarIr& s) override {
    if (const auto* p = std::get_if<std::uint64_t>(&s.value); p && *p < b_.scalars.size()) {
      s = b_.scalars[*p];
    }
  }
  void range(ir::Slice& r) override {
    if (r.start >= 0 && static_cast<std::uint64_t>(r.start) < b_.ranges.size()) {
      r = b_.ranges[static_cast<std::size_t>(r.start)];
    }
  }

 private:
  const ir::GraphBindings& b_;
  std::unordered_map<std::uint64_t, std::uint64_t>& table_;
  IntermediateIds& ids_;
};

}  // namespace

void for_each_bound_op(const std::vector<ir::OperationIr>& relative,
                       const ir::GraphBindings& bindings, IntermediateIds& ids,
                       const std::function<void(const ir::OperationIr&)>& each) {
  std::unordered_map<std::uint64_t, std::uint64_t> table;
  table.reserve(bindings.tensors.size() * 2 + 8);
  for (const auto& b : bindings.tensors) table[b.relative.value] = b.concrete.value;
  Binder binder(bindings, table, ids);
  ir::OperationIr scratch;
  for (const auto& op : relative) {
    scratch = op;
    ir::visit(scratch, binder);
    each(scratch);
  }
}

std::vector<ir::OperationIr> bind_graph(const std::vector<ir::OperationIr>& relative,
                                        const ir::GraphBindings& bindings, IntermediateIds& ids) {
  std::vector<ir::OperationIr> bound;
  bound.reserve(relative.size());
  for_each_bound_op(relative, bindings, ids,
                    [&](const ir::OperationIr& op) { bound.push_back(op); });
  return bound;
}

void GraphCache::put(ir::GraphId id, std::vector<ir::OperationIr> relative) {
  auto graph = std::make_shared<const std::vector<ir::OperationIr>>(std::move(relative));
  if (graphs_.insert_or_assign(id, std::move(graph)).second) order_.push_back(id);
  while (graphs_.size() > capacity_ && !order_.empty()) {
    graphs_.erase(order_.front());
    order_.pop_front();
  }
}

const std::vector<ir::OperationIr>* GraphCache::find(ir::GraphId id) const {
  const auto it = graphs_.find(id);
  return it == graphs_.end() ? nullptr : it->second.get();
}

}  // namespace tb::bridge
