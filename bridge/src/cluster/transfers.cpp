#include "cluster/transfers.hpp"

#include <cstring>

#include "torchbridge/ir/codec.hpp"

namespace tb::bridge {

bool LocalTransfers::expose(const std::string& scope, ir::LocalTransferId id,
                            std::uint64_t source_session, TransferResult tensor) {
  {
    std::lock_guard lock(mutex_);
    if (!entries_.emplace(Key{scope, id}, Entry{source_session, std::move(tensor)}).second) {
      return false;
    }
  }
  exposed_.notify_all();
  return true;
}

TransferResult LocalTransfers::take(const std::string& scope, ir::LocalTransferId id,
                                    std::chrono::milliseconds timeout) {
  const Key key{scope, id};
  std::unique_lock lock(mutex_);
  const bool arrived = exposed_.wait_for(lock, timeout, [&] {
    return stopping_ || entries_.count(key) != 0;
  }) && entries_.count(key) != 0;
  if (!arrived && stopping_) {
    return make_error(ErrorCode::kIo, "the host is stopping: same-host transfer {} abandoned", id);
  }
  if (!arrived) {
    return make_error(ErrorCode::kTimeout,
                      "same-host transfer {} was not exposed by its source within {} ms (an "
                      "unknown transfer id, a source session that never sent ExposeTensorLocal, "
                      "or one from another client: transfers stay between sessions of one peer "
                      "and credential)",
                      id, timeout.count());
  }
  auto node = entries_.extract(key);
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

std::uint64_t DataStore::key_of(const ir::TransferCapability& capability) {
  std::uint64_t key = 0;
  for (int i = 7; i >= 0; --i) key = (key << 8) | capability[static_cast<std::size_t>(i)];
  return key;
}

DataStore::Payload DataStore::not_a_member(std::uint64_t key) {
  return make_error(ErrorCode::kUnauthorized,
                    "transfer {:#x} is between federation members: a download needs a member's "
                    "token or address",
                    key);
}

bool DataStore::expose(std::uint64_t key, std::uint64_t session, Payload payload,
                       std::uint32_t count, MemoryCharge charge,
                       std::chrono::steady_clock::time_point expires, bool members_only) {
  std::vector<std::pair<Callback, Payload>> ready;
  {
    std::lock_guard lock(mutex_);
    if (exposed_.count(key)) return false;
    Exposed entry{session, std::move(payload), std::max<std::uint32_t>(count, 1), std::move(charge),
                  expires, members_only};
    for (auto it = waiters_.begin(); it != waiters_.end() && entry.remaining > 0;) {
      if (it->second.key != key) {
        ++it;
        continue;
      }
      if (members_only && !it->second.member) {
        ready.emplace_back(std::move(it->second.done), not_a_member(key));
      } else {
        ready.emplace_back(std::move(it->second.done), entry.payload);
        --entry.remaining;
      }
      it = waiters_.erase(it);
    }
    if (entry.remaining > 0) exposed_.emplace(key, std::move(entry));
  }
  for (auto& [done, p] : ready) done(std::move(p));
  return true;
}

std::uint64_t DataStore::when_exposed(std::uint64_t key, bool member, Callback done) {
  Payload payload = make_error(ErrorCode::kInternal, "unset");
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(mutex_);
    ticket = next_ticket_++;
    const auto it = exposed_.find(key);
    if (it == exposed_.end()) {
      waiters_.emplace(ticket, Waiter{key, member, std::move(done)});
      return ticket;
    }
    if (it->second.members_only && !member) {
      payload = not_a_member(key);
    } else {
      payload = it->second.payload;
      if (--it->second.remaining == 0) exposed_.erase(it);
    }
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

void DataStore::purge_session(std::uint64_t session) {
  std::vector<Exposed> dropped;  // freed outside the lock
  std::lock_guard lock(mutex_);
  for (auto it = exposed_.begin(); it != exposed_.end();) {
    if (it->second.session == session) {
      dropped.push_back(std::move(it->second));
      it = exposed_.erase(it);
    } else {
      ++it;
    }
  }
}

std::size_t DataStore::expire(std::chrono::steady_clock::time_point now) {
  std::size_t n = 0;
  std::lock_guard lock(mutex_);
  for (auto it = exposed_.begin(); it != exposed_.end();) {
    if (it->second.expires <= now) {
      it = exposed_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

void DataStore::drop_waiters() {
  std::map<std::uint64_t, Waiter> dropped;
  {
    std::lock_guard lock(mutex_);
    dropped.swap(waiters_);
  }
}

}  // namespace tb::bridge
