// MKL's and SLEEF's vector math functions, where ATen's CPU kernels call them.
//
// A PyTorch wheel's ATen computes f32 exp, log and sqrt with MKL's vmsExp, vmsLn and vmsSqrt
// (ATen/cpu/vml.h, IMPLEMENT_VML_MKL: high accuracy, denormals kept, errors ignored), not with
// the C library: sqrt alone differs from std::sqrt on 365,368,316 of the 2^32 inputs. An
// element-wise run (exec/elementwise_run.hpp) that evaluates them block by block must call the
// same functions with the same mode, and that gives ATen's bits only if MKL's result for an
// element does not depend on where it falls in the array (a head or tail handled by another code
// path would change it). So each function is used only where the process has it (LibTorch builds
// without MKL do not) and a probe at first use found it equal to ATen's own kernel over a set of
// inputs split at odd lengths and unaligned offsets.
//
// log1p is SLEEF's (Vectorized<float>::log1p, mapped over the array with the tail as one
// zero-filled vector, so each lane is computed alone): the vector width is ATen's CPU capability's
// (16 lanes on AVX-512, 8 on AVX2; ATen picks it at run time, and so does the probe, which tries
// the wider first). It differs from the C library's log1p on 252 of 100,012 normal inputs.
#pragma once

#include <cstdint>

namespace tb::backend::libtorch::vml {

enum class Fn : std::uint8_t { kExp, kLn, kSqrt, kLog1p };

// Whether `fn` may be evaluated piecewise with ATen's bits. Probed once per process.
bool usable(Fn fn);
// y[0, n) = fn(a[0, n)) as ATen's kernel computes it; only where usable(fn).
void apply(Fn fn, const float* a, float* y, std::int64_t n);

}  // namespace tb::backend::libtorch::vml
