// small_cpu::int_compare_scalar: an integer tensor against one value, as one loop.
#include <ATen/Parallel.h>

#include "lower/small_cpu.hpp"
#include "runtime/avx2_clones.hpp"

namespace tb::backend::libtorch::small_cpu {
namespace {

// Larger tensors take this loop only where ATen would run its own on one thread too.
constexpr std::int64_t kMaxOneThread = std::int64_t{1} << 22;

// T's own width against v (in T's range, checked by the caller): the loops vectorise (AVX2 clone,
// -O3). Every order is its own loop.
template <class T>
TB_AVX2_CLONES void compare_as(const T* a, std::int64_t n, Order op, T v, bool* y) {
  switch (op) {
    case Order::kGt:
      for (std::int64_t k = 0; k < n; ++k) y[k] = a[k] > v;
      break;
    case Order::kGe:
      for (std::int64_t k = 0; k < n; ++k) y[k] = a[k] >= v;
      break;
    case Order::kLt:
      for (std::int64_t k = 0; k < n; ++k) y[k] = a[k] < v;
      break;
    case Order::kLe:
      for (std::int64_t k = 0; k < n; ++k) y[k] = a[k] <= v;
      break;
    case Order::kEq:
      for (std::int64_t k = 0; k < n; ++k) y[k] = a[k] == v;
      break;
    case Order::kNe:
      for (std::int64_t k = 0; k < n; ++k) y[k] = a[k] != v;
      break;
  }
}

}  // namespace

std::optional<at::Tensor> int_compare_scalar(const at::Tensor& x, Order op, std::int64_t v) {
  const auto type = x.scalar_type();
  if ((type != at::kInt && type != at::kLong) || !x.device().is_cpu() ||
      x.layout() != at::kStrided || !x.is_contiguous()) {
    return std::nullopt;
  }
  if (x.numel() > kMaxElements && (x.numel() > kMaxOneThread || at::get_num_threads() > 1)) {
    return std::nullopt;
  }
  // A value outside int32's range against an int32 tensor: ATen's promotion decides, not this.
  if (type == at::kInt && static_cast<std::int32_t>(v) != v) return std::nullopt;
  at::Tensor y = empty(x.sizes(), at::kBool);
  if (type == at::kInt) {
    compare_as(x.const_data_ptr<std::int32_t>(), x.numel(), op, static_cast<std::int32_t>(v),
               y.data_ptr<bool>());
  } else {
    compare_as(x.const_data_ptr<std::int64_t>(), x.numel(), op, v, y.data_ptr<bool>());
  }
  return y;
}

}  // namespace tb::backend::libtorch::small_cpu
