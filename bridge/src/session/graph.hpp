// Cached graphs (Burn's fusion client): binding a relative graph to concrete tensors, exactly as
// burn-router src/graph.rs does (docs/protocol-0.22.1.md §4).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "torchbridge/ir/protocol.hpp"

namespace tb::bridge {

// Ids for a replay's intermediate tensors: bit 63 set, never a client id.
class IntermediateIds {
 public:
  std::uint64_t next() { return (std::uint64_t{1} << 63) | counter_++; }

 private:
  std::uint64_t counter_ = 0;
};

// Binds every op of `relative` with `bindings`: tensor ids through the boundary table (fresh
// intermediate ids for the rest, memoised for the replay), each dim d -> shapes[d] when in range,
// each ScalarIr::UInt(p) -> scalars[p] when in range (by value, never by position: Burn leaves
// some scalars concrete), each slice whose start indexes `ranges` -> that range.
// `each` gets the bound ops one at a time, in order, in one scratch op whose buffers are reused
// from op to op (valid only during the call): a replay allocates next to nothing per op.
void for_each_bound_op(const std::vector<ir::OperationIr>& relative,
                       const ir::GraphBindings& bindings, IntermediateIds& ids,
                       const std::function<void(const ir::OperationIr&)>& each);
// The same, collected.
std::vector<ir::OperationIr> bind_graph(const std::vector<ir::OperationIr>& relative,
                                        const ir::GraphBindings& bindings, IntermediateIds& ids);

// A session's graph cache, bounded: the oldest graph goes first.
class GraphCache {
 public:
  explicit GraphCache(std::size_t capacity) : capacity_(capacity) {}
  void put(ir::GraphId id, std::vector<ir::OperationIr> relative);
  const std::vector<ir::OperationIr>* find(ir::GraphId id) const;
  std::size_t size() const { return graphs_.size(); }

 private:
  std::size_t capacity_;
  std::unordered_map<ir::GraphId, std::shared_ptr<const std::vector<ir::OperationIr>>> graphs_;
  std::deque<ir::GraphId> order_;
};

}  // namespace tb::bridge
