#include "runtime/vml.hpp"

#include <dlfcn.h>

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
// 64-bit one: a small non-negative n passed as 64 bits is the same value to either.
using VmsFn = void (*)(long long n, const float* a, float* r, long long mode);

// ATen's mode (vml.h): VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE (mkl_vml_defines.h).
constexpr long long kMode = 0x2 | 0x140000 | 0x100;

struct Entry {
  const char* symbol;
  at::Tensor (*aten)(const at::Tensor&);
};
const std::array<Entry, 3> kEntries = {{
    {"vmsExp", [](const at::Tensor& x) { return at::exp(x); }},
    {"vmsLn", [](const at::Tensor& x) { return at::log(x); }},
    {"vmsSqrt", [](const at::Tensor& x) { return at::sqrt(x); }},
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
                          1e-7f,
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

struct Table {
  std::array<VmsFn, 3> fn{};
  Table() {
    for (std::size_t i = 0; i < kEntries.size(); ++i) {
      auto* f = reinterpret_cast<VmsFn>(dlsym(RTLD_DEFAULT, kEntries[i].symbol));
      if (f == nullptr) continue;
      // ATen may throw (out of memory): then the function is not used.
      const Result<bool> same = aten_guard("vml probe", [&] { return probe(kEntries[i], f); });
      if (same && same.value()) fn[i] = f;
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
