// Reductions: over every element (shape [1]) or along one dim (kept with size 1), and the
// argmax/argmin indices.
#include "ops.hpp"

namespace tb::client {

using namespace detail;

namespace detail {

Tensor reduce_all(std::string_view name, ir::NumericOp variant, Tensor x) {
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(name, {&x}, kNumeric));
    return emit(p, Shape{1}, p.dtype, [&](const ir::TensorIr& out) {
      return make(numeric_category(p.dtype), variant, p.dtype, ir::ReduceOpIr{take(x), out});
    });
  });
}

}  // namespace detail

namespace {

// `indices`: the output holds positions, in the device's int dtype.
Tensor reduce_dim(std::string_view name, ir::NumericOp variant, Tensor x, std::int64_t dim,
                  bool indices) {
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(name, {&x}, kNumeric));
    TB_TRY_ASSIGN(const std::uint64_t axis, check_dim(name, x, dim));
    const ir::DType out_dtype = indices ? Access::device(p.session).int_dtype() : p.dtype;
    Shape shape = x.shape();
    shape[axis] = 1;
    return emit(p, std::move(shape), out_dtype, [&](const ir::TensorIr& out) {
      // The op's dtype tag is the input's for index outputs, as Burn's router writes it.
      return make(numeric_category(p.dtype), variant, p.dtype,
                  ir::ReduceDimOpIr{take(x), out, axis, 1});
    });
  });
}

}  // namespace

// One row per op: the function (its name also the op's in error messages) and its Burn variant.
#define TB_REDUCE(name, Variant)                                    \
  Tensor name(Tensor x) {                                           \
    return reduce_all(#name, ir::NumericOp::Variant, std::move(x)); \
  }
#define TB_REDUCE_DIM(name, Variant, indices)                                     \
  Tensor name(Tensor x, std::int64_t dim) {                                       \
    return reduce_dim(#name, ir::NumericOp::Variant, std::move(x), dim, indices); \
  }
TB_REDUCE(sum, Sum)
TB_REDUCE(mean, Mean)
TB_REDUCE(max, Max)
TB_REDUCE(min, Min)
TB_REDUCE_DIM(sum_dim, SumDim, false)
TB_REDUCE_DIM(mean_dim, MeanDim, false)
TB_REDUCE_DIM(max_dim, MaxDim, false)
TB_REDUCE_DIM(min_dim, MinDim, false)
TB_REDUCE_DIM(argmax, ArgMax, true)
TB_REDUCE_DIM(argmin, ArgMin, true)
#undef TB_REDUCE
#undef TB_REDUCE_DIM

}  // namespace tb::client
