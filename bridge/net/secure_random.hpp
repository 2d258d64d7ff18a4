// Random bytes for everything that grants access: transfer capabilities (a /data download key is a
// bearer token), session ids, transfer ids, keys between federation members. They come from the
// kernel's CSPRNG (getrandom(2)), never from a seeded PRNG: an mt19937_64 seeded from one 32-bit
// random_device value has 2^32 streams, which a stranger can enumerate (issue 39, finding 2).
#pragma once

#include <sys/random.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace tb::net {

// Fills `out` with `n` bytes from the kernel. getrandom blocks only until the pool is first
// initialised at boot; it cannot fail on a running Linux except by a signal (retried). Anything
// else means no CSPRNG: the process stops rather than hand out a guessable key.
inline void secure_random(void* out, std::size_t n) {
  auto* p = static_cast<std::uint8_t*>(out);
  while (n > 0) {
    const ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      std::fputs("torchbridge: getrandom failed: no CSPRNG to draw keys from\n", stderr);
      std::abort();
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
}

inline std::uint64_t secure_random_u64() {
  std::uint64_t v = 0;
  secure_random(&v, sizeof v);
  return v;
}

}  // namespace tb::net
