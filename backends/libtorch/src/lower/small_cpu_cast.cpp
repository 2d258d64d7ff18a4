// small_cpu::cast: dtype conversions of small CPU tensors as one loop.
#include "lower/small_cpu.hpp"
#include "lower/strided_walk.hpp"

namespace tb::backend::libtorch::small_cpu {
namespace {

// x's elements in row-major order into the contiguous y.
template <class From, class To>
void convert(const at::Tensor& x, To* y) {
  const From* a = x.const_data_ptr<From>();
  if (x.is_contiguous()) {
    for (std::int64_t k = 0, n = x.numel(); k < n; ++k) y[k] = static_cast<To>(a[k]);
    return;
  }
  strided_walk::Dims sizes;
  strided_walk::Dims strides;
  strided_walk::dims_of(x, sizes, strides);
  std::int64_t k = 0;
  strided_walk::for_each_offset(sizes, strides,
                                [&](std::int64_t at) { y[k++] = static_cast<To>(a[at]); });
}

template <class From>
void convert_to(const at::Tensor& x, at::Tensor& y) {
  switch (y.scalar_type()) {
    case at::kInt:
      return convert<From>(x, y.data_ptr<std::int32_t>());
    case at::kLong:
      return convert<From>(x, y.data_ptr<std::int64_t>());
    case at::kFloat:
      return convert<From>(x, y.data_ptr<float>());
    default:
      return convert<From>(x, y.data_ptr<double>());
  }
}

bool castable(at::ScalarType t) {
  return t == at::kInt || t == at::kLong || t == at::kFloat || t == at::kDouble;
}

}  // namespace

std::optional<at::Tensor> cast(const at::Tensor& x, at::ScalarType to) {
  const at::ScalarType from = x.scalar_type();
  if (from == to || !castable(from) || !castable(to) || !x.device().is_cpu() ||
      x.layout() != at::kStrided || x.numel() > kMaxElements) {
    return std::nullopt;
  }
  // ATen keeps the strides of a dense tensor (a transposed one stays transposed) and makes any
  // other contiguous (an expanded index, which Burn's LU scatters through): so is this result.
  if (!x.is_contiguous() && x.is_non_overlapping_and_dense()) return std::nullopt;
  // A float out of an integer's range has no defined conversion: ATen's loops and this one may
  // answer differently, so that stays ATen's.
  if (at::isFloatingType(from) && !at::isFloatingType(to)) return std::nullopt;
  at::Tensor y = empty(x.sizes(), to);
  switch (from) {
    case at::kInt:
      convert_to<std::int32_t>(x, y);
      break;
    case at::kLong:
      convert_to<std::int64_t>(x, y);
      break;
    case at::kFloat:
      convert_to<float>(x, y);
      break;
    default:
      convert_to<double>(x, y);
      break;
  }
  return y;
}

}  // namespace tb::backend::libtorch::small_cpu
