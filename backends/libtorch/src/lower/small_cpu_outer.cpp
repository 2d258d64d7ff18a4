// The outer product as a matmul with an inner dimension of 1 (small_cpu.hpp). Compiled at -O3
// (CMakeLists.txt) so that the row loop is vectorised.
#include <vector>

#include "lower/small_cpu.hpp"
#include "runtime/avx2_clones.hpp"

namespace tb::backend::libtorch::small_cpu {

namespace {

constexpr std::int64_t kMaxOuterElements = std::int64_t{1} << 20;

// One matrix: out[i, j] = b[j] * a[i], one product each as in ATen's GEMM of inner dimension 1
// (zeros keep their sign; where both are NaN, b's payload wins there too). Not inlined: inside
// outer_product's exception regions GCC 12 leaves the rows scalar (measured: 12 us a call, against
// 6 through ATen's GEMM).
template <class T>
[[gnu::noinline]] void outer_matrix(const T* a, std::int64_t a_step, const T* b,
                                    std::int64_t b_step, T* out, std::int64_t rows,
                                    std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const T ai = a[i * a_step];
    T* row = out + i * cols;
    if (b_step == 1) {
      for (std::int64_t j = 0; j < cols; ++j) row[j] = b[j] * ai;
    } else {
      for (std::int64_t j = 0; j < cols; ++j) row[j] = b[j * b_step] * ai;
    }
  }
}

// One row of the held-back LU update: out[j] = m[j] - b[j] * a. Not inlined, for the reason above;
// an AVX2 clone (runtime/avx2_clones.hpp): in SSE2 it took 2.1 instructions an element (callgrind),
// the two passes it replaces 3.2.
template <class T>
TB_AVX2_CLONES [[gnu::noinline]] void subtract_outer_row(const T* m, const T* b, T a, T* out,
                                                         std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) {
    const T product = b[j] * a;
    out[j] = m[j] - product;
  }
}

template <class T>
void subtract_outer_typed(at::Tensor& out, const at::Tensor& minuend, const at::Tensor& lhs,
                          const at::Tensor& rhs) {
  const auto rank = out.dim();
  const std::int64_t rows = out.size(rank - 2), cols = out.size(rank - 1);
  const T* pa = lhs.const_data_ptr<T>();
  const T* pb = rhs.const_data_ptr<T>();
  const std::int64_t a_step = lhs.stride(rank - 2), b_step = rhs.stride(rank - 1);
  // The row loop reads b contiguous; the executor's copies are.
  std::vector<T> packed;
  if (b_step != 1) {
    packed.resize(static_cast<std::size_t>(cols));
    for (std::int64_t j = 0; j < cols; ++j) packed[j] = pb[j * b_step];
    pb = packed.data();
  }
  const T* m = minuend.const_data_ptr<T>();
  T* o = out.mutable_data_ptr<T>();
  const std::int64_t m_row = minuend.stride(rank - 2), o_row = out.stride(rank - 2);
  for (std::int64_t i = 0; i < rows; ++i) {
    subtract_outer_row(m + i * m_row, pb, pa[i * a_step], o + i * o_row, cols);
  }
}

}  // namespace

std::optional<at::Tensor> outer_product_output(const at::Tensor& lhs, const at::Tensor& rhs) {
  const auto rank = lhs.dim();
  if (rank < 2 || rhs.dim() != rank || !lhs.device().is_cpu() || !rhs.device().is_cpu() ||
      lhs.layout() != at::kStrided || rhs.layout() != at::kStrided ||
      lhs.scalar_type() != rhs.scalar_type() ||
      (lhs.scalar_type() != at::kFloat && lhs.scalar_type() != at::kDouble) ||
      lhs.size(rank - 1) != 1 || rhs.size(rank - 2) != 1 ||
      lhs.sizes().slice(0, rank - 2) != rhs.sizes().slice(0, rank - 2) ||
      c10::multiply_integers(lhs.sizes().slice(0, rank - 2)) != 1) {
    // A batch of several matrices is ATen's bmm, which sums each product into a zero (a -0
    // product becomes +0 there): other arithmetic than one matrix's GEMM, so ATen keeps it.
    return std::nullopt;
  }
  std::vector<std::int64_t> sizes = lhs.sizes().vec();
  sizes[rank - 1] = rhs.size(rank - 1);
  // One thread: above this, ATen's GEMM may split the work across its threads.
  if (c10::multiply_integers(sizes) > kMaxOuterElements) return std::nullopt;
  return empty(sizes, lhs.scalar_type());
}

void outer_product_into(at::Tensor& out, const at::Tensor& lhs, const at::Tensor& rhs) {
  if (out.numel() == 0) return;
  const auto rank = lhs.dim();
  const std::int64_t a_step = lhs.stride(rank - 2), b_step = rhs.stride(rank - 1);
  const std::int64_t rows = lhs.size(rank - 2), cols = rhs.size(rank - 1);
  if (lhs.scalar_type() == at::kFloat) {
    outer_matrix(lhs.const_data_ptr<float>(), a_step, rhs.const_data_ptr<float>(), b_step,
                 out.mutable_data_ptr<float>(), rows, cols);
  } else {
    outer_matrix(lhs.const_data_ptr<double>(), a_step, rhs.const_data_ptr<double>(), b_step,
                 out.mutable_data_ptr<double>(), rows, cols);
  }
}

std::optional<at::Tensor> outer_product(const at::Tensor& lhs, const at::Tensor& rhs) {
  auto out = outer_product_output(lhs, rhs);
  if (out) outer_product_into(*out, lhs, rhs);
  return out;
}

void subtract_outer(at::Tensor& out, const at::Tensor& minuend, const at::Tensor& lhs,
                    const at::Tensor& rhs) {
  if (out.numel() == 0) return;
  if (out.scalar_type() == at::kFloat) {
    subtract_outer_typed<float>(out, minuend, lhs, rhs);
  } else {
    subtract_outer_typed<double>(out, minuend, lhs, rhs);
  }
}

}  // namespace tb::backend::libtorch::small_cpu
