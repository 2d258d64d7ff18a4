#include "transfers.hpp"

#include <cstring>

#include "torchbridge/ir/codec.hpp"

namespace tb::bridge {

void LocalTransfers::expose(ir::LocalTransferId id, std::uint64_t source_session,
                            TransferResult tensor) {
  {
    std::lock_guard lock(mutex_);
    entries_.insert_or_assign(id, Entry{source_session, std::move(tensor)});
  }
  exposed_.notify_all();
}

TransferResult LocalTransfers::take(ir::LocalTransferId id, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const bool arrived = exposed_.wait_for(lock, timeout, [&] {
    return stopping_ || entries_.count(id) != 0;
  }) && entries_.count(id) != 0;
  if (!arrived && stopping_) {
    return make_error(ErrorCode::kIo, "the host is stopping: same-host transfer {} abandoned", id);
  }
  if (!arrived) {
    return make_error(ErrorCode::kTimeout,
                      "same-host transfer {} was not exposed by its source within {} ms (an "
                      "unknown transfer id, or a source session that never sent "
                      "ExposeTensorLocal)",
                      id, timeout.count());
  }
  auto node = entries_.extract(id);
  return std::move(node.mapped().tensor);
}

void LocalTransfers::purge_session(std::uint64_t session) {
  std::lock_guard lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = it->second.session == session ? entries_.erase(it) : std::next(it);
  }
}

void LocalTransfers::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  exposed_.notify_all();
}

std::size_t LocalTransfers::pending() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::uint64_t DataStore::key_of(const ir::TransferCapability& capability) {
  std::uint64_t key = 0;
  for (int i = 7; i >= 0; --i) key = (key << 8) | capability[static_cast<std::size_t>(i)];
  return key;
}

void DataStore::expose(std::uint64_t key, Payload payload, std::uint32_t count) {
  std::vector<std::pair<Callback, Payload>> ready;
  {
    std::lock_guard lock(mutex_);
    Exposed entry{std::move(payload), std::max<std::uint32_t>(count, 1)};
    for (auto it = waiters_.begin(); it != waiters_.end() && entry.remaining > 0;) {
      if (it->second.key != key) {
        ++it;
        continue;
      }
      ready.emplace_back(std::move(it->second.done), entry.payload);
      --entry.remaining;
      it = waiters_.erase(it);
    }
    if (entry.remaining > 0) exposed_.insert_or_assign(key, std::move(entry));
  }
  for (auto& [done, p] : ready) done(std::move(p));
}

std::uint64_t DataStore::when_exposed(std::uint64_t key, Callback done) {
  Payload payload = make_error(ErrorCode::kInternal, "unset");
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(mutex_);
    ticket = next_ticket_++;
    const auto it = exposed_.find(key);
    if (it == exposed_.end()) {
      waiters_.emplace(ticket, Waiter{key, std::move(done)});
      return ticket;
    }
    payload = it->second.payload;
    if (--it->second.remaining == 0) exposed_.erase(it);
  }
  done(std::move(payload));
  return ticket;
}

void DataStore::cancel(std::uint64_t ticket, const Error& why) {
  Callback done;
  {
    std::lock_guard lock(mutex_);
    const auto it = waiters_.find(ticket);
    if (it == waiters_.end()) return;
    done = std::move(it->second.done);
    waiters_.erase(it);
  }
  done(why);
}

void DataStore::drop_waiters() {
  std::map<std::uint64_t, Waiter> dropped;
  {
    std::lock_guard lock(mutex_);
    dropped.swap(waiters_);
  }
}

std::size_t DataStore::exposed() const {
  std::lock_guard lock(mutex_);
  return exposed_.size();
}

}  // namespace tb::bridge
