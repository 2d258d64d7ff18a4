// burn-signal's FFTs, served as built-in custom ops on every LibTorch device.
//
// burn-signal 0.22.1 sends its real FFTs to a remote host as `OperationIr::Custom` (src/custom.rs):
// - `signal::rfft`: inputs [signal], outputs [real, imag] (both the signal's dtype, length
//   n / 2 + 1 along `dim`, n the signal's length unless given);
// - `signal::irfft`: inputs [real, imag], output [signal] (the real part's dtype, length n, or
//   2 * (bins - 1) unless given);
// - scalars [UInt(dim), Bool(has_n), UInt(n)]: the optional length, presence kept apart from the
//   value. n truncates or zero-pads the signal (rfft) or the spectrum to n / 2 + 1 bins (irfft).
// Burn's LibTorch backend (burn-signal src/backends/tch.rs) runs exactly these as torch.fft.rfft /
// irfft with the "backward" norm (unscaled forward, 1/n inverse), which is what we call. Flex and
// torch agree: irfft ignores the imaginary parts of the DC (and, for even n, the Nyquist) bins.
// Burn's front end accepts only power-of-two lengths; any n >= 1 is computed here as the plain
// DFT of that length, which is what the declared output shapes describe.
// f16/bf16 are computed in f32 and rounded once (as Flex does; CPU FFTs have no half kernels).
#include <algorithm>
#include <limits>

#include <fmt/ranges.h>

#include "lower/lowering.hpp"

namespace tb::backend::libtorch {

namespace {

constexpr const char* kRfft = "signal::rfft";
constexpr const char* kIrfft = "signal::irfft";

struct FftArgs {
  std::int64_t dim = 0;
  c10::optional<std::int64_t> n;  // c10: LibTorch 1.13 does not take std::optional
};

Result<std::uint64_t> unsigned_scalar(const ir::ScalarIr& s, const char* what) {
  if (const auto* u = std::get_if<std::uint64_t>(&s.value)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&s.value); i && *i >= 0) {
    return static_cast<std::uint64_t>(*i);
  }
  return make_error(ErrorCode::kInvalidArgument, "{} must be a non-negative integer scalar", what);
}

// Checks the op's shape (counts of inputs, outputs and scalars) and reads [dim, has_n, n].
Result<FftArgs> fft_args(const CustomOpCall& call, std::size_t inputs, std::size_t outputs) {
  const ir::CustomOpIr& op = call.op;
  if (call.inputs.size() != inputs || op.outputs.size() != outputs) {
    return make_error(ErrorCode::kInvalidArgument,
                      "expects {} input(s) and {} output(s), the op has {} and {}", inputs, outputs,
                      call.inputs.size(), op.outputs.size());
  }
  if (op.scalars.size() != 3) {
    return make_error(ErrorCode::kInvalidArgument,
                      "expects 3 scalars [dim, has_n, n] (burn-signal's layout), got {}",
                      op.scalars.size());
  }
  TB_TRY_ASSIGN(const std::uint64_t dim, unsigned_scalar(op.scalars[0], "dim (scalar 0)"));
  const auto* has_n = std::get_if<bool>(&op.scalars[1].value);
  if (!has_n) {
    return make_error(ErrorCode::kInvalidArgument, "has_n (scalar 1) must be a bool scalar");
  }
  TB_TRY_ASSIGN(const std::uint64_t n, unsigned_scalar(op.scalars[2], "n (scalar 2)"));
  const at::Tensor& first = call.inputs[0];
  if (dim >= static_cast<std::uint64_t>(first.dim())) {
    return make_error(ErrorCode::kInvalidArgument, "dim {} is out of range for a tensor of rank {}",
                      dim, first.dim());
  }
  for (std::size_t i = 0; i < inputs; ++i) {
    if (!op.inputs[i].dtype.is_float() || !at::isFloatingType(call.inputs[i].scalar_type())) {
      return make_error(ErrorCode::kInvalidArgument, "input {} must be a float tensor, not {}", i,
                        op.inputs[i].dtype.name());
    }
  }
  for (const auto& o : op.outputs) {
    if (!o.dtype.is_float()) {
      return make_error(ErrorCode::kInvalidArgument, "outputs must be float tensors, not {}",
                        o.dtype.name());
    }
  }
  FftArgs args;
  args.dim = static_cast<std::int64_t>(dim);
  if (*has_n) {
    if (n == 0 || n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return make_error(ErrorCode::kInvalidArgument, "n must be at least 1, got {}", n);
    }
    args.n = static_cast<std::int64_t>(n);
  }
  return args;
}

// The type the transform runs in: f64 stays f64, everything else is computed in f32.
at::Tensor widened(const at::Tensor& x, at::ScalarType compute) {
  return x.scalar_type() == compute ? x : x.to(compute);
}

// The outputs' declared shapes must be what the transform makes: `length` along `dim`, the input's
// sizes elsewhere. Checked before the work, because the host's memory limits are checked on the
// declared shapes: a declared [2] with n = 2^27 had made the host compute 2 GiB (issue 39,
// finding 7).
Status check_declared(const CustomOpCall& call, const at::Tensor& input, std::int64_t dim,
                      std::int64_t length) {
  std::vector<std::int64_t> expected = input.sizes().vec();
  expected[static_cast<std::size_t>(dim)] = length;
  for (std::size_t i = 0; i < call.op.outputs.size(); ++i) {
    const auto& declared = call.op.outputs[i].shape.dims;
    const bool same = declared.size() == expected.size() &&
                      std::equal(declared.begin(), declared.end(), expected.begin(),
                                 [](std::uint64_t d, std::int64_t e) {
                                   return static_cast<std::int64_t>(d) == e;
                                 });
    if (!same) {
      return make_error(ErrorCode::kInvalidArgument,
                        "output {} is declared [{}] but the transform makes {}", i,
                        fmt::join(declared, ", "), shape_string(expected));
    }
  }
  return ok();
}

Result<std::vector<at::Tensor>> rfft(const CustomOpCall& call) {
  TB_TRY_ASSIGN(const FftArgs args, fft_args(call, 1, 2));
  const at::Tensor& signal = call.inputs[0];
  if (!args.n && signal.size(args.dim) == 0) {
    return make_error(ErrorCode::kInvalidArgument, "cannot transform an empty dimension {}",
                      args.dim);
  }
  const std::int64_t length = args.n ? *args.n : signal.size(args.dim);
  TB_TRY(check_declared(call, signal, args.dim, length / 2 + 1));
  const at::ScalarType compute = signal.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor spectrum =
      at::fft_rfft(widened(signal, compute), args.n, args.dim, c10::string_view("backward"));
  return std::vector<at::Tensor>{
      at::real(spectrum).to(storage_type(call.op.outputs[0].dtype)).contiguous(),
      at::imag(spectrum).to(storage_type(call.op.outputs[1].dtype)).contiguous()};
}

Result<std::vector<at::Tensor>> irfft(const CustomOpCall& call) {
  TB_TRY_ASSIGN(const FftArgs args, fft_args(call, 2, 1));
  const at::Tensor& re = call.inputs[0];
  const at::Tensor& im = call.inputs[1];
  if (re.sizes() != im.sizes()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the real part has shape {} and the imaginary part {}; they must match",
                      shape_string(re.sizes()), shape_string(im.sizes()));
  }
  const std::int64_t bins = re.size(args.dim);
  if (bins == 0) {
    return make_error(ErrorCode::kInvalidArgument, "the spectrum's dimension {} is empty",
                      args.dim);
  }
  if (!args.n && bins < 2) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a spectrum of 1 bin along dimension {} gives a signal of length 0; give n",
                      args.dim);
  }
  TB_TRY(check_declared(call, re, args.dim, args.n ? *args.n : 2 * (bins - 1)));
  const bool wide = re.scalar_type() == at::kDouble || im.scalar_type() == at::kDouble;
  const at::ScalarType compute = wide ? at::kDouble : at::kFloat;
  const at::Tensor spectrum = at::complex(widened(re, compute), widened(im, compute));
  const at::Tensor signal = at::fft_irfft(spectrum, args.n, args.dim, c10::string_view("backward"));
  return std::vector<at::Tensor>{signal.to(storage_type(call.op.outputs[0].dtype)).contiguous()};
}

}  // namespace

void add_signal_ops(CustomOpRegistry& registry) {
  registry.add(kRfft, rfft);
  registry.add(kIrfft, irfft);
}

}  // namespace tb::backend::libtorch
