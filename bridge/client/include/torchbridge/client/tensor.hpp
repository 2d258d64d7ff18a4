// Tensors on a remote device. Every operation records Burn IR and sends it (batched) to the
// device's session; nothing runs locally. Reading a tensor waits for the host's answer.
//
// Lifetime follows Burn's router client: copies of a Tensor share one host tensor; an operation
// given the last reference (an rvalue, or a temporary such as `(a + b)` inside `(a + b) * c`)
// marks that input ReadWrite and the host frees it after the op; when the last reference goes
// without such a use, a Drop is sent. Operations take tensors by value for that reason: pass
// lvalues to keep them, std::move them to hand them over.
//
// Arguments that cannot make a valid op (mismatched shapes, devices or dtypes) do not throw: the
// result carries a tb::Error, every tensor computed from it carries it too, and reading it returns
// it. Host-side failures come back from to_data/to_vector and Device::sync.
//
// Every op is a free function (`exp(x)`, `matmul(a, b)`) and, where torch::Tensor has one, a
// member form with this tensor first (`x.exp().sum_dim(1)`, `a.matmul(b)`). Sizes, dims and axes
// are std::int64_t throughout, as in ATen.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "torchbridge/client/device.hpp"

namespace tb::client {

namespace detail {
struct TensorNode;
struct Access;
}  // namespace detail

// A tensor's sizes, outermost first (ATen's sizes(); Burn's Shape).
using Shape = std::vector<std::int64_t>;

// The DType a C++ element type reads and writes as (bool: the device's bool store).
template <class T>
struct ElementDType;
#define TB_CLIENT_ELEMENT(T, K)                              \
  template <>                                                \
  struct ElementDType<T> {                                   \
    static constexpr ir::DTypeKind kKind = ir::DTypeKind::K; \
  }
TB_CLIENT_ELEMENT(double, F64);
TB_CLIENT_ELEMENT(float, F32);
TB_CLIENT_ELEMENT(std::int64_t, I64);
TB_CLIENT_ELEMENT(std::int32_t, I32);
TB_CLIENT_ELEMENT(std::int16_t, I16);
TB_CLIENT_ELEMENT(std::int8_t, I8);
TB_CLIENT_ELEMENT(std::uint64_t, U64);
TB_CLIENT_ELEMENT(std::uint32_t, U32);
TB_CLIENT_ELEMENT(std::uint16_t, U16);
TB_CLIENT_ELEMENT(std::uint8_t, U8);
TB_CLIENT_ELEMENT(bool, Bool);
#undef TB_CLIENT_ELEMENT

// Shape and dtype of a tensor a custom op will produce.
struct TensorSpec {
  Shape shape;
  ir::DType dtype;
};

// One range per leading dim for slice(); negative bounds count from the end, `end` nullopt means
// the end. Steps must be positive.
struct Range {
  std::int64_t start = 0;
  std::optional<std::int64_t> end;
  std::int64_t step = 1;
};

// Per-tensor symmetric 8-bit, values stored one per byte: QFloat(Q8S, Native, Symmetric, F32).
// The default scheme of quantize() and quantize_dynamic().
ir::QuantScheme q8_symmetric_scheme();

class Tensor {
 public:
  Tensor() = default;

  // Uploads `data` (RegisterTensor). Any dtype, quantized included.
  static Tensor from_data(const Device& device, ir::TensorData data);
  // Uploads `values` with `shape` (empty shape: 1-D of values.size()).
  template <class T>
  static Tensor from_vector(const Device& device, const std::vector<T>& values, Shape shape = {});
  // A tensor filled with `value` (NumericFloat/NumericInt Full); dtype defaults to the device's
  // float dtype.
  static Tensor full(const Device& device, Shape shape, double value,
                     std::optional<ir::DType> dtype = std::nullopt);
  static Tensor zeros(const Device& device, Shape shape,
                      std::optional<ir::DType> dtype = std::nullopt);
  static Tensor ones(const Device& device, Shape shape,
                     std::optional<ir::DType> dtype = std::nullopt);
  // A tensor that holds `error` (what an invalid op returns).
  static Tensor failed(Error error);

  bool defined() const { return node_ != nullptr; }
  // The error this tensor carries (invalid arguments somewhere in its history), if any.
  const Error* error() const;
  bool ok() const { return defined() && error() == nullptr; }
  const Shape& shape() const;
  std::int64_t dim(std::int64_t axis) const { return shape().at(static_cast<std::size_t>(axis)); }
  std::int64_t rank() const { return static_cast<std::int64_t>(shape().size()); }
  std::int64_t numel() const;
  const ir::DType& dtype() const;
  Device device() const;
  // The host-side id (meaningful while ok()).
  ir::TensorId id() const;
  // How many Tensor values share this host tensor.
  long use_count() const { return node_.use_count(); }

  // ReadTensor. The rvalue overloads hand the last reference over (ReadWrite), as Burn's
  // into_data does; the host then frees the tensor.
  Result<ir::TensorData> to_data(std::optional<std::chrono::milliseconds> timeout = {}) const&;
  Result<ir::TensorData> to_data(std::optional<std::chrono::milliseconds> timeout = {}) &&;
  template <class T>
  Result<std::vector<T>> to_vector(std::optional<std::chrono::milliseconds> timeout = {}) const& {
    TB_TRY_ASSIGN(auto data, to_data(timeout));
    return data_to_vector<T>(data);
  }
  template <class T>
  Result<std::vector<T>> to_vector(std::optional<std::chrono::milliseconds> timeout = {}) && {
    TB_TRY_ASSIGN(auto data, std::move(*this).to_data(timeout));
    return data_to_vector<T>(data);
  }

  // Moves the tensor to `device`: between two devices of one host (ExposeTensorLocal /
  // RegisterTensorLocal) or between hosts (ExposeTensorRemote / RegisterTensorRemote, the
  // destination downloads from the source). The data never passes through this process.
  Tensor to(const Device& device) const&;
  Tensor to(const Device& device) &&;

  // Converts TensorData of element type T (or a bool store) into values.
  template <class T>
  static Result<std::vector<T>> data_to_vector(const ir::TensorData& data);
  // `shape` empty: 1-D of values.size(). Non-negative sizes are the caller's to check.
  template <class T>
  static ir::TensorData vector_to_data(const std::vector<T>& values, Shape shape,
                                       const ir::DType& bool_dtype);

  // ---- Member forms of the free functions below, this tensor first. On an lvalue they keep it;
  // on an rvalue (a temporary, std::move) they hand it over, as the free function given
  // std::move(x) does. ----
// Declares `Tensor name(params) const&` and `Tensor name(params) &&`.
#define TB_CLIENT_MEMBER(name, ...) \
  Tensor name(__VA_ARGS__) const&;  \
  Tensor name(__VA_ARGS__)&&
  TB_CLIENT_MEMBER(matmul, Tensor other);
  TB_CLIENT_MEMBER(exp);
  TB_CLIENT_MEMBER(log);
  TB_CLIENT_MEMBER(sqrt);
  TB_CLIENT_MEMBER(tanh);
  TB_CLIENT_MEMBER(abs);
  TB_CLIENT_MEMBER(relu);
  TB_CLIENT_MEMBER(gelu);
  TB_CLIENT_MEMBER(sigmoid);
  TB_CLIENT_MEMBER(cast, ir::DType dtype);
  TB_CLIENT_MEMBER(sum);
  TB_CLIENT_MEMBER(mean);
  TB_CLIENT_MEMBER(max);
  TB_CLIENT_MEMBER(min);
  TB_CLIENT_MEMBER(sum_dim, std::int64_t dim);
  TB_CLIENT_MEMBER(mean_dim, std::int64_t dim);
  TB_CLIENT_MEMBER(max_dim, std::int64_t dim);
  TB_CLIENT_MEMBER(min_dim, std::int64_t dim);
  TB_CLIENT_MEMBER(argmax, std::int64_t dim);
  TB_CLIENT_MEMBER(argmin, std::int64_t dim);
  TB_CLIENT_MEMBER(reshape, Shape shape);
  TB_CLIENT_MEMBER(slice, std::vector<Range> ranges);
  TB_CLIENT_MEMBER(swap_dims, std::int64_t dim1, std::int64_t dim2);
  TB_CLIENT_MEMBER(transpose);
  TB_CLIENT_MEMBER(permute, std::vector<std::int64_t> axes);
  TB_CLIENT_MEMBER(softmax, std::int64_t dim);
  TB_CLIENT_MEMBER(log_softmax, std::int64_t dim);
  TB_CLIENT_MEMBER(quantize_dynamic, const ir::QuantScheme& scheme = q8_symmetric_scheme());
  TB_CLIENT_MEMBER(quantize, Tensor scales, const ir::QuantScheme& scheme = q8_symmetric_scheme());
  TB_CLIENT_MEMBER(dequantize, std::optional<ir::DType> dtype = std::nullopt);
#undef TB_CLIENT_MEMBER

 private:
  // The client's sources reach the node through detail::Access (bridge/client/node.hpp).
  friend struct detail::Access;
  explicit Tensor(std::shared_ptr<detail::TensorNode> node) : node_(std::move(node)) {}
  // The dtype `data` must have to be read as T, checked with a readable error.
  static Status check_element(const ir::TensorData& data, ir::DTypeKind want,
                              std::size_t element_size);
  // Sizes that are all >= 0 and, given `count`, hold exactly that many values.
  static Status check_shape(std::string_view op, const Shape& shape,
                            std::optional<std::size_t> count);

  std::shared_ptr<detail::TensorNode> node_;
};

// ---- Elementwise arithmetic (NumericFloat / NumericInt, NumPy broadcasting of equal ranks). ----
Tensor operator+(Tensor a, Tensor b);
Tensor operator-(Tensor a, Tensor b);
Tensor operator*(Tensor a, Tensor b);
Tensor operator/(Tensor a, Tensor b);
Tensor operator+(Tensor a, double b);
Tensor operator-(Tensor a, double b);
Tensor operator*(Tensor a, double b);
Tensor operator/(Tensor a, double b);
Tensor operator+(double a, Tensor b);
Tensor operator*(double a, Tensor b);
Tensor operator-(double a, Tensor b);
Tensor operator-(Tensor a);
Tensor matmul(Tensor a, Tensor b);

// ---- Unary float functions and activations. ----
Tensor exp(Tensor x);
Tensor log(Tensor x);
Tensor sqrt(Tensor x);
Tensor tanh(Tensor x);
Tensor abs(Tensor x);
Tensor relu(Tensor x);
Tensor gelu(Tensor x);
Tensor sigmoid(Tensor x);
// To another dtype: float <-> float (Cast), float -> int (IntoInt), int/bool -> float
// (IntoFloat), int -> int (Cast), bool -> int (IntoInt).
Tensor cast(Tensor x, ir::DType dtype);

// ---- Reductions. Without a dim: shape [1]; with a dim: that dim kept with size 1. ----
Tensor sum(Tensor x);
Tensor mean(Tensor x);
Tensor max(Tensor x);
Tensor min(Tensor x);
Tensor sum_dim(Tensor x, std::int64_t dim);
Tensor mean_dim(Tensor x, std::int64_t dim);
Tensor max_dim(Tensor x, std::int64_t dim);
Tensor min_dim(Tensor x, std::int64_t dim);
// Indices in the device's int dtype.
Tensor argmax(Tensor x, std::int64_t dim);
Tensor argmin(Tensor x, std::int64_t dim);

// ---- Shape ops. ----
// At most one -1, inferred from the element count.
Tensor reshape(Tensor x, Shape shape);
// One Range per leading dim.
Tensor slice(Tensor x, std::vector<Range> ranges);
Tensor cat(std::vector<Tensor> tensors, std::int64_t dim);
Tensor swap_dims(Tensor x, std::int64_t dim1, std::int64_t dim2);
// The last two dims swapped.
Tensor transpose(Tensor x);
Tensor permute(Tensor x, std::vector<std::int64_t> axes);

// ---- nn ops (Burn's definitions: linear weight is [in, out], layer norm over the last dim). ----
namespace nn {
Tensor linear(Tensor x, Tensor weight, std::optional<Tensor> bias = std::nullopt);
struct Conv2dOptions {
  std::array<std::int64_t, 2> stride{1, 1};
  // (before, after) per spatial dim.
  std::array<std::pair<std::int64_t, std::int64_t>, 2> padding{};
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
};
// x [N, C, H, W], weight [O, C / groups, kH, kW], bias [O].
Tensor conv2d(Tensor x, Tensor weight, std::optional<Tensor> bias = std::nullopt,
              Conv2dOptions options = {});
struct Pool2dOptions {
  std::array<std::int64_t, 2> kernel{2, 2};
  std::array<std::int64_t, 2> stride{2, 2};
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};  // max pool only
  bool ceil_mode = false;
  bool count_include_pad = true;  // avg pool only
};
Tensor max_pool2d(Tensor x, Pool2dOptions options = {});
Tensor avg_pool2d(Tensor x, Pool2dOptions options = {});
Tensor softmax(Tensor x, std::int64_t dim);
Tensor log_softmax(Tensor x, std::int64_t dim);
Tensor layer_norm(Tensor x, Tensor gamma, std::optional<Tensor> beta = std::nullopt,
                  double epsilon = 1e-5);
struct AttentionOptions {
  std::optional<double> scale;  // default 1/sqrt(head dim)
  std::optional<double> softcap;
  bool is_causal = false;
};
// q [B, H, Sq, D], k [B, H, Sk, D], v [B, H, Sk, Dv] -> [B, H, Sq, Dv]. A bool mask is true where
// a score is masked out (Burn's convention).
Tensor attention(Tensor q, Tensor k, Tensor v, std::optional<Tensor> mask = std::nullopt,
                 std::optional<Tensor> bias = std::nullopt, AttentionOptions options = {});
}  // namespace nn

// ---- Quantization (Float.Quantize / Float.Dequantize); q8_symmetric_scheme() is above. ----
// Scales computed on the host from the values, as Burn's quantize_dynamic does for a per-tensor
// scheme: scale = 2 * max|x| / (range of the scheme's values).
Tensor quantize_dynamic(Tensor x, const ir::QuantScheme& scheme = q8_symmetric_scheme());
// Explicit per-tensor scale (a float tensor of shape [1]).
Tensor quantize(Tensor x, Tensor scales, const ir::QuantScheme& scheme = q8_symmetric_scheme());
Tensor dequantize(Tensor x, std::optional<ir::DType> dtype = std::nullopt);
// The int8 values and the per-tensor scale of QFloat data in a per-tensor 8-bit scheme with a
// Native store (what q8_symmetric_scheme() produces).
struct Q8Values {
  std::vector<std::int8_t> values;
  float scale = 0;
};
Result<Q8Values> q8_values(const ir::TensorData& data);

// ---- Custom ops hosted by the server (OperationIr::Custom). ----
// Outputs are created with the given shapes and dtypes; their order is the handler's.
std::vector<Tensor> custom(const Device& device, std::string id, std::vector<Tensor> inputs,
                           std::vector<TensorSpec> outputs, std::vector<ir::ScalarIr> scalars = {});

// ---- Templates. ----

namespace detail {
// An upload's bytes, copied into a warm block when the process keeps one of that size.
ir::Bytes copy_payload(const void* data, std::size_t size);
}  // namespace detail

template <class T>
Result<std::vector<T>> Tensor::data_to_vector(const ir::TensorData& data) {
  const std::uint64_t n = ir::num_elements(data.shape);
  if constexpr (std::is_same_v<T, bool>) {
    TB_TRY(check_element(data, ir::DTypeKind::Bool, 0));
    std::vector<T> out(n);
    const std::size_t width = data.dtype.bool_store == ir::BoolStore::U32 ? 4 : 1;
    for (std::uint64_t i = 0; i < n; ++i) {
      bool v = false;
      for (std::size_t b = 0; b < width; ++b) v = v || data.bytes.data()[i * width + b] != 0;
      out[i] = v;
    }
    return out;
  } else {
    TB_TRY(check_element(data, ElementDType<T>::kKind, sizeof(T)));
    // Copied once, never zeroed first: for a download of hundreds of MiB the zeroing cost as much
    // as the copy. The received payload is aligned for T where it is large (MessageBuffer).
    const auto* p = reinterpret_cast<const T*>(data.bytes.data());
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0) return std::vector<T>(p, p + n);
    std::vector<T> out(n);
    if (n) std::memcpy(out.data(), data.bytes.data(), n * sizeof(T));
    return out;
  }
}

template <class T>
ir::TensorData Tensor::vector_to_data(const std::vector<T>& values, Shape shape,
                                      const ir::DType& bool_dtype) {
  ir::TensorData data;
  if (shape.empty()) shape.push_back(static_cast<std::int64_t>(values.size()));
  data.shape.assign(shape.begin(), shape.end());
  if constexpr (std::is_same_v<T, bool>) {
    data.dtype = bool_dtype;
    const std::size_t width = bool_dtype.bool_store == ir::BoolStore::U32 ? 4 : 1;
    std::vector<std::uint8_t> bytes(values.size() * width, 0);
    for (std::size_t i = 0; i < values.size(); ++i) bytes[i * width] = values[i] ? 1 : 0;
    data.bytes = ir::Bytes::from_vector(std::move(bytes));
  } else {
    data.dtype = ir::DType(ElementDType<T>::kKind);
    data.bytes = detail::copy_payload(values.data(), values.size() * sizeof(T));
  }
  return data;
}

template <class T>
Tensor Tensor::from_vector(const Device& device, const std::vector<T>& values, Shape shape) {
  ir::DType bool_dtype = ir::DType::boolean(ir::BoolStore::Native);
  if (device.valid()) bool_dtype = device.bool_dtype();
  if (!shape.empty()) {
    if (auto s = check_shape("from_vector", shape, values.size()); !s) return failed(s.error());
  }
  return from_data(device, vector_to_data(values, std::move(shape), bool_dtype));
}

}  // namespace tb::client
