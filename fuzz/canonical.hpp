// What every fuzz target asks of a value that decoded: its encoding decodes again, to a value that
// encodes to the same bytes (the codec has one canonical form). A failure aborts: a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "torchbridge/ir/codec.hpp"

namespace tb::fuzz {

// Checks that `value`'s encoding decodes again, to a value that encodes to the same bytes.
template <class T>
void check_reencoding(const T& value, const char* what) {
  const std::vector<std::uint8_t> once = ir::encode(value);
  auto again = ir::decode<T>(ir::Bytes::from_vector(once));
  if (!again) {
    std::fprintf(stderr, "%s: the re-encoding of a decoded value does not decode: %s\n", what,
                 again.error().what().c_str());
    std::abort();
  }
  if (ir::encode(again.value()) != once) {
    std::fprintf(stderr, "%s: encode(decode(encode(x))) differs from encode(x)\n", what);
    std::abort();
  }
}

// Decodes `input` as a T; where it decodes, checks the re-encoding. Returns whether it decoded.
template <class T>
bool decodes_canonically(const ir::Bytes& input, const char* what) {
  auto value = ir::decode<T>(input);
  if (!value) return false;
  check_reencoding(value.value(), what);
  return true;
}

// Aborts with `what` unless `ok`: an invariant a fuzz target checks.
inline void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "invariant broken: %s\n", what);
  std::abort();
}

}  // namespace tb::fuzz
