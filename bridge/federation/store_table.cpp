#include "store_table.hpp"

#include <charconv>

#include <fmt/format.h>

namespace tb::bridge::store {
namespace {

Response refusal(std::string reason) {
  return Response{Outcome::kError, 0, Bytes(reason.begin(), reason.end())};
}

}  // namespace

bool Table::has_all(const std::vector<std::string>& keys) const {
  for (const auto& k : keys) {
    if (!values_.count(k)) return false;
  }
  return true;
}

Response Table::apply(const Request& r) {
  const std::string& key = r.keys.empty() ? std::string() : r.keys[0];
  switch (r.op) {
    case Op::kSet:
      return put(key, r.value);
    case Op::kGet: {
      const auto it = values_.find(key);
      if (it == values_.end()) return Response{Outcome::kMissing, 0, {}};
      return Response{Outcome::kOk, 0, it->second};
    }
    case Op::kAdd:
      return add(key, r.amount);
    case Op::kCheck:
      return Response{Outcome::kOk, has_all(r.keys) ? 1 : 0, {}};
    case Op::kDelete:
      return Response{Outcome::kOk, erase(key) ? 1 : 0, {}};
    case Op::kNumKeys:
      return Response{Outcome::kOk, static_cast<std::int64_t>(values_.size()), {}};
    case Op::kCompareSet:
      return compare_set(key, r.expected, r.value);
    case Op::kWait:
      break;
  }
  return refusal("an op the table does not apply");
}

// A write past the bounds is refused with the reason; the connection goes on.
Response Table::put(const std::string& key, const Bytes& value) {
  const auto it = values_.find(key);
  const std::size_t before = it == values_.end() ? 0 : key.size() + it->second.size();
  const std::size_t after = bytes_ - before + key.size() + value.size();
  if (after > limits_.max_bytes) {
    return refusal(
        fmt::format("the store is full: {} bytes, the most it holds", limits_.max_bytes));
  }
  if (it == values_.end() && values_.size() >= limits_.max_keys) {
    return refusal(fmt::format("the store is full: {} keys, the most it holds", limits_.max_keys));
  }
  values_[key] = value;
  bytes_ = after;
  return Response{Outcome::kOk, 0, value};
}

bool Table::erase(const std::string& key) {
  const auto it = values_.find(key);
  if (it == values_.end()) return false;
  bytes_ -= key.size() + it->second.size();
  values_.erase(it);
  return true;
}

// As c10d's stores: the running total is kept as its decimal text.
Response Table::add(const std::string& key, std::int64_t amount) {
  std::int64_t total = 0;
  if (const auto it = values_.find(key); it != values_.end()) {
    const char* begin = reinterpret_cast<const char*>(it->second.data());
    const char* end = begin + it->second.size();
    const auto [p, ec] = std::from_chars(begin, end, total);
    if (ec != std::errc() || p != end) return refusal("add to a key that holds no number");
  }
  if (__builtin_add_overflow(total, amount, &total)) return refusal("add overflows the key");
  const std::string text = std::to_string(total);
  Response stored = put(key, Bytes(text.begin(), text.end()));
  if (stored.outcome != Outcome::kOk) return stored;
  return Response{Outcome::kOk, total, {}};
}

// As c10d's TCPStore: sets `desired` where the key holds `expected` (or is missing and `expected`
// is empty) and answers the key's value after.
Response Table::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  const auto it = values_.find(key);
  if (it == values_.end()) {
    return expected.empty() ? put(key, desired) : Response{Outcome::kOk, 0, expected};
  }
  if (it->second == expected) return put(key, desired);
  return Response{Outcome::kOk, 0, it->second};
}

}  // namespace tb::bridge::store
