// Quantized tensors between devices (quant.hpp's Transfer): symmetric tensors travel as their
// dequantized floats and are requantized on arrival when that round trip is exact; anything else
// (asymmetric schemes, scales or codes that do not survive it) travels as raw codes and scales.
#include "quant/quant.hpp"

#include "quant/quant_internal.hpp"

namespace tb::backend::libtorch::quant {

using detail::plain_values;
using ir::QuantMode;

Result<Transfer> prepare_transfer(const QTensor& q) {
  Transfer t;
  t.meta = q;
  if (q.scheme.mode == QuantMode::Symmetric) {
    TB_TRY_ASSIGN(t.dequantized, dequantize(q));
    // Checked here, once, rather than trusted: a zero or non-finite scale, or a NaN code, does not
    // survive x = s * q, q = round(x / s).
    auto back = requantize_like(t.dequantized, q);
    if (back && at::equal(plain_values(back.value()), plain_values(q))) {
      t.meta.values = at::Tensor();
      return t;
    }
  }
  t.dequantized = at::Tensor();
  t.raw = true;
  return t;
}

Result<QTensor> finish_transfer(const Transfer& t, const at::Device& device) {
  if (t.raw) return to_device(t.meta, device);
  QTensor meta = to_device(t.meta, device);
  return requantize_like(t.dequantized.to(device), meta);
}

}  // namespace tb::backend::libtorch::quant
