// TB_AVX2_CLONES: a loop function compiled twice, for baseline x86-64 (SSE2) and for AVX2, the
// loader picking the clone the CPU can run (GCC's target_clones). Twice the lanes, the same IEEE
// operations: neither clone enables FMA, so results stay bit for bit those of the baseline.
// Empty in sanitizer builds, whose run-time may not be up when the loader resolves a clone, and
// off x86-64.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || !defined(__x86_64__)
#define TB_AVX2_CLONES
#else
#define TB_AVX2_CLONES [[gnu::target_clones("avx2", "default")]]
#endif
