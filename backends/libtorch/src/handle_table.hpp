// A session's tensor handles by id, with their bytes kept as a running count: the host checks a
// session's memory after every op, so the count must not cost a scan of every tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

#include <ATen/ATen.h>

#include "failure_log.hpp"
#include "quant.hpp"

namespace tb::backend::libtorch {

struct Handle {
  at::Tensor tensor;
  std::shared_ptr<FailureLog::Failure> failure;  // set: the tensor is poisoned
  std::shared_ptr<const quant::QTensor> q;       // set: a quantized tensor (`tensor` undefined)
  // Set where the tensor holds another dtype than the IR declares (OpContext::out's `held`):
  // reads answer in it.
  std::optional<ir::DType> held;

  std::uint64_t bytes() const {
    std::uint64_t n = 0;
    if (tensor.defined()) n += static_cast<std::uint64_t>(tensor.numel()) * tensor.element_size();
    if (q) n += q->nbytes();
    return n;
  }
};

class HandleTable {
 public:
  using Map = std::unordered_map<std::uint64_t, Handle>;
  using const_iterator = Map::const_iterator;

  void reserve(std::size_t n) { map_.reserve(n); }
  const_iterator find(std::uint64_t id) const { return map_.find(id); }
  const_iterator begin() const { return map_.begin(); }
  const_iterator end() const { return map_.end(); }
  std::size_t size() const { return map_.size(); }
  // Bytes of every handle (an alias counts again: it may outlive the tensor it aliases).
  std::uint64_t bytes() const { return bytes_; }

  void set(std::uint64_t id, Handle handle) {
    bytes_ += handle.bytes();
    auto [it, inserted] = map_.try_emplace(id);
    if (!inserted) bytes_ -= it->second.bytes();
    it->second = std::move(handle);
  }
  void erase(std::uint64_t id) {
    const auto it = map_.find(id);
    if (it != map_.end()) erase(it);
  }
  void erase(const_iterator it) {
    bytes_ -= it->second.bytes();
    map_.erase(it);
  }

 private:
  Map map_;
  std::uint64_t bytes_ = 0;
};

}  // namespace tb::backend::libtorch
