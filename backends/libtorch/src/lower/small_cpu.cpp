#include "lower/small_cpu.hpp"

#include "lower/strided_walk.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <ATen/MemoryOverlap.h>
#include <c10/util/accumulate.h>

namespace tb::backend::libtorch::small_cpu {

namespace {

using strided_walk::Dims;
using strided_walk::dims_of;
using strided_walk::for_each_offset;
using strided_walk::for_each_offsets;

template <class T>
std::pair<std::int64_t, std::int64_t> range_of(const at::Tensor& t) {
  Dims sizes, strides;
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) > 1 && t.stride(d) != 0) {
      sizes.push_back(t.size(d));
      strides.push_back(t.stride(d));
    }
  }
  const T* p = t.data_ptr<T>();
  std::int64_t lo = std::numeric_limits<std::int64_t>::max();
  std::int64_t hi = std::numeric_limits<std::int64_t>::min();
  for_each_offset(sizes, strides, [&](std::int64_t offset) {
    const auto v = static_cast<std::int64_t>(p[offset]);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  });
  return {lo, hi};
}

template <class T, class I>
void arg_loop(const at::Tensor& x, std::int64_t dim, bool max, I* out) {
  Dims sizes, strides;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (d == dim) continue;
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  const T* p = x.data_ptr<T>();
  const std::int64_t n = x.size(dim), step = x.stride(dim);
  for_each_offset(sizes, strides, [&](std::int64_t offset) {
    const T* row = p + offset;
    std::int64_t best = 0;
    T extremum = row[0];
    if (!std::isnan(extremum)) {
      for (std::int64_t i = 1; i < n; ++i) {
        const T v = row[i * step];
        if (std::isnan(v)) {
          best = i;
          break;
        }
        if (max ? v > extremum : v < extremum) {
          extremum = v;
          best = i;
        }
      }
    }
    *out++ = static_cast<I>(best);
  });
}

template <class I>
void arg_dispatch(const at::Tensor& x, std::int64_t dim, bool max, I* out) {
  if (x.scalar_type() == at::kFloat) {
    arg_loop<float>(x, dim, max, out);
  } else {
    arg_loop<double>(x, dim, max, out);
  }
}

template <class T>
void test_loop(const at::Tensor& x, FloatTest test, bool* out) {
  Dims sizes, strides;
  dims_of(x, sizes, strides);
  const T* p = x.data_ptr<T>();
  if (test == FloatTest::kInf) {
    for_each_offset(sizes, strides, [&](std::int64_t offset) { *out++ = std::isinf(p[offset]); });
  } else {
    for_each_offset(sizes, strides, [&](std::int64_t offset) { *out++ = std::isnan(p[offset]); });
  }
}

// out[i] = f(x[i]) over `x` read through its strides, `out` contiguous.
template <class T, class U, class F>
void map_loop(const at::Tensor& x, U* out, F f) {
  Dims sizes, strides;
  dims_of(x, sizes, strides);
  const T* p = x.data_ptr<T>();
  for_each_offset(sizes, strides, [&](std::int64_t offset) { *out++ = f(p[offset]); });
}

// Whether `x` is a non-empty CPU tensor small enough for a loop.
bool small(const at::Tensor& x) {
  return x.device().is_cpu() && x.layout() == at::kStrided && x.numel() > 0 &&
         x.numel() <= kMaxElements;
}

template <class T>
void ring_loop(const at::Tensor& x, Ring op, std::int64_t v, at::Tensor& out) {
  // Unsigned arithmetic wraps as two's complement does, without signed overflow.
  using U = std::make_unsigned_t<T>;
  const U u = static_cast<U>(v);
  T* o = out.data_ptr<T>();
  switch (op) {
    case Ring::kAdd:
      return map_loop<T>(x, o, [u](T a) { return static_cast<T>(static_cast<U>(a) + u); });
    case Ring::kSub:
      return map_loop<T>(x, o, [u](T a) { return static_cast<T>(static_cast<U>(a) - u); });
    case Ring::kMul:
      return map_loop<T>(x, o, [u](T a) { return static_cast<T>(static_cast<U>(a) * u); });
  }
}

// Gather moves elements, so it copies them as unsigned words of their size, whatever the dtype.
template <class E, class I>
void gather_loop(const at::Tensor& x, std::int64_t dim, const at::Tensor& index, void* out) {
  Dims sizes, index_strides, x_sizes, x_strides;
  dims_of(index, sizes, index_strides);
  dims_of(x, x_sizes, x_strides);
  const std::int64_t step = x_strides[dim];
  x_strides[dim] = 0;
  const auto* xp = static_cast<const E*>(x.data_ptr());
  const I* ip = index.data_ptr<I>();
  E* o = static_cast<E*>(out);
  for_each_offsets<2>(sizes, {&index_strides, &x_strides},
                      [&](const std::array<std::int64_t, 2>& at) {
                        *o++ = xp[at[1] + static_cast<std::int64_t>(ip[at[0]]) * step];
                      });
}

template <class E>
void gather_by_index(const at::Tensor& x, std::int64_t dim, const at::Tensor& index, void* out) {
  if (index.scalar_type() == at::kLong) {
    gather_loop<E, std::int64_t>(x, dim, index, out);
  } else {
    gather_loop<E, std::int32_t>(x, dim, index, out);
  }
}

template <class T, class I>
void scatter_add_loop(at::Tensor& self, std::int64_t dim, const at::Tensor& index,
                      const at::Tensor& src) {
  Dims sizes, index_strides, src_sizes, src_strides, self_sizes, self_strides;
  dims_of(index, sizes, index_strides);
  dims_of(src, src_sizes, src_strides);
  dims_of(self, self_sizes, self_strides);
  const std::int64_t step = self_strides[dim];
  self_strides[dim] = 0;
  T* out = self.data_ptr<T>();
  const T* sp = src.data_ptr<T>();
  const I* ip = index.data_ptr<I>();
  // Index and src share their sizes: walk both, and self off `dim`, through their own strides.
  for_each_offsets<3>(sizes, {&index_strides, &src_strides, &self_strides},
                      [&](const std::array<std::int64_t, 3>& at) {
                        out[at[2] + static_cast<std::int64_t>(ip[at[0]]) * step] += sp[at[1]];
                      });
}

template <class T>
void scatter_add_by_index(at::Tensor& self, std::int64_t dim, const at::Tensor& index,
                          const at::Tensor& src) {
  if (index.scalar_type() == at::kLong) {
    scatter_add_loop<T, std::int64_t>(self, dim, index, src);
  } else {
    scatter_add_loop<T, std::int32_t>(self, dim, index, src);
  }
}

// dst[region] = value as words of the element's size.
template <class E>
void copy_loop(E* dst, const Dims& sizes, const Dims& dst_strides, const at::Tensor& value) {
  Dims value_sizes, value_strides;
  dims_of(value, value_sizes, value_strides);
  const auto* src = static_cast<const E*>(value.data_ptr());
  for_each_offsets<2>(sizes, {&dst_strides, &value_strides},
                      [&](const std::array<std::int64_t, 2>& o) { dst[o[0]] = src[o[1]]; });
}

// Calls `f(W{})` with W the unsigned word of `size` bytes (the loops that move elements whatever
// their dtype); false, without a call, for a size with no such word.
template <class F>
bool with_word(std::size_t size, F f) {
  switch (size) {
    case 1:
      return f(std::uint8_t{}), true;
    case 2:
      return f(std::uint16_t{}), true;
    case 4:
      return f(std::uint32_t{}), true;
    case 8:
      return f(std::uint64_t{}), true;
    default:
      return false;
  }
}

}  // namespace

bool copy_into(at::Tensor& dst, at::IntArrayRef sizes, at::IntArrayRef strides, std::int64_t offset,
               const at::Tensor& value) {
  if (!small(value) || !dst.device().is_cpu() || dst.layout() != at::kStrided ||
      value.scalar_type() != dst.scalar_type() || value.sizes() != sizes || !dst.is_contiguous() ||
      dst.is_quantized() || value.is_conj() || value.is_neg() ||
      dst.storage().is_alias_of(value.storage())) {
    return false;
  }
  const Dims region_sizes(sizes.begin(), sizes.end());
  const Dims region_strides(strides.begin(), strides.end());
  for (const std::int64_t s : region_strides) {
    if (s < 0) return false;
  }
  // Where the region starts, from dst's first element.
  auto* base = static_cast<std::uint8_t*>(dst.data_ptr()) +
               (offset - dst.storage_offset()) * static_cast<std::int64_t>(dst.element_size());
  return with_word(dst.element_size(), [&](auto word) {
    using W = decltype(word);
    copy_loop(reinterpret_cast<W*>(base), region_sizes, region_strides, value);
  });
}

std::optional<at::Tensor> cat(at::TensorList inputs, std::int64_t dim) {
  if (inputs.empty()) return std::nullopt;
  const at::Tensor& first = inputs[0];
  const std::int64_t rank = first.dim();
  if (rank == 0 || dim < 0 || dim >= rank) return std::nullopt;
  std::vector<std::int64_t> sizes = first.sizes().vec();
  sizes[dim] = 0;
  for (const at::Tensor& t : inputs) {
    if (!small(t) || t.dim() != rank || t.scalar_type() != first.scalar_type() ||
        t.is_quantized() || t.is_conj() || t.is_neg()) {
      return std::nullopt;
    }
    for (std::int64_t d = 0; d < rank; ++d) {
      if (d != dim && t.size(d) != first.size(d)) return std::nullopt;
    }
    sizes[dim] += t.size(dim);
  }
  if (c10::multiply_integers(sizes) > kMaxElements) return std::nullopt;
  at::Tensor out = empty(sizes, first.scalar_type());
  std::int64_t at = 0;  // along dim
  for (const at::Tensor& t : inputs) {
    if (!copy_into(out, t.sizes(), out.strides(), at * out.stride(dim), t)) return std::nullopt;
    at += t.size(dim);
  }
  return out;
}

bool scatter_add_(at::Tensor& self, std::int64_t dim, const at::Tensor& index,
                  const at::Tensor& src) {
  const auto type = self.scalar_type();
  const auto it = index.scalar_type();
  if (!small(index) || !self.device().is_cpu() || !src.device().is_cpu() ||
      self.layout() != at::kStrided || src.layout() != at::kStrided ||
      (type != at::kFloat && type != at::kDouble) || src.scalar_type() != type ||
      (it != at::kLong && it != at::kInt) || self.dim() == 0 || index.dim() != self.dim() ||
      src.sizes() != index.sizes() || dim < 0 || dim >= self.dim()) {
    return false;
  }
  for (std::int64_t d = 0; d < self.dim(); ++d) {
    if (d != dim && index.size(d) > self.size(d)) return false;
  }
  // A self whose elements may share memory, or memory that src or index shares with it: ATen
  // refuses some of these, and decides the others.
  if (at::has_internal_overlap(self) != at::MemOverlap::No ||
      self.storage().is_alias_of(src.storage()) || self.storage().is_alias_of(index.storage())) {
    return false;
  }
  if (type == at::kFloat) {
    scatter_add_by_index<float>(self, dim, index, src);
  } else {
    scatter_add_by_index<double>(self, dim, index, src);
  }
  return true;
}

std::optional<at::Tensor> gather(const at::Tensor& x, std::int64_t dim, const at::Tensor& index) {
  const auto it = index.scalar_type();
  if (!small(index) || !x.device().is_cpu() || x.layout() != at::kStrided ||
      (it != at::kLong && it != at::kInt) || x.dim() == 0 || index.dim() != x.dim() || dim < 0 ||
      dim >= x.dim()) {
    return std::nullopt;
  }
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (d != dim && index.size(d) > x.size(d)) return std::nullopt;
  }
  at::Tensor out = empty(index.sizes(), x.scalar_type());
  const bool moved = with_word(x.element_size(), [&](auto word) {
    gather_by_index<decltype(word)>(x, dim, index, out.data_ptr());
  });
  if (!moved) return std::nullopt;
  return out;
}

std::optional<at::Tensor> float_abs(const at::Tensor& x) {
  const auto type = x.scalar_type();
  if (!small(x) || (type != at::kFloat && type != at::kDouble)) return std::nullopt;
  at::Tensor out = empty(x.sizes(), type);
  if (type == at::kFloat) {
    map_loop<float>(x, out.data_ptr<float>(), [](float a) { return std::fabs(a); });
  } else {
    map_loop<double>(x, out.data_ptr<double>(), [](double a) { return std::fabs(a); });
  }
  return out;
}

std::optional<at::Tensor> divide_by_one(const at::Tensor& x, const at::Tensor& s) {
  const auto type = x.scalar_type();
  if (!small(x) || (type != at::kFloat && type != at::kDouble) || s.scalar_type() != type ||
      !s.device().is_cpu() || s.layout() != at::kStrided || s.numel() != 1 || s.dim() > x.dim() ||
      x.is_neg() || s.is_neg()) {
    return std::nullopt;
  }
  at::Tensor out = empty(x.sizes(), type);
  if (type == at::kFloat) {
    const float v = *s.const_data_ptr<float>();
    map_loop<float>(x, out.data_ptr<float>(), [v](float a) { return a / v; });
  } else {
    const double v = *s.const_data_ptr<double>();
    map_loop<double>(x, out.data_ptr<double>(), [v](double a) { return a / v; });
  }
  return out;
}

std::optional<at::Tensor> int_ring_scalar(const at::Tensor& x, Ring op, std::int64_t v) {
  const auto type = x.scalar_type();
  if (!small(x) || (type != at::kLong && type != at::kInt)) return std::nullopt;
  at::Tensor out = empty(x.sizes(), type);
  if (type == at::kLong) {
    ring_loop<std::int64_t>(x, op, v, out);
  } else {
    ring_loop<std::int32_t>(x, op, v, out);
  }
  return out;
}

std::optional<at::Tensor> float_test(const at::Tensor& x, FloatTest test) {
  const auto type = x.scalar_type();
  if (!x.device().is_cpu() || (type != at::kFloat && type != at::kDouble) || x.numel() == 0 ||
      x.numel() > kMaxElements) {
    return std::nullopt;
  }
  at::Tensor out = empty(x.sizes(), at::kBool);
  if (type == at::kFloat) {
    test_loop<float>(x, test, out.data_ptr<bool>());
  } else {
    test_loop<double>(x, test, out.data_ptr<bool>());
  }
  return out;
}

std::pair<std::int64_t, std::int64_t> value_range(const at::Tensor& t) {
  return t.scalar_type() == at::kLong ? range_of<std::int64_t>(t) : range_of<std::int32_t>(t);
}

std::optional<at::Tensor> arg_extremum(const at::Tensor& x, std::int64_t dim, bool max,
                                       at::ScalarType index) {
  const auto type = x.scalar_type();
  if (!x.device().is_cpu() || (type != at::kFloat && type != at::kDouble) ||
      (index != at::kInt && index != at::kLong) || x.numel() == 0 || x.numel() > kMaxElements ||
      x.is_conj() || x.is_neg()) {
    return std::nullopt;
  }
  std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape[static_cast<std::size_t>(dim)] = 1;
  at::Tensor out = empty(shape, index);
  if (index == at::kInt) {
    arg_dispatch(x, dim, max, out.data_ptr<std::int32_t>());
  } else {
    arg_dispatch(x, dim, max, out.data_ptr<std::int64_t>());
  }
  return out;
}

at::Tensor zeros(at::IntArrayRef sizes, const at::TensorOptions& options) {
  if (options.device().is_cpu() && options.layout() == at::kStrided && !options.pinned_memory() &&
      c10::multiply_integers(sizes) <= kMaxElements) {
    at::Tensor t = empty(sizes, c10::typeMetaToScalarType(options.dtype()));
    // All-zero bits are zero in every dtype a tensor is created in (IEEE +0.0, integers, false).
    if (t.nbytes() > 0) std::memset(t.data_ptr(), 0, t.nbytes());
    return t;
  }
  return at::zeros(sizes, options);
}

}  // namespace tb::backend::libtorch::small_cpu
