// A session's tensor handles by id, with their bytes kept as a running count: the host checks a
// session's memory after every op, so the count must not cost a scan of every tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "exec/failure_log.hpp"
#include "quant/quant.hpp"

namespace tb::backend::libtorch {

struct Handle {
  at::Tensor tensor;
  std::shared_ptr<FailureLog::Failure> failure;  // set: the tensor is poisoned
  std::shared_ptr<const quant::QTensor> q;       // set: a quantized tensor (`tensor` undefined)
  // Set where the tensor holds another dtype than the IR declares (OpContext::out's `held`):
  // reads answer in it.
  std::optional<ir::DType> held;

  // An op may take the tensor as it is: no failure, not quantized, not held in another dtype.
  bool plain() const { return !failure && !q && !held && tensor.defined(); }

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

  // Replaces every other handle's tensor that shares `base`'s memory (handle `id`) with a copy
  // of its own, so that an op consuming `base` may update it in place. Done only where it pays
  // and is safe: `base` is large, the sharers are small beside it and nothing outside this table
  // holds them (a download in flight, a pending run); otherwise nothing changes and it returns
  // false. The copies hold the same values: Burn's tensors are values, and no sharer may see the
  // update.
  bool unshare_views(const at::Tensor& base, std::uint64_t id) {
    // A scan of a large session's table could cost more than the copy it saves.
    constexpr std::size_t kMaxScan = 256;
    constexpr std::uint64_t kMinBytes = 16 << 10;
    const auto base_bytes = static_cast<std::uint64_t>(base.numel()) * base.element_size();
    if (base_bytes < kMinBytes || map_.size() > kMaxScan) return false;
    const c10::StorageImpl* storage = base.storage().unsafeGetStorageImpl();
    const c10::TensorImpl* impl = base.unsafeGetTensorImpl();
    std::vector<Handle*> sharers;
    std::uint64_t sharer_bytes = 0;
    long views_of_base = 0;
    for (auto& [key, h] : map_) {
      const at::Tensor& t = h.tensor;
      if (key == id || !t.defined() || !t.has_storage()) continue;
      if (t.storage().unsafeGetStorageImpl() != storage) continue;
      if (t.unsafeGetTensorImpl() == impl || t.use_count() != 1) return false;
      if (t.is_view()) {
        if (t._base().unsafeGetTensorImpl() != impl) return false;
        ++views_of_base;
      }
      sharer_bytes += h.bytes();
      if (sharer_bytes * 4 > base_bytes) return false;
      sharers.push_back(&h);
    }
    // Every other holder of the memory must be one of these handles.
    if (sharers.empty() || static_cast<long>(base.use_count()) != 1 + views_of_base ||
        static_cast<std::size_t>(base.storage().use_count()) != 1 + sharers.size()) {
      return false;
    }
    for (Handle* h : sharers) h->tensor = h->tensor.clone(at::MemoryFormat::Contiguous);
    return true;
  }

 private:
  Map map_;
  std::uint64_t bytes_ = 0;
};

}  // namespace tb::backend::libtorch
