// The strided walk under the small-tensor loops (small_cpu.cpp): every position of a shape, in
// row-major order, with its offset in each of K tensors read or written through their own strides.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <ATen/ATen.h>
#include <c10/util/SmallVector.h>

namespace tb::backend::libtorch::strided_walk {

using Dims = c10::SmallVector<std::int64_t, 6>;

// The walk of for_each_offsets: dims of size 1 dropped, and neighbours that every tensor steps
// through as one merged (a row of a contiguous block is one dim of its length), so that the
// innermost loop is as long as the layouts allow. The order of the positions does not change.
template <std::size_t K>
struct Walk {
  Dims sizes;
  std::array<Dims, K> strides;
};

template <std::size_t K>
inline Walk<K> walk_of(const Dims& sizes, const std::array<const Dims*, K>& strides) {
  Walk<K> w;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool merge = !w.sizes.empty();
    for (std::size_t k = 0; k < K && merge; ++k) {
      merge = w.strides[k].back() == (*strides[k])[d] * sizes[d];
    }
    if (merge) {
      w.sizes.back() *= sizes[d];
      for (std::size_t k = 0; k < K; ++k) w.strides[k].back() = (*strides[k])[d];
      continue;
    }
    w.sizes.push_back(sizes[d]);
    for (std::size_t k = 0; k < K; ++k) w.strides[k].push_back((*strides[k])[d]);
  }
  return w;
}

// Visits every position of the dims `sizes` in row-major order, with its offset (in elements) in
// each of K tensors of those sizes and their own strides: `f(offsets)`.
template <std::size_t K, class F>
inline void for_each_offsets(const Dims& sizes, const std::array<const Dims*, K>& strides, F f) {
  const Walk<K> w = walk_of(sizes, strides);
  std::array<std::int64_t, K> offsets{};
  if (w.sizes.empty()) return f(offsets);  // one element
  const auto inner = static_cast<std::int64_t>(w.sizes.size()) - 1;
  std::array<std::int64_t, K> step;
  for (std::size_t k = 0; k < K; ++k) step[k] = w.strides[k][inner];
  Dims at(w.sizes.size(), 0);
  for (;;) {
    std::array<std::int64_t, K> o = offsets;
    for (std::int64_t i = 0; i < w.sizes[inner]; ++i) {
      f(o);
      for (std::size_t k = 0; k < K; ++k) o[k] += step[k];
    }
    auto d = inner - 1;
    for (; d >= 0; --d) {
      if (++at[d] < w.sizes[d]) {
        for (std::size_t k = 0; k < K; ++k) offsets[k] += w.strides[k][d];
        break;
      }
      for (std::size_t k = 0; k < K; ++k) offsets[k] -= (w.sizes[d] - 1) * w.strides[k][d];
      at[d] = 0;
    }
    if (d < 0) return;
  }
}

// The offsets of one tensor: `f(offset)`.
template <class F>
inline void for_each_offset(const Dims& sizes, const Dims& strides, F f) {
  for_each_offsets<1>(sizes, {&strides}, [&](const std::array<std::int64_t, 1>& o) { f(o[0]); });
}

// The positions of every dim of `x`, outermost first (no dim for a scalar).
inline void dims_of(const at::Tensor& x, Dims& sizes, Dims& strides) {
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
}

}  // namespace tb::backend::libtorch::strided_walk
