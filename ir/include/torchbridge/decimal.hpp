// Decimal numbers read from text the host did not write (ports, ranks, cgroup limits, an
// AOTInductor package's wrapper source): std::from_chars, strict, with no exception to catch
// (std::stoul throws on overflow and takes "7abc" as 7).
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace tb {

// The unsigned number `text` is the decimal of, when it is digits only (no sign, space or
// anything after) and at most `max`.
template <typename T = std::uint64_t>
std::optional<T> parse_decimal(std::string_view text, T max = std::numeric_limits<T>::max()) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  T value{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || value > max) return std::nullopt;
  return value;
}

}  // namespace tb
