// Tensor's member forms: each forwards to its free function with this tensor first, copied on an
// lvalue (kept) and moved on an rvalue (handed over). The free functions hold the op; nothing here
// but the forwarding.
#include "torchbridge/client/tensor.hpp"

namespace tb::client {

// `fn` is qualified: inside a member, an unqualified name would find the member itself.
#define TB_MEMBER0(name, fn)     \
  Tensor Tensor::name() const& { \
    return fn(*this);            \
  }                              \
  Tensor Tensor::name()&& {      \
    return fn(std::move(*this)); \
  }
#define TB_MEMBER1(name, fn, T1)                \
  Tensor Tensor::name(T1 a1) const& {           \
    return fn(*this, std::move(a1));            \
  }                                             \
  Tensor Tensor::name(T1 a1)&& {                \
    return fn(std::move(*this), std::move(a1)); \
  }
#define TB_MEMBER2(name, fn, T1, T2)                           \
  Tensor Tensor::name(T1 a1, T2 a2) const& {                   \
    return fn(*this, std::move(a1), std::move(a2));            \
  }                                                            \
  Tensor Tensor::name(T1 a1, T2 a2)&& {                        \
    return fn(std::move(*this), std::move(a1), std::move(a2)); \
  }

TB_MEMBER1(matmul, client::matmul, Tensor)
TB_MEMBER0(exp, client::exp)
TB_MEMBER0(log, client::log)
TB_MEMBER0(sqrt, client::sqrt)
TB_MEMBER0(tanh, client::tanh)
TB_MEMBER0(abs, client::abs)
TB_MEMBER0(relu, client::relu)
TB_MEMBER0(gelu, client::gelu)
TB_MEMBER0(sigmoid, client::sigmoid)
TB_MEMBER1(cast, client::cast, ir::DType)
TB_MEMBER0(sum, client::sum)
TB_MEMBER0(mean, client::mean)
TB_MEMBER0(max, client::max)
TB_MEMBER0(min, client::min)
TB_MEMBER1(sum_dim, client::sum_dim, std::int64_t)
TB_MEMBER1(mean_dim, client::mean_dim, std::int64_t)
TB_MEMBER1(max_dim, client::max_dim, std::int64_t)
TB_MEMBER1(min_dim, client::min_dim, std::int64_t)
TB_MEMBER1(argmax, client::argmax, std::int64_t)
TB_MEMBER1(argmin, client::argmin, std::int64_t)
TB_MEMBER1(reshape, client::reshape, Shape)
TB_MEMBER1(slice, client::slice, std::vector<Range>)
TB_MEMBER2(swap_dims, client::swap_dims, std::int64_t, std::int64_t)
TB_MEMBER0(transpose, client::transpose)
TB_MEMBER1(permute, client::permute, std::vector<std::int64_t>)
TB_MEMBER1(softmax, nn::softmax, std::int64_t)
TB_MEMBER1(log_softmax, nn::log_softmax, std::int64_t)
TB_MEMBER1(quantize_dynamic, client::quantize_dynamic, const ir::QuantScheme&)
TB_MEMBER2(quantize, client::quantize, Tensor, const ir::QuantScheme&)
TB_MEMBER1(dequantize, client::dequantize, std::optional<ir::DType>)

#undef TB_MEMBER0
#undef TB_MEMBER1
#undef TB_MEMBER2

}  // namespace tb::client
