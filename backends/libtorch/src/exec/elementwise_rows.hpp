// Which IR ops a fused element-wise run (elementwise_run.hpp) takes, and with which kernel: read
// off the op tables' rows (ir/*_ops.def), never listed here. A family row (arith, compare, logical,
// ...) joins through its family and the parameter in its Fn column; an `own` or `split` row through
// the kernel its Fn column names (`_`: it never joins). How the op gives its operands follows from
// its payload type, and what the kernel reads and writes from the kernel. Every family and every
// name a row puts in Fn must be mapped below, so a new one does not compile until it is decided.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "runtime/vml.hpp"
#include "torchbridge/ir/operation.hpp"

namespace tb::backend::libtorch::fused {

enum class Kernel : std::uint8_t {
  kNone,
  // f32 in, f32 out (b: a tensor, or the scalar where there is none)
  kAdd,
  kSub,
  kMul,
  kDiv,
  kNeg,
  kAbs,
  kRelu,
  kRecip,  // 1 / a, as ATen's reciprocal
  kSign,   // Burn's sign: +0.0 for NaN and both zeros
  kExp,    // MKL's, as ATen's (runtime/vml.hpp): only where vml::usable
  kLog,
  kSqrt,
  kLog1p,  // SLEEF's, as ATen's (runtime/vml.hpp): only where vml::usable
  kFloor,
  kCeil,
  kTrunc,
  kRound,      // half to even, as ATen's round
  kZeros,      // no operand: the scalar 0
  kOnes,       // no operand: the scalar 1
  kFull,       // no operand: the payload's value
  kMaskFill,   // mask ? scalar : a
  kMaskWhere,  // mask ? b : a
  // f32 in, bool out (b: a tensor, or the scalar)
  kLower,
  kLowerEqual,
  kGreater,
  kGreaterEqual,
  kEqual,
  kNotEqual,
  kIsNan,  // a only
  kIsInf,
  // bool in, bool out
  kNot,
  kAnd,
  kOr,
  kXor,
};

// What a kernel reads (a, b) and writes. Every kernel is listed, no default: a new one is a
// -Wswitch warning until its types are decided.
struct Types {
  bool bool_in = false;
  bool bool_out = false;
};
constexpr Types types_of(Kernel k) {
  switch (k) {
    case Kernel::kNone:
    case Kernel::kAdd:
    case Kernel::kSub:
    case Kernel::kMul:
    case Kernel::kDiv:
    case Kernel::kNeg:
    case Kernel::kAbs:
    case Kernel::kRelu:
    case Kernel::kRecip:
    case Kernel::kSign:
    case Kernel::kExp:
    case Kernel::kLog:
    case Kernel::kSqrt:
    case Kernel::kLog1p:
    case Kernel::kFloor:
    case Kernel::kCeil:
    case Kernel::kTrunc:
    case Kernel::kRound:
    case Kernel::kZeros:
    case Kernel::kOnes:
    case Kernel::kFull:
    case Kernel::kMaskFill:
    case Kernel::kMaskWhere:
      return {false, false};
    case Kernel::kLower:
    case Kernel::kLowerEqual:
    case Kernel::kGreater:
    case Kernel::kGreaterEqual:
    case Kernel::kEqual:
    case Kernel::kNotEqual:
    case Kernel::kIsNan:
    case Kernel::kIsInf:
      return {false, true};
    case Kernel::kNot:
    case Kernel::kAnd:
    case Kernel::kOr:
    case Kernel::kXor:
      return {true, true};
  }
  return {};
}

// The MKL or SLEEF function a kernel calls (runtime/vml.hpp), if any: such a kernel joins a run
// only where vml::usable says so.
constexpr std::optional<vml::Fn> vml_of(Kernel k) {
  switch (k) {
    case Kernel::kExp:
      return vml::Fn::kExp;
    case Kernel::kLog:
      return vml::Fn::kLn;
    case Kernel::kSqrt:
      return vml::Fn::kSqrt;
    case Kernel::kLog1p:
      return vml::Fn::kLog1p;
    default:
      return std::nullopt;
  }
}

// Where an op's operands are in its payload.
// kCreation and kFull read no tensor: the result is a fill.
enum class Form : std::uint8_t {
  kNone,
  kUnary,
  kBinary,
  kScalar,
  kMaskFill,
  kMaskWhere,
  kCreation,
  kFull
};
template <class P>
constexpr Form form_of() {
  if constexpr (std::is_same_v<P, ir::UnaryOpIr>) return Form::kUnary;
  if constexpr (std::is_same_v<P, ir::BinaryOpIr>) return Form::kBinary;
  if constexpr (std::is_same_v<P, ir::ScalarOpIr>) return Form::kScalar;
  if constexpr (std::is_same_v<P, ir::MaskFillOpIr>) return Form::kMaskFill;
  if constexpr (std::is_same_v<P, ir::MaskWhereOpIr>) return Form::kMaskWhere;
  if constexpr (std::is_same_v<P, ir::CreationOpIr>) return Form::kCreation;
  if constexpr (std::is_same_v<P, ir::FullOpIr>) return Form::kFull;
  return Form::kNone;
}

struct Fusion {
  Kernel kernel = Kernel::kNone;
  Form form = Form::kNone;
};

namespace rows {

// The names rows put in Fn, as kernels. Families' parameters first (arith: Arith::k*, compare and
// compare_elem: Cmp::k*, logical: the ATen function), then the names `own`/`split` rows give.
#define TB_FUSED_KERNEL__ kNone
#define TB_FUSED_KERNEL_kAdd kAdd
#define TB_FUSED_KERNEL_kSub kSub
#define TB_FUSED_KERNEL_kMul kMul
#define TB_FUSED_KERNEL_kDiv kDiv
#define TB_FUSED_KERNEL_kRem \
  kNone  // Burn's remainder takes the divisor's sign: left to its lowering
#define TB_FUSED_KERNEL_kGt kGreater
#define TB_FUSED_KERNEL_kGe kGreaterEqual
#define TB_FUSED_KERNEL_kLt kLower
#define TB_FUSED_KERNEL_kLe kLowerEqual
#define TB_FUSED_KERNEL_logical_and kAnd
#define TB_FUSED_KERNEL_logical_or kOr
#define TB_FUSED_KERNEL_logical_xor kXor
#define TB_FUSED_KERNEL_logical_not kNot
#define TB_FUSED_KERNEL_eq kEqual
#define TB_FUSED_KERNEL_ne kNotEqual
#define TB_FUSED_KERNEL_abs kAbs
#define TB_FUSED_KERNEL_neg kNeg
#define TB_FUSED_KERNEL_relu kRelu
#define TB_FUSED_KERNEL_sign kSign
#define TB_FUSED_KERNEL_mask_fill kMaskFill
#define TB_FUSED_KERNEL_mask_where kMaskWhere
#define TB_FUSED_KERNEL_kNan kIsNan
#define TB_FUSED_KERNEL_kInf kIsInf
#define TB_FUSED_KERNEL_zeros kZeros
#define TB_FUSED_KERNEL_ones kOnes
#define TB_FUSED_KERNEL_full kFull
// float_unary's ATen functions. Those whose every result is exact (one IEEE division, rounding to
// an integer) join with the C library's functions (reciprocal, floor, ceil, trunc and round agree
// with ATen on all 2^32 f32 inputs). ATen's transcendental functions and its square root are MKL's
// or SLEEF's vectorised loops, not bit for bit the C library's (sqrt: 365,368,316 inputs differ
// from std::sqrt): exp, log and sqrt are MKL's and log1p SLEEF's, and they join calling the same
// function where the process has it and its results do not depend on an element's place
// (runtime/vml.hpp); the other SLEEF functions stay out.
#define TB_FUSED_KERNEL_reciprocal kRecip
#define TB_FUSED_KERNEL_floor kFloor
#define TB_FUSED_KERNEL_ceil kCeil
#define TB_FUSED_KERNEL_trunc kTrunc
#define TB_FUSED_KERNEL_round kRound
#define TB_FUSED_KERNEL_exp kExp
#define TB_FUSED_KERNEL_log kLog
#define TB_FUSED_KERNEL_sqrt kSqrt
#define TB_FUSED_KERNEL_log1p kLog1p
#define TB_FUSED_KERNEL_erf kNone
#define TB_FUSED_KERNEL_cos kNone
#define TB_FUSED_KERNEL_cosh kNone
#define TB_FUSED_KERNEL_sin kNone
#define TB_FUSED_KERNEL_sinh kNone
#define TB_FUSED_KERNEL_tan kNone
#define TB_FUSED_KERNEL_tanh kNone
#define TB_FUSED_KERNEL_acos kNone
#define TB_FUSED_KERNEL_acosh kNone
#define TB_FUSED_KERNEL_asin kNone
#define TB_FUSED_KERNEL_asinh kNone
#define TB_FUSED_KERNEL_atan kNone
#define TB_FUSED_KERNEL_atanh kNone

struct Row {
  ir::OpKind kind;
  Fusion fusion;
};
#define TB_FUSED_ROW(Cat, V, P, Lowering, Fn, Wire) TB_FUSED_ROW_##Lowering(Cat, V, P, Fn)
#define TB_FUSED_JOIN(Cat, V, P, Fn) \
  Row{::tb::ir::OpKind::TB_LEAF_ID(Cat, V), {Kernel::TB_FUSED_KERNEL_##Fn, form_of<ir::P>()}},
#define TB_FUSED_ROW_own TB_FUSED_JOIN
#define TB_FUSED_ROW_split TB_FUSED_JOIN
#define TB_FUSED_ROW_arith TB_FUSED_JOIN
#define TB_FUSED_ROW_arith_scalar TB_FUSED_JOIN
#define TB_FUSED_ROW_compare TB_FUSED_JOIN
#define TB_FUSED_ROW_compare_elem TB_FUSED_JOIN
#define TB_FUSED_ROW_logical TB_FUSED_JOIN
#define TB_FUSED_ROW_float_test TB_FUSED_JOIN
#define TB_FUSED_ROW_float_unary TB_FUSED_JOIN
// Families that stay out. float_binary: pow, atan2, hypot and fmod are not one IEEE operation.
// Integer and along-a-dimension ops: the run is f32 and bool, element by element.
#define TB_FUSED_ROW_float_binary(...)
#define TB_FUSED_ROW_along_dim(...)
#define TB_FUSED_ROW_bitwise(...)
#define TB_FUSED_ROW_bitwise_scalar(...)
// Families that are not element-wise (convolutions, pools, reductions) or have no kernel in the
// run (shifts, clamp bounds).
#define TB_FUSED_ROW_conv(...)
#define TB_FUSED_ROW_conv_backward(...)
#define TB_FUSED_ROW_conv_bias_backward(...)
#define TB_FUSED_ROW_conv_transpose(...)
#define TB_FUSED_ROW_conv_transpose_weight_backward(...)
#define TB_FUSED_ROW_avg_pool(...)
#define TB_FUSED_ROW_avg_pool_backward(...)
#define TB_FUSED_ROW_max_pool(...)
#define TB_FUSED_ROW_max_pool_backward(...)
#define TB_FUSED_ROW_extremum(...)
#define TB_FUSED_ROW_arg_extremum(...)
#define TB_FUSED_ROW_clamp_bound(...)
#define TB_FUSED_ROW_shift(...)
#define TB_FUSED_ROW_shift_scalar(...)
inline constexpr Row kRows[] = {TB_OP_LEAVES(TB_FUSED_ROW)};

// The run holds f32 and bool tensors: a row shared with integer categories (Add of NumericInt,
// Equal of BaseInt and BaseBool, Zeros of BaseInt) joins for its float or bool category only.
constexpr bool fuses_category(ir::OpCategory c) {
  return c == ir::OpCategory::NumericFloat || c == ir::OpCategory::BaseFloat ||
         c == ir::OpCategory::Float || c == ir::OpCategory::Bool || c == ir::OpCategory::Activation;
}

constexpr std::array<Fusion, ir::kOpKindCount> table() {
  std::array<Fusion, ir::kOpKindCount> t{};
  for (const Row& r : kRows) {
    const auto i = static_cast<std::size_t>(r.kind);
    if (r.fusion.kernel != Kernel::kNone && fuses_category(ir::kLeafCategories[i])) {
      t[i] = r.fusion;
    }
  }
  return t;
}

constexpr bool every_kernel_has_a_form() {
  for (const Row& r : kRows) {
    if (r.fusion.kernel != Kernel::kNone && r.fusion.form == Form::kNone) return false;
  }
  return true;
}
static_assert(every_kernel_has_a_form(),
              "a row names a fused kernel but its payload is not one a run reads operands from");

}  // namespace rows

inline constexpr std::array<Fusion, ir::kOpKindCount> kFusion = rows::table();

// How `kind` joins a run; kernel kNone: it does not.
constexpr Fusion fusion_of(ir::OpKind kind) {
  return kFusion[static_cast<std::size_t>(kind)];
}

}  // namespace tb::backend::libtorch::fused
