// Elementwise ops: arithmetic with tensors and scalars, matmul, unary float functions and
// activations, casts.
#include "ops.hpp"

namespace tb::client {

using namespace detail;

namespace {

Tensor binary(std::string_view name, ir::NumericOp variant, Tensor a, Tensor b) {
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(name, {&a}, kNumeric, {&b}));
    TB_TRY(same_kind(name, a, b));
    TB_TRY_ASSIGN(auto shape, broadcast(name, a.shape(), b.shape()));
    return emit(p, std::move(shape), p.dtype, [&](const ir::TensorIr& out) {
      return make(numeric_category(p.dtype), variant, p.dtype,
                  ir::BinaryOpIr{take(a), take(b), out});
    });
  });
}

Tensor scalar_op(std::string_view name, ir::NumericOp variant, Tensor a, double v) {
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(name, {&a}, kNumeric));
    return emit(p, a.shape(), p.dtype, [&](const ir::TensorIr& out) {
      return make(numeric_category(p.dtype), variant, p.dtype,
                  ir::ScalarOpIr{take(a), scalar_for(p.dtype, v), out});
    });
  });
}

// The category and accepted kinds of a unary op follow from its inner enum.
ir::OpCategory unary_category(ir::FloatOp, const ir::DType&) {
  return ir::OpCategory::Float;
}
ir::OpCategory unary_category(ir::ActivationOp, const ir::DType&) {
  return ir::OpCategory::Activation;
}
ir::OpCategory unary_category(ir::NumericOp, const ir::DType& d) {
  return numeric_category(d);
}

// One output of the input's shape.
template <class Inner>
Tensor unary(std::string_view name, Inner variant, Tensor x) {
  constexpr Kinds kinds = std::is_same_v<Inner, ir::NumericOp> ? kNumeric : kFloatOnly;
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(name, {&x}, kinds));
    return emit(p, x.shape(), p.dtype, [&](const ir::TensorIr& out) {
      return make(unary_category(variant, p.dtype), variant, p.dtype, ir::UnaryOpIr{take(x), out});
    });
  });
}

}  // namespace

// ---- Arithmetic. ---------------------------------------------------------------------------

// One row per operator: with a tensor (Add) and with a scalar (AddScalar); the name is the op's
// in error messages.
#define TB_ARITHMETIC(op, name, Variant)                                                \
  Tensor operator op(Tensor a, Tensor b) {                                              \
    return binary(#name, ir::NumericOp::Variant, std::move(a), std::move(b));           \
  }                                                                                     \
  Tensor operator op(Tensor a, double b) {                                              \
    return scalar_op(#name "_scalar", ir::NumericOp::Variant##Scalar, std::move(a), b); \
  }
TB_ARITHMETIC(+, add, Add)
TB_ARITHMETIC(-, sub, Sub)
TB_ARITHMETIC(*, mul, Mul)
TB_ARITHMETIC(/, div, Div)
#undef TB_ARITHMETIC

Tensor operator+(double a, Tensor b) {
  return std::move(b) + a;
}
Tensor operator*(double a, Tensor b) {
  return std::move(b) * a;
}
Tensor operator-(double a, Tensor b) {
  return -std::move(b) + a;
}
Tensor operator-(Tensor a) {
  return unary("neg", ir::NumericOp::Neg, std::move(a));
}

Tensor matmul(Tensor a, Tensor b) {
  constexpr std::string_view kName = "matmul";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&a}, kNumeric, {&b}));
    TB_TRY(same_kind(kName, a, b));
    const auto& sa = a.shape();
    const auto& sb = b.shape();
    if (sa.size() < 2 || sa.size() != sb.size()) {
      return invalid(kName, fmt::format("needs two tensors of one rank >= 2, got {} and {}",
                                        shape_text(sa), shape_text(sb)));
    }
    const std::size_t r = sa.size();
    if (sa[r - 1] != sb[r - 2]) {
      return invalid(kName,
                     fmt::format("inner dims differ: {} x {}", shape_text(sa), shape_text(sb)));
    }
    TB_TRY_ASSIGN(Shape shape, broadcast(kName, Shape(sa.begin(), sa.end() - 2),
                                         Shape(sb.begin(), sb.end() - 2)));
    shape.push_back(sa[r - 2]);
    shape.push_back(sb[r - 1]);
    return emit(p, std::move(shape), p.dtype, [&](const ir::TensorIr& out) {
      ir::MatmulOpIr payload{take(a), take(b), out};
      return kind_of(p.dtype) == Kind::kFloat
                 ? make(ir::OpCategory::Float, ir::FloatOp::Matmul, p.dtype, std::move(payload))
                 : make(ir::OpCategory::Int, ir::IntOp::Matmul, p.dtype, std::move(payload));
    });
  });
}

// ---- Unary functions and activations. ------------------------------------------------------

// One row per op: the function (its name also the op's in error messages) and its Burn variant.
#define TB_UNARY(name, variant)                 \
  Tensor name(Tensor x) {                       \
    return unary(#name, variant, std::move(x)); \
  }
TB_UNARY(exp, ir::FloatOp::Exp)
TB_UNARY(log, ir::FloatOp::Log)
TB_UNARY(sqrt, ir::FloatOp::Sqrt)
TB_UNARY(tanh, ir::FloatOp::Tanh)
TB_UNARY(abs, ir::NumericOp::Abs)
TB_UNARY(relu, ir::ActivationOp::Relu)
TB_UNARY(gelu, ir::ActivationOp::Gelu)
TB_UNARY(sigmoid, ir::ActivationOp::Sigmoid)
#undef TB_UNARY

Tensor cast(Tensor x, ir::DType dtype) {
  constexpr std::string_view kName = "cast";
  return record([&]() -> Result<Tensor> {
    TB_TRY_ASSIGN(auto p, prepare(kName, {&x}));
    if (x.dtype().is_quantized() || dtype.is_quantized()) {
      return invalid(kName, "use quantize()/dequantize() for quantized dtypes");
    }
    const Kind from = kind_of(x.dtype());
    const Kind to = kind_of(dtype);
    if (to == Kind::kBool) return invalid(kName, "to bool: compare with a value instead");
    if (x.dtype() == dtype) return x;
    const ir::DType in_dtype = x.dtype();
    return emit(p, x.shape(), dtype, [&](const ir::TensorIr& out) {
      ir::CastOpIr payload{take(x), out};
      if (from == to) return make(base_category(from), ir::BaseOp::Cast, dtype, payload);
      if (from == Kind::kFloat) {
        return make(ir::OpCategory::Float, ir::FloatOp::IntoInt, in_dtype, payload);
      }
      if (from == Kind::kInt) {
        return make(ir::OpCategory::Int, ir::IntOp::IntoFloat, dtype, payload);
      }
      if (to == Kind::kFloat) {
        return make(ir::OpCategory::Bool, ir::BoolOp::IntoFloat, dtype, payload);
      }
      return make(ir::OpCategory::Bool, ir::BoolOp::IntoInt, dtype, payload);
    });
  });
}

}  // namespace tb::client
