#include "runtime/vml.hpp"

#include <dlfcn.h>
#include <immintrin.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/aten_guard.hpp"

namespace tb::backend::libtorch::vml {
namespace {

// MKL's vm?<Fn>(n, a, r, mode). Its LP64 entry point reads n as a 32-bit int, the ILP64 one as a
// 64-bit one: a small non-negative n passed as 64 bits is the same value to either. SLEEF's
// functions are called through adapters of the same type.
using VmsFn = void (*)(long long n, const float* a, float* r, long long mode);

// ATen's mode (vml.h): VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE (mkl_vml_defines.h).
constexpr long long kMode = 0x2 | 0x140000 | 0x100;

constexpr std::size_t kFunctions = 4;

// SLEEF's vector functions, by vml::Fn, found at run time (the adapters below read them).
std::array<void*, kFunctions> sleef_fns{};

// ATen's Vectorized<float>::log1p over an array (vec::map): whole vectors, then the tail as one
// vector zero-filled past its end. Each lane is computed alone, so the tail's lanes are the bits
// a whole vector gives them. The vectors are passed in registers, so the adapters are compiled
// for the ISA of their width (and chosen only on a CPU that has it).
#define TB_SLEEF_ADAPTER(name, isa, lanes, vec, load, store)                                \
  template <Fn kFn>                                                                         \
  __attribute__((target(isa))) void name(long long n, const float* a, float* r, long long) { \
    using F = vec (*)(vec);                                                                 \
    const F f = reinterpret_cast<F>(sleef_fns[static_cast<std::size_t>(kFn)]);              \
    long long i = 0;                                                                        \
    for (; i + lanes <= n; i += lanes) store(r + i, f(load(a + i)));                        \
    if (i == n) return;                                                                     \
    alignas(64) float buf[lanes] = {};                                                      \
    std::memcpy(buf, a + i, static_cast<std::size_t>(n - i) * sizeof(float));               \
    store(buf, f(load(buf)));                                                               \
    std::memcpy(r + i, buf, static_cast<std::size_t>(n - i) * sizeof(float));               \
  }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
TB_SLEEF_ADAPTER(sleef_apply_8, "avx2", 8, __m256, _mm256_loadu_ps, _mm256_storeu_ps)
TB_SLEEF_ADAPTER(sleef_apply_16, "avx512f", 16, __m512, _mm512_loadu_ps, _mm512_storeu_ps)
#pragma GCC diagnostic pop
#undef TB_SLEEF_ADAPTER

// Where a function comes from: MKL's entry point, or SLEEF's for the vector width ATen runs at
// (AVX-512 first, then AVX2: the first whose probe passes is ATen's).
struct Source {
  const char* symbol;
  VmsFn adapter;         // null: the symbol is MKL's, called directly
  const char* cpu = "";  // the CPU feature the adapter needs
};
struct Entry {
  std::array<Source, 2> sources;
  at::Tensor (*aten)(const at::Tensor&);
};
// In vml::Fn's order.
const std::array<Entry, kFunctions> kEntries = {{
    {{{{"vmsExp", nullptr}}}, [](const at::Tensor& x) { return at::exp(x); }},
    {{{{"vmsLn", nullptr}}}, [](const at::Tensor& x) { return at::log(x); }},
    {{{{"vmsSqrt", nullptr}}}, [](const at::Tensor& x) { return at::sqrt(x); }},
    {{{{"Sleef_log1pf16_u10", &sleef_apply_16<Fn::kLog1p>, "avx512f"},
       {"Sleef_log1pf8_u10", &sleef_apply_8<Fn::kLog1p>, "avx2"}}},
     [](const at::Tensor& x) { return at::log1p(x); }},
}};

// Inputs where vector math functions change code paths: zeros, denormals, infinities, NaN, the
// edges of exp's range, numbers near 1, negatives; then a spread over every exponent.
std::vector<float> probe_inputs() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1e-45f,
                          -1e-45f,
                          1e-40f,
                          1.17549435e-38f,
                          1.0f,
                          -1.0f,
                          0.5f,
                          2.0f,
                          88.72f,
                          88.73f,
                          -87.33f,
                          -87.34f,
                          -103.9f,
                          -104.0f,
                          1e30f,
                          3.4e38f,
                          0.9999f,
                          1.0001f,
                          -2.5f,
                          -0.5f,
                          -0.99999994f,
                          1e-7f,
                          1e-20f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::nanf("")};
  for (std::uint32_t i = 0; v.size() < 8191; ++i) {
    const std::uint32_t bits = i * 524309u + 77u;
    float x = 0;
    std::memcpy(&x, &bits, 4);
    v.push_back(x);
  }
  return v;
}

bool same_bits(const float* a, const float* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

// fn over the probe inputs in pieces of 1 to 37 elements, each at an odd offset from a 64-byte
// boundary, against ATen's kernel over the whole.
bool probe(const Entry& e, VmsFn fn) {
  const std::vector<float> in = probe_inputs();
  const auto n = static_cast<std::int64_t>(in.size());
  const at::Tensor x = at::from_blob(const_cast<float*>(in.data()), {n}, at::kFloat).clone();
  const at::Tensor want = e.aten(x).contiguous();
  std::vector<float> a(in.size() + 64);
  std::vector<float> y(in.size() + 64);
  for (std::int64_t i = 0, k = 0; i < n; ++k) {
    const std::int64_t len = std::min<std::int64_t>(1 + (k * 7) % 37, n - i);
    // Copied to an odd offset first, so no piece keeps the alignment ATen's whole array had.
    const std::size_t at = static_cast<std::size_t>(i) + 1 + static_cast<std::size_t>(k % 15);
    std::memcpy(&a[at], &in[static_cast<std::size_t>(i)], static_cast<std::size_t>(len) * 4);
    fn(len, &a[at], &y[at], kMode);
    if (!same_bits(&y[at], want.data_ptr<float>() + i, static_cast<std::size_t>(len))) {
      return false;
    }
    i += len;
  }
  return true;
}

bool cpu_has(const char* feature) {
  if (*feature == '\0') return true;
  if (std::strcmp(feature, "avx2") == 0) return __builtin_cpu_supports("avx2");
  if (std::strcmp(feature, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
  return false;
}

struct Table {
  std::array<VmsFn, kEntries.size()> fn{};
  Table() {
    for (std::size_t i = 0; i < kEntries.size(); ++i) {
      for (const Source& source : kEntries[i].sources) {
        if (source.symbol == nullptr || !cpu_has(source.cpu)) continue;
        void* found = dlsym(RTLD_DEFAULT, source.symbol);
        if (found == nullptr) continue;
        VmsFn f = reinterpret_cast<VmsFn>(found);
        if (source.adapter != nullptr) {
          sleef_fns[i] = found;
          f = source.adapter;
        }
        // ATen may throw (out of memory): then the function is not used.
        const Result<bool> same = aten_guard("vml probe", [&] { return probe(kEntries[i], f); });
        if (same && same.value()) {
          fn[i] = f;
          break;
        }
      }
    }
  }
};
const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

bool usable(Fn fn) {
  return table().fn[static_cast<std::size_t>(fn)] != nullptr;
}

void apply(Fn fn, const float* a, float* y, std::int64_t n) {
  table().fn[static_cast<std::size_t>(fn)](n, a, y, kMode);
}

}  // namespace tb::backend::libtorch::vml
