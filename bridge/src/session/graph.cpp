#include "session/graph.hpp"

#include <array>

#include "torchbridge/ir/visit.hpp"

namespace tb::bridge {

namespace {

// Relative id -> concrete id for one replay. Burn numbers a relative graph's tensors from 0, so
// the table is an array indexed by relative id (reused from replay to replay on this thread: a
// hash map allocated a node for every intermediate of every replay); ids beyond kDense, which no
// client of ours sends but a hostile one may, go to a map.
class IdTable {
 public:
  static constexpr std::uint64_t kDense = 1 << 16;
  // What a thread keeps between replays: graphs of Burn's clients stay far below it. A larger
  // table (a hostile graph's ids, up to kDense: about 0.5 MiB) is let go after its replay.
  static constexpr std::size_t kKept = 4096;
  void reset() {
    if (set_.size() > kKept) {
      set_ = {};
      concrete_ = {};
    } else {
      for (const std::uint64_t r : used_) set_[r] = false;
    }
    used_.clear();
    sparse_ = {};
  }
  void bind(std::uint64_t relative, std::uint64_t concrete) {
    if (relative >= kDense) {
      sparse_[relative] = concrete;
      return;
    }
    grow(relative);
    if (!set_[relative]) used_.push_back(relative);
    set_[relative] = true;
    concrete_[relative] = concrete;
  }
  // The concrete id of `relative`, bound to `fresh()` the first time it is seen.
  template <class Fresh>
  std::uint64_t get(std::uint64_t relative, Fresh fresh) {
    if (relative >= kDense) {
      auto [it, inserted] = sparse_.try_emplace(relative, 0);
      if (inserted) it->second = fresh();
      return it->second;
    }
    grow(relative);
    if (!set_[relative]) bind(relative, fresh());
    return concrete_[relative];
  }

 private:
  void grow(std::uint64_t relative) {
    if (relative < set_.size()) return;
    set_.resize(relative + 1, false);
    concrete_.resize(relative + 1, 0);
  }
  std::vector<bool> set_;
  std::vector<std::uint64_t> concrete_;
  std::vector<std::uint64_t> used_;
  std::unordered_map<std::uint64_t, std::uint64_t> sparse_;
};

class Binder final : public ir::OpVisitor {
 public:
  Binder(const ir::GraphBindings& b, IdTable& table, IntermediateIds& ids)
      : b_(b), table_(table), ids_(ids) {}

  void tensor(ir::TensorIr& t, bool) override {
    t.id.value = table_.get(t.id.value, [this] { return ids_.next(); });
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
  IdTable& table_;
  IntermediateIds& ids_;
};

}  // namespace

void for_each_bound_op(const std::vector<ir::OperationIr>& relative,
                       const ir::GraphBindings& bindings, IntermediateIds& ids,
                       const std::function<void(const ir::OperationIr&)>& each) {
  thread_local IdTable table;
  table.reset();
  for (const auto& b : bindings.tensors) table.bind(b.relative.value, b.concrete.value);
  Binder binder(bindings, table, ids);
  // One bound copy per op kind for this replay: assigning an op to a copy of its own kind reuses
  // the copy's vectors (dims, slices, axes). A single copy for all kinds was rebuilt at every
  // change of kind, which is nearly every op, and allocated each time.
  std::array<std::uint16_t, ir::kOpKindCount> slot_of_kind{};
  std::vector<ir::OperationIr> scratch;
  scratch.reserve(32);
  for (const auto& op : relative) {
    std::uint16_t& slot = slot_of_kind[static_cast<std::size_t>(op.kind)];
    if (slot == 0) {
      scratch.emplace_back();
      slot = static_cast<std::uint16_t>(scratch.size());
    }
    ir::OperationIr& bound = scratch[slot - 1];
    bound = op;
    ir::visit(bound, binder);
    each(bound);
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
