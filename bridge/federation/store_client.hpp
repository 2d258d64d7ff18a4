// A member's side of the federation's store (store_protocol.hpp), as a c10d::Store, so c10d's
// process groups (Gloo's rendezvous) and the federation's own records use the same authenticated
// connection. It reports failures as c10d's stores do, by throwing (std::runtime_error); the
// federation catches them in one place (c10d_guard.hpp).
//
// Every call is bounded: connecting and proving the key by the store's timeout (retried while the
// store is not up yet, as members may start before rank 0), a request by the same, and a wait by
// the shorter of its own timeout and the store's, so no caller waits past its operation's timeout
// for an answer. A connection that failed is dropped, and the next call opens a fresh one.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "store_protocol.hpp"

namespace tb::bridge::store {

class Channel;  // one authenticated connection, shared by a store and its scoped views

class Client final : public c10d::Store {
 public:
  Client(std::string host, std::uint16_t port, const std::optional<std::string>& token,
         std::chrono::milliseconds timeout);
  // Another view of `channel` (scoped, clone).
  Client(std::shared_ptr<Channel> channel, std::chrono::milliseconds timeout);
  ~Client() override;

  // The same connection, with another timeout (for one operation's process group).
  c10::intrusive_ptr<Client> scoped(std::chrono::milliseconds timeout);

#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<c10d::Store> clone() override;
#endif
  void set(const std::string& key, const std::vector<std::uint8_t>& value) override;
  std::vector<std::uint8_t> compareSet(const std::string& key,
                                       const std::vector<std::uint8_t>& expected,
                                       const std::vector<std::uint8_t>& desired) override;
  std::vector<std::uint8_t> get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  std::int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  Response call(Request request, std::chrono::milliseconds budget);

  std::shared_ptr<Channel> channel_;
};

}  // namespace tb::bridge::store
