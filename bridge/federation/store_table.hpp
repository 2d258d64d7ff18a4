// The federation store's table (store_server.hpp): keys and values, with the server's bounds on
// what they hold, and c10d's meaning of each op. Used on the server's thread only.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "store_protocol.hpp"
#include "store_server.hpp"

namespace tb::bridge::store {

class Table {
 public:
  explicit Table(const ServerLimits& limits) : limits_(limits) {}

  bool has_all(const std::vector<std::string>& keys) const;
  // Every op but kWait (which the server parks until has_all).
  Response apply(const Request& r);

  std::size_t keys() const { return values_.size(); }
  std::size_t bytes() const { return bytes_; }

 private:
  Response put(const std::string& key, const Bytes& value);
  bool erase(const std::string& key);
  Response add(const std::string& key, std::int64_t amount);
  Response compare_set(const std::string& key, const Bytes& expected, const Bytes& desired);

  const ServerLimits limits_;
  std::map<std::string, Bytes> values_;
  std::size_t bytes_ = 0;
};

}  // namespace tb::bridge::store
