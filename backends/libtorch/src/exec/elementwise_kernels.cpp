// The kernels of fused element-wise runs (elementwise_run.hpp): each op over one block of
// elements. Built at -O3 (backends/libtorch/CMakeLists.txt) so that GCC vectorises these loops.
// Plain IEEE arithmetic, no fast-math: the results are bit for bit those of the lowerings.
#include <cmath>

#include "exec/elementwise_run.hpp"
#include "runtime/avx2_clones.hpp"

namespace tb::backend::libtorch {
namespace {

using fused::Kernel;

// Each loop below has an AVX2 clone (runtime/avx2_clones.hpp).

// The second operand of a binary op: a tensor's elements, or one scalar for all.
struct Scalar {
  float v;
  float operator[](std::int64_t) const { return v; }
};

template <class B>
TB_AVX2_CLONES void arith(Kernel fn, const float* a, B b, std::int64_t len, float* y) {
  switch (fn) {
    case Kernel::kAdd:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] + b[k];
      break;
    case Kernel::kSub:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] - b[k];
      break;
    case Kernel::kMul:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] * b[k];
      break;
    default:  // kDiv
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] / b[k];
      break;
  }
}

template <class B>
TB_AVX2_CLONES void compare(Kernel fn, const float* a, B b, std::int64_t len, bool* y) {
  switch (fn) {
    case Kernel::kLower:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] < b[k];
      break;
    case Kernel::kLowerEqual:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] <= b[k];
      break;
    case Kernel::kGreater:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] > b[k];
      break;
    case Kernel::kGreaterEqual:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] >= b[k];
      break;
    case Kernel::kEqual:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] == b[k];
      break;
    case Kernel::kIsNan:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] != a[k];
      break;
    case Kernel::kIsInf:
      for (std::int64_t k = 0; k < len; ++k) y[k] = std::fabs(a[k]) == HUGE_VALF;
      break;
    default:  // kNotEqual
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] != b[k];
      break;
  }
}

TB_AVX2_CLONES void logical(Kernel fn, const bool* a, const bool* b, std::int64_t len, bool* y) {
  switch (fn) {
    case Kernel::kNot:
      for (std::int64_t k = 0; k < len; ++k) y[k] = !a[k];
      break;
    case Kernel::kAnd:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] && b[k];
      break;
    case Kernel::kOr:
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] || b[k];
      break;
    default:  // kXor
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] != b[k];
      break;
  }
}

// The f32 kernels with one input, a mask or none (a fill): false for the binary ones (arith()).
TB_AVX2_CLONES bool unary(Kernel fn, const float* a, const bool* m, const float* v, float s,
                          std::int64_t len, float* y) {
  switch (fn) {
    case Kernel::kRelu:
      // ATen's threshold(x, 0, 0), the relu lowering: -0 becomes +0, NaN passes.
      for (std::int64_t k = 0; k < len; ++k) y[k] = a[k] <= 0.0f ? 0.0f : a[k];
      return true;
    case Kernel::kNeg:
      for (std::int64_t k = 0; k < len; ++k) y[k] = -a[k];
      return true;
    case Kernel::kAbs:
      for (std::int64_t k = 0; k < len; ++k) y[k] = std::fabs(a[k]);
      return true;
    case Kernel::kRecip:
      for (std::int64_t k = 0; k < len; ++k) y[k] = 1.0f / a[k];
      return true;
    case Kernel::kSign:
      // Burn's sign (the Sign lowering): NaN and both zeros give +0.0.
      for (std::int64_t k = 0; k < len; ++k)
        y[k] = a[k] > 0.0f ? 1.0f : (a[k] < 0.0f ? -1.0f : 0.0f);
      return true;
    case Kernel::kFloor:
      for (std::int64_t k = 0; k < len; ++k) y[k] = std::floor(a[k]);
      return true;
    case Kernel::kCeil:
      for (std::int64_t k = 0; k < len; ++k) y[k] = std::ceil(a[k]);
      return true;
    case Kernel::kTrunc:
      for (std::int64_t k = 0; k < len; ++k) y[k] = std::trunc(a[k]);
      return true;
    case Kernel::kRound:
      // The default rounding mode, to nearest even: ATen's round (nearbyint).
      for (std::int64_t k = 0; k < len; ++k) y[k] = std::nearbyint(a[k]);
      return true;
    case Kernel::kZeros:
    case Kernel::kOnes:
    case Kernel::kFull:
      for (std::int64_t k = 0; k < len; ++k) y[k] = s;
      return true;
    case Kernel::kMaskFill:
      for (std::int64_t k = 0; k < len; ++k) y[k] = m[k] ? s : a[k];
      return true;
    case Kernel::kMaskWhere:
      for (std::int64_t k = 0; k < len; ++k) y[k] = m[k] ? v[k] : a[k];
      return true;
    default:
      return false;
  }
}

}  // namespace

void ElementwiseRun::evaluate(const Op& o, const Bound& p, std::int64_t start, std::int64_t len) {
  const bool has_b = o.b.tensor != nullptr || o.b.value >= 0;
  if (o.bool_in) {
    logical(o.kernel, p.a.at<const bool>(start), has_b ? p.b.at<const bool>(start) : nullptr, len,
            p.out.at<bool>(start));
    return;
  }
  const float* a = p.a.at<const float>(start);
  // A broadcast one-element tensor is read now, when the op would have read it.
  const float b_one = o.b_one ? *p.b.at<const float>(0) : 0.0f;
  if (o.bool_out) {
    // IEEE comparisons, as ATen's: false for NaN, except not-equal.
    bool* y = p.out.at<bool>(start);
    if (o.b_one) {
      compare(o.kernel, a, Scalar{b_one}, len, y);
    } else if (has_b) {
      compare(o.kernel, a, p.b.at<const float>(start), len, y);
    } else {
      compare(o.kernel, a, Scalar{o.scalar}, len, y);
    }
    return;
  }
  float* y = p.out.at<float>(start);
  if (const auto fn = fused::vml_of(o.kernel)) {
    vml::apply(*fn, a, y, len);
    return;
  }
  const bool* m = p.mask.base ? p.mask.at<const bool>(start) : nullptr;
  const float* v = has_b && !o.b_one ? p.b.at<const float>(start) : nullptr;
  if (unary(o.kernel, a, m, v, o.scalar, len, y)) return;
  if (o.b_one) {
    arith(o.kernel, a, Scalar{b_one}, len, y);
  } else if (has_b) {
    arith(o.kernel, a, p.b.at<const float>(start), len, y);
  } else {
    arith(o.kernel, a, Scalar{o.scalar}, len, y);
  }
}

}  // namespace tb::backend::libtorch
