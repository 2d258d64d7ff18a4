// What every client op does before and after its own rule: check its inputs (defined, error-free,
// one session, an accepted kind), pick the dtype it computes in, hand its inputs over and record
// one OperationIr with fresh outputs. Written once here; the ops_*.cpp files hold only each op's
// shape rule and payload.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "node.hpp"

namespace tb::client::detail {

enum class Kind : unsigned { kFloat, kInt, kBool };
// A set of Kinds, one bit each.
using Kinds = unsigned;
constexpr Kinds kind_bit(Kind k) {
  return 1u << static_cast<unsigned>(k);
}
inline constexpr Kinds kAnyKind = 0;
inline constexpr Kinds kFloatOnly = kind_bit(Kind::kFloat);
inline constexpr Kinds kNumeric = kind_bit(Kind::kFloat) | kind_bit(Kind::kInt);

// Quantized tensors count as float: Burn's float ops take them and compute on the values.
Kind kind_of(const ir::DType& d);
ir::OpCategory base_category(Kind k);
// NumericFloat or NumericInt, by the dtype the op computes in.
ir::OpCategory numeric_category(const ir::DType& d);
// The dtype an op computes in and writes: a quantized input computes in F32, as Burn's
// dequantizing fallback does.
ir::DType compute_dtype(const ir::DType& d);
// A scalar operand in the form the dtype's ops carry.
ir::ScalarIr scalar_for(const ir::DType& d, double v);

Error invalid(std::string_view op, std::string message);
std::string shape_text(const Shape& shape);

// The inputs an op checks; nullptr entries (an absent optional input) are skipped.
using Inputs = std::initializer_list<const Tensor*>;
inline const Tensor* optional_input(const std::optional<Tensor>& t) {
  return t ? &*t : nullptr;
}

// An op whose inputs passed the checks.
struct Prepared {
  std::shared_ptr<Session> session;
  // compute_dtype of the first input.
  ir::DType dtype;
};

// Every input of `inputs` and `others` defined, error-free and on one session; each of `inputs`
// of one of `kinds` (kAnyKind: any).
Result<Prepared> prepare(std::string_view op, Inputs inputs, Kinds kinds = kAnyKind,
                         Inputs others = {});
// The same session checks over a list of any length (cat).
Result<std::shared_ptr<Session>> common_session(std::string_view op,
                                                const std::vector<Tensor>& tensors);
// Both operands float, or both int.
Status same_kind(std::string_view op, const Tensor& a, const Tensor& b);
// Sizes all >= 0 and, given `count`, holding exactly that many values.
Status check_shape(std::string_view op, const Shape& shape, std::optional<std::size_t> count);
// 0 <= dim < rank.
Result<std::uint64_t> check_dim(std::string_view op, const Tensor& t, std::int64_t dim);
// NumPy broadcasting of two shapes of one rank.
Result<Shape> broadcast(std::string_view op, const Shape& a, const Shape& b);

// The TensorIr of an input, ReadWrite when this is the last reference (the host frees it).
ir::TensorIr take(Tensor& t);
std::optional<ir::TensorIr> take(std::optional<Tensor>& t);

struct Output {
  Tensor tensor;
  ir::TensorIr ir;
};
// A fresh (NotInit) tensor on `session`.
Output output(const std::shared_ptr<Session>& session, Shape shape, ir::DType dtype);
void send(const std::shared_ptr<Session>& session, ir::OperationIr op);

template <class Inner, class Payload>
ir::OperationIr make(ir::OpCategory category, Inner variant, ir::DType dtype, Payload payload) {
  ir::OperationIr op;
  op.kind = ir::leaf_of(category, variant);
  op.dtype = dtype;
  op.payload = std::move(payload);
  return op;
}

// Records the op `build(out)` makes for one fresh output of `shape` and `dtype`; returns it.
template <class Build>
Tensor emit(const Prepared& p, Shape shape, ir::DType dtype, Build&& build) {
  auto out = output(p.session, std::move(shape), dtype);
  send(p.session, std::forward<Build>(build)(out.ir));
  return std::move(out.tensor);
}

// Runs an op body written with TB_TRY / TB_TRY_ASSIGN; a failure becomes an error tensor, as every
// public op reports invalid arguments.
template <class Body>
Tensor record(Body&& body) {
  Result<Tensor> r = std::forward<Body>(body)();
  return r ? std::move(r).value() : Tensor::failed(std::move(r).error());
}

// Sum, Mean, Max, Min, MaxAbs over every element: shape [1] (quantize_dynamic uses MaxAbs).
Tensor reduce_all(std::string_view name, ir::NumericOp variant, Tensor x);

}  // namespace tb::client::detail
