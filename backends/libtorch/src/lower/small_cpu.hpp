// Loops over small CPU tensors that stand in for an ATen call where ATen's fixed cost (dispatch,
// TensorIterator set-up, a conversion of the result) is larger than the work. Burn's
// decompositions (LU, QR, CTC) run thousands of ops on tensors of a few hundred elements: an
// argmax over a column took 6.4 us through ATen and its int32 conversion.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>

namespace tb::backend::libtorch::small_cpu {

// Tensors of at most this many elements take these loops.
inline constexpr std::int64_t kMaxElements = 1 << 14;

// at::empty of a contiguous CPU tensor without the dispatcher: the same tensor (ATen's CPU kernel
// calls this), in about half the instructions. Burn's decompositions allocate one per op: in CTC's
// replay the element-wise runs' results alone were 54,000 allocations of 1,700 instructions.
inline at::Tensor empty(at::IntArrayRef sizes, at::ScalarType type) {
  return at::detail::empty_cpu(sizes, type);
}

// The least and greatest value of a non-empty int32 or int64 CPU tensor of any size, read in
// place through its strides: an expanded tensor (stride 0) is read once per distinct element.
std::pair<std::int64_t, std::int64_t> value_range(const at::Tensor& t);

// The index of the first maximum (`max`) or minimum along `dim` of a small f32 or f64 CPU tensor,
// a NaN counting as the extremum (its first one wins), with `dim` kept, as a tensor of `index`
// (kInt or kLong). Nullopt where the loop does not apply: ATen then answers the same.
std::optional<at::Tensor> arg_extremum(const at::Tensor& x, std::int64_t dim, bool max,
                                       at::ScalarType index);

// at::isinf / at::isnan of a small f32 or f64 CPU tensor, as one loop (ATen computes isinf as
// `abs() == inf`, two kernels and two allocations: a quarter of the host's time in Burn's QR,
// which tests every column for both). Nullopt where the loop does not apply.
enum class FloatTest { kInf, kNan };
std::optional<at::Tensor> float_test(const at::Tensor& x, FloatTest test);

// |x| of a small f32 or f64 CPU tensor of any strides, as one loop into a contiguous result
// (std::fabs, the sign bit cleared as ATen's kernel does): Burn's LU takes the abs of a column view
// at every pivot, 2.7-3.9 us through ATen. Nullopt where the loop does not apply.
std::optional<at::Tensor> float_abs(const at::Tensor& x);
// x / s for a small f32 or f64 CPU tensor x of any strides and a one-element s of its dtype
// (Burn's LU divides a column view by its pivot, 3.7 us through ATen's broadcast): the same IEEE
// division, a contiguous result of x's sizes. Nullopt where the loop does not apply.
std::optional<at::Tensor> divide_by_one(const at::Tensor& x, const at::Tensor& s);
// x + v, x - v or x * v of a small int32 or int64 CPU tensor, wrapping in the tensor's width, `v`
// already wrapped to it: what x.add(v) answers, without ATen's wrapped scalar tensor and type
// promotion (4.4 us for the pivot offset Burn's LU adds to an argmax at every step). Nullopt
// where the loop does not apply.
enum class Ring { kAdd, kSub, kMul };
std::optional<at::Tensor> int_ring_scalar(const at::Tensor& x, Ring op, std::int64_t v);
// at::gather(x, dim, index) for a small index of int32 or int64 values already checked against
// x.size(dim), x on the CPU in any dtype and strides, as one loop into a contiguous result:
// Burn's LU gathers the pivot row through an expanded index at every step (3.8 us through
// ATen). Nullopt where the loop does not apply, ATen's shape errors included.
std::optional<at::Tensor> gather(const at::Tensor& x, std::int64_t dim, const at::Tensor& index);
// self.scatter_add_(dim, index, src) for a small index, self and src f32 or f64 CPU tensors of
// one dtype, as one loop: each element of self sums what lands on it in the order ATen's kernel
// takes (along `dim`, in index order), so the result is ATen's bit for bit. Burn's LU adds the
// swapped rows back in place at every pivot (4-5 us through ATen). False, with self untouched,
// where the loop does not apply (ATen's shape and overlap errors included).
bool scatter_add_(at::Tensor& self, std::int64_t dim, const at::Tensor& index,
                  const at::Tensor& src);
// as_strided(sizes, strides, offset).copy_(value) on a contiguous CPU `dst`, for a small `value`
// of dst's dtype and exactly those sizes, in any strides: one loop of element-sized words, without
// the view and the copy's TensorIterator (2.8-3.5 us per slice assignment in Burn's LU, which
// assigns a row or a column of its matrix at every step). `offset` is in dst's storage, the
// region's strides are non-negative. False, dst untouched, where the loop does not apply (a
// value sharing dst's memory included).
bool copy_into(at::Tensor& dst, at::IntArrayRef sizes, at::IntArrayRef strides, std::int64_t offset,
               const at::Tensor& value);
// at::cat(inputs, dim) for small CPU tensors of one dtype and rank, none empty, of any strides:
// a contiguous result filled by copy_into, without ATen's cat kernel set-up (10 us per cat in
// Burn's CTC loss, which shifts its alpha row by a concatenation at every time step). Nullopt
// where the loop does not apply (ATen then answers, its promotions and errors included).
std::optional<at::Tensor> cat(at::TensorList inputs, std::int64_t dim);
// at::matmul(lhs, rhs) where the inner dimension is 1 (lhs [..., m, 1], rhs [..., 1, n], batch
// dims all 1), f32 or f64 CPU tensors of any strides and size: the outer product as one loop
// per row, bit for bit the GEMM's. Burn's LU updates its trailing block with one at every pivot,
// 6 us each through ATen's matmul for an average of 28,000 elements. Nullopt where the loop does
// not apply (ATen then answers, its errors included), and above 2^20 elements (ATen's threads).
std::optional<at::Tensor> outer_product(const at::Tensor& lhs, const at::Tensor& rhs);
// The output outer_product would make for these operands (an empty tensor of its sizes and
// dtype, nothing computed), nullopt where it does not apply: what the executor stores for an outer
// product it holds back (exec/deferred_subtract.hpp).
std::optional<at::Tensor> outer_product_output(const at::Tensor& lhs, const at::Tensor& rhs);
// outer_product(lhs, rhs) written into `out` (from outer_product_output).
void outer_product_into(at::Tensor& out, const at::Tensor& lhs, const at::Tensor& rhs);
// out = minuend - outer_product(lhs, rhs), element by element as at::sub would take the product
// (each product rounded, then the difference rounded: the same values; where both sides are NaN
// the minuend's NaN, as ATen's scalar loop gives it). `out` and `minuend` are [m, n] (leading dims
// of 1 allowed) with unit column stride; `out` may be `minuend` itself, but lhs and rhs must not
// share its memory (the executor passes copies). The LU step's update without its [m, n] product.
void subtract_outer(at::Tensor& out, const at::Tensor& minuend, const at::Tensor& lhs,
                    const at::Tensor& rhs);
// x > v (and ≥, <, ≤, =, ≠) of a contiguous int32 or int64 CPU tensor against a value of its range,
// as one loop into a bool tensor: ATen compares an int tensor with a 0-dim one in a scalar loop of
// 32 instructions an element (Burn's LU builds its triangular masks from [n, n] index comparisons,
// 0.15-0.2 ms each at n = 500). Any size where ATen runs on one thread. Nullopt where it does not
// apply.
enum class Order { kGt, kGe, kLt, kLe, kEq, kNe };
std::optional<at::Tensor> int_compare_scalar(const at::Tensor& x, Order op, std::int64_t v);
// x.to(to) for a small contiguous CPU tensor, between int32, int64, f32 and f64 (an int to an int
// wraps, a conversion to a float rounds to nearest, as ATen's copy kernel does), as one loop:
// ATen's took 7,500 instructions (dispatch, TensorIterator, the copy kernel) to widen a scatter's
// int32 index, and every int result ATen makes in int64 is narrowed to Burn's int32 the same way.
// Nullopt where it does not apply, a float to an int included (out of range, C++ leaves it open).
std::optional<at::Tensor> cast(const at::Tensor& x, at::ScalarType to);
// x.to(type): x itself where it has the type (without ATen's dispatch, which every op's output
// passes through here: 18M instructions of LU 500's replay), by cast where it applies, else by
// ATen.
inline at::Tensor to(const at::Tensor& x, at::ScalarType type) {
  if (x.scalar_type() == type) return x;
  std::optional<at::Tensor> c = cast(x, type);
  return c ? *std::move(c) : x.to(type);
}
// at::zeros, with the memory of a small CPU tensor cleared by memset rather than by a fill
// kernel: Burn's autodiff makes a zero tensor for every slice it differentiates (CTC's backward
// makes thousands of [2, 129] ones), and the fill's TensorIterator cost more than the memset.
at::Tensor zeros(at::IntArrayRef sizes, const at::TensorOptions& options);

}  // namespace tb::backend::libtorch::small_cpu
