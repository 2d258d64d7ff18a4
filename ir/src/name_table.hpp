// Variant name -> index, for the names every frame repeats: a task's, an op's category and
// variant, a tensor's status and dtype. A linear search compared lengths and then bytes against up
// to seventy names (Burn's float ops) for each; with std::unordered_map the op variants paid a
// full string hash and a node walk. Here a name's hash is its length and three of its bytes, and a
// small open-addressed table, built at compile time for a fixed list, resolves the rest by probing
// (the hash only decides how many probes, never the answer).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace tb::ir {

constexpr std::uint32_t name_hash(std::string_view s, std::uint32_t salt = 0) {
  std::uint32_t h = static_cast<std::uint32_t>(s.size()) * 0x9E3779B1u ^ salt * 0x85EBCA77u;
  if (!s.empty()) {
    const auto byte = [&](std::size_t i) {
      return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i]));
    };
    h ^= byte(0) * 0xC2B2AE3Du;
    h ^= byte(s.size() / 2) * 0x27D4EB2Fu;
    h ^= byte(s.size() - 1) * 0x165667B1u;
  }
  return h ^ (h >> 15);
}

// Names are a few bytes: word loads inline beat a call to memcmp, and a byte loop (a third of
// the decoder's name lookups) alike. Words that overlap cover the tail.
inline bool same_name(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  const char* x = a.data();
  const char* y = b.data();
  const auto equal_at = [&](std::size_t at, auto word) {
    decltype(word) u = 0;
    decltype(word) v = 0;
    std::memcpy(&u, x + at, sizeof u);
    std::memcpy(&v, y + at, sizeof v);
    return u == v;
  };
  if (n >= 8) {
    for (std::size_t k = 0; k + 8 <= n; k += 8) {
      if (!equal_at(k, std::uint64_t{})) return false;
    }
    return equal_at(n - 8, std::uint64_t{});
  }
  if (n >= 4) return equal_at(0, std::uint32_t{}) && equal_at(n - 4, std::uint32_t{});
  for (std::size_t k = 0; k < n; ++k) {
    if (x[k] != y[k]) return false;
  }
  return true;
}

// A table at most a quarter full: most lookups take one probe.
constexpr std::size_t name_table_capacity(std::size_t names) {
  std::size_t c = 8;
  while (c < 4 * names) c *= 2;
  return c;
}

// Open addressing with linear probing over entries' indices; slots hold index + 1, 0 is empty.
template <std::size_t kCapacity>
class NameTable {
  static_assert((kCapacity & (kCapacity - 1)) == 0, "a power of two");

 public:
  constexpr void insert(std::uint32_t hash, std::size_t index) {
    std::size_t i = hash & (kCapacity - 1);
    while (slots_[i] != 0) i = (i + 1) & (kCapacity - 1);
    slots_[i] = static_cast<std::uint16_t>(index + 1);
  }
  // The first entry with this hash's probe sequence that `matches(index)`, or -1.
  template <class Matches>
  constexpr int find(std::uint32_t hash, Matches&& matches) const {
    for (std::size_t i = hash & (kCapacity - 1);; i = (i + 1) & (kCapacity - 1)) {
      const std::uint16_t slot = slots_[i];
      if (slot == 0) return -1;
      if (matches(static_cast<std::size_t>(slot - 1))) return slot - 1;
    }
  }

 private:
  std::array<std::uint16_t, kCapacity> slots_{};
};

// The table of a constexpr array of names (EnumNames<E>::kNames, a codec's variant list).
template <const auto& Names>
struct NamesIndex {
  static constexpr std::size_t kCount = std::tuple_size_v<std::decay_t<decltype(Names)>>;
  using Table = NameTable<name_table_capacity(kCount)>;
  static constexpr Table kTable = [] {
    Table t;
    for (std::size_t i = 0; i < kCount; ++i) t.insert(name_hash(Names[i]), i);
    return t;
  }();
};

// Index of `name` in `Names`, or -1.
template <const auto& Names>
int find_name(std::string_view name) {
  return NamesIndex<Names>::kTable.find(name_hash(name),
                                        [&](std::size_t i) { return same_name(Names[i], name); });
}

}  // namespace tb::ir
