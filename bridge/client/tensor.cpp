#include "torchbridge/client/tensor.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <random>

#include <fmt/ranges.h>

#include "node.hpp"
#include "session.hpp"

namespace tb::client {

namespace detail {

TensorNode::~TensorNode() {
  if (!session || consumed || error) return;
  // Burn's RouterTensor drop: the last reference went without being consumed by an op.
  ir::OperationIr op;
  op.kind = ir::OpKind::Drop_Op;
  op.payload = ir::TensorIr{id, ir::Shape{shape}, ir::TensorStatus::ReadWrite, dtype};
  session->submit(ir::RegisterOperationTask{current_stream(), std::move(op)});
}

Status check_element(const ir::TensorData& data, ir::DTypeKind want, std::size_t element_size) {
  if (data.dtype.kind != want) {
    return make_error(ErrorCode::kInvalidArgument, "the tensor holds {} values, not {}",
                      data.dtype.name(), ir::DType(want).name());
  }
  const std::uint64_t n = ir::num_elements(data.shape);
  const std::size_t width = want == ir::DTypeKind::Bool
                                ? (data.dtype.bool_store == ir::BoolStore::U32 ? 4 : 1)
                                : element_size;
  if (data.bytes.size() != n * width) {
    return make_error(ErrorCode::kDecode, "{} bytes for {} {} values", data.bytes.size(), n,
                      data.dtype.name());
  }
  return ok();
}

}  // namespace detail

using detail::Session;
using detail::TensorAccess;
using detail::TensorNode;

namespace {

enum class Kind { kFloat, kInt, kBool };

Kind kind_of(const ir::DType& d) {
  if (d.is_float() || d.is_quantized()) return Kind::kFloat;
  if (d.is_bool()) return Kind::kBool;
  return Kind::kInt;
}

ir::OpCategory base_category(Kind k) {
  switch (k) {
    case Kind::kFloat:
      return ir::OpCategory::BaseFloat;
    case Kind::kInt:
      return ir::OpCategory::BaseInt;
    case Kind::kBool:
      break;
  }
  return ir::OpCategory::BaseBool;
}

template <class Inner, class Payload>
ir::OperationIr make(ir::OpCategory category, Inner variant, ir::DType dtype, Payload payload) {
  ir::OperationIr op;
  op.kind = ir::leaf_of(category, variant);
  op.dtype = dtype;
  op.payload = std::move(payload);
  return op;
}

Error invalid(std::string_view op, std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), std::string(op)};
}

std::string shape_text(const ir::Dims& d) {
  return fmt::format("[{}]", fmt::join(d, ", "));
}

// Checks that every input is defined, error-free and on one session; returns that session.
Result<std::shared_ptr<Session>> common_session(std::string_view op,
                                                std::initializer_list<const Tensor*> inputs) {
  std::shared_ptr<Session> session;
  std::size_t i = 0;
  for (const Tensor* t : inputs) {
    if (!t->defined()) return invalid(op, fmt::format("input #{} is an undefined tensor", i));
    if (const Error* e = t->error()) return *e;
    const auto& s = t->node()->session;
    if (!session) {
      session = s;
    } else if (s != session) {
      return invalid(op, fmt::format("inputs live on different devices ({} and {}); move one "
                                     "with to(device)",
                                     session->describe(), s->describe()));
    }
    ++i;
  }
  return session;
}

// The TensorIr of an input, ReadWrite when this is the last reference (the host frees it).
ir::TensorIr take(Tensor& t) {
  std::shared_ptr<TensorNode> node = TensorAccess::release(t);
  ir::TensorIr ir{node->id, ir::Shape{node->shape}, ir::TensorStatus::ReadOnly, node->dtype};
  if (node.use_count() == 1) {
    ir.status = ir::TensorStatus::ReadWrite;
    node->consumed = true;
  }
  return ir;
}

struct Output {
  Tensor tensor;
  ir::TensorIr ir;
};

Output output(const std::shared_ptr<Session>& session, ir::Dims shape, ir::DType dtype) {
  auto node = std::make_shared<TensorNode>();
  node->session = session;
  node->id = detail::new_tensor_id();
  node->shape = std::move(shape);
  node->dtype = dtype;
  ir::TensorIr ir{node->id, ir::Shape{node->shape}, ir::TensorStatus::NotInit, dtype};
  return Output{Tensor(std::move(node)), std::move(ir)};
}

void send(const std::shared_ptr<Session>& session, ir::OperationIr op) {
  session->submit(ir::RegisterOperationTask{detail::current_stream(), std::move(op)});
}

Result<ir::Dims> broadcast(std::string_view op, const ir::Dims& a, const ir::Dims& b) {
  if (a.size() != b.size()) {
    return invalid(op, fmt::format("ranks differ: {} and {}", shape_text(a), shape_text(b)));
  }
  ir::Dims out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1) {
      return invalid(op, fmt::format("shapes {} and {} do not broadcast (dim {})", shape_text(a),
                                     shape_text(b), i));
    }
    out[i] = a[i] == 1 ? b[i] : a[i];
  }
  return out;
}

Result<std::size_t> check_dim(std::string_view op, const Tensor& t, std::size_t dim) {
  if (dim >= t.rank()) {
    return invalid(op, fmt::format("dim {} is out of range for a tensor of shape {}", dim,
                                   shape_text(t.shape())));
  }
  return dim;
}

Status need_kind(std::string_view op, const Tensor& t, std::initializer_list<Kind> kinds) {
  for (Kind k : kinds)
    if (kind_of(t.dtype()) == k) return ok();
  return invalid(op, fmt::format("not defined for {} tensors", t.dtype().name()));
}

ir::ScalarIr scalar_for(const ir::DType& d, double v) {
  if (kind_of(d) == Kind::kFloat) return ir::ScalarIr::f(v);
  if (d.is_uint()) return ir::ScalarIr::u(static_cast<std::uint64_t>(v));
  return ir::ScalarIr::i(static_cast<std::int64_t>(v));
}

Tensor binary(std::string_view name, ir::NumericOp variant, Tensor a, Tensor b) {
  auto session = common_session(name, {&a, &b});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_kind(name, a, {Kind::kFloat, Kind::kInt}); !s) return Tensor::failed(s.error());
  if (kind_of(a.dtype()) != kind_of(b.dtype())) {
    return Tensor::failed(invalid(name, fmt::format("operands are {} and {}; cast() one first",
                                                    a.dtype().name(), b.dtype().name())));
  }
  auto shape = broadcast(name, a.shape(), b.shape());
  if (!shape) return Tensor::failed(shape.error());
  const ir::DType dtype = a.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : a.dtype();
  const auto category =
      kind_of(dtype) == Kind::kFloat ? ir::OpCategory::NumericFloat : ir::OpCategory::NumericInt;
  auto lhs = take(a);
  auto rhs = take(b);
  auto out = output(session.value(), shape.value(), dtype);
  send(session.value(), make(category, variant, dtype, ir::BinaryOpIr{lhs, rhs, out.ir}));
  return std::move(out.tensor);
}

Tensor scalar_op(std::string_view name, ir::NumericOp variant, Tensor a, double v) {
  auto session = common_session(name, {&a});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_kind(name, a, {Kind::kFloat, Kind::kInt}); !s) return Tensor::failed(s.error());
  const ir::DType dtype = a.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : a.dtype();
  const auto category =
      kind_of(dtype) == Kind::kFloat ? ir::OpCategory::NumericFloat : ir::OpCategory::NumericInt;
  auto lhs = take(a);
  auto out = output(session.value(), lhs.shape.dims, dtype);
  send(session.value(),
       make(category, variant, dtype, ir::ScalarOpIr{lhs, scalar_for(dtype, v), out.ir}));
  return std::move(out.tensor);
}

// Unary ops with one output of the input's shape.
template <class Inner>
Tensor unary(std::string_view name, ir::OpCategory category, Inner variant, Tensor x,
             std::initializer_list<Kind> kinds) {
  auto session = common_session(name, {&x});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_kind(name, x, kinds); !s) return Tensor::failed(s.error());
  const ir::DType dtype = x.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : x.dtype();
  auto in = take(x);
  auto out = output(session.value(), in.shape.dims, dtype);
  send(session.value(), make(category, variant, dtype, ir::UnaryOpIr{in, out.ir}));
  return std::move(out.tensor);
}

Tensor reduce_all(std::string_view name, ir::NumericOp variant, Tensor x) {
  auto session = common_session(name, {&x});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_kind(name, x, {Kind::kFloat, Kind::kInt}); !s) return Tensor::failed(s.error());
  const ir::DType dtype = x.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : x.dtype();
  const auto category =
      kind_of(dtype) == Kind::kFloat ? ir::OpCategory::NumericFloat : ir::OpCategory::NumericInt;
  auto in = take(x);
  auto out = output(session.value(), ir::Dims{1}, dtype);
  send(session.value(), make(category, variant, dtype, ir::ReduceOpIr{in, out.ir}));
  return std::move(out.tensor);
}

Tensor reduce_dim(std::string_view name, ir::NumericOp variant, Tensor x, std::size_t dim,
                  bool indices) {
  auto session = common_session(name, {&x});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_kind(name, x, {Kind::kFloat, Kind::kInt}); !s) return Tensor::failed(s.error());
  if (auto d = check_dim(name, x, dim); !d) return Tensor::failed(d.error());
  const ir::DType in_dtype = x.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : x.dtype();
  const auto category =
      kind_of(in_dtype) == Kind::kFloat ? ir::OpCategory::NumericFloat : ir::OpCategory::NumericInt;
  const ir::DType out_dtype = indices ? Device(x.device()).int_dtype() : in_dtype;
  auto in = take(x);
  ir::Dims shape = in.shape.dims;
  shape[dim] = 1;
  auto out = output(session.value(), shape, out_dtype);
  // The op's dtype tag is the input's for index outputs, as Burn's router writes it.
  send(session.value(), make(category, variant, in_dtype, ir::ReduceDimOpIr{in, out.ir, dim, 1}));
  return std::move(out.tensor);
}

std::uint64_t pool_out(std::uint64_t size, std::uint64_t kernel, std::uint64_t stride,
                       std::uint64_t padding, std::uint64_t dilation, bool ceil_mode) {
  const std::int64_t span = static_cast<std::int64_t>(size + 2 * padding) -
                            static_cast<std::int64_t>(dilation * (kernel - 1)) - 1;
  if (span < 0 || stride == 0) return 0;
  std::int64_t n =
      ceil_mode
          ? (span + static_cast<std::int64_t>(stride) - 1) / static_cast<std::int64_t>(stride) + 1
          : span / static_cast<std::int64_t>(stride) + 1;
  // A last window that would start in the right padding is dropped (PyTorch's and Burn's rule).
  if (ceil_mode &&
      (n - 1) * static_cast<std::int64_t>(stride) >= static_cast<std::int64_t>(size + padding)) {
    --n;
  }
  return static_cast<std::uint64_t>(n);
}

std::atomic<std::uint64_t>& local_transfer_counter() {
  // Burn counts from 0 per process; two clients of one host would then collide on ids, so this
  // client starts at a random point of the u64 range.
  static std::atomic<std::uint64_t> counter{
      std::random_device{}() | (static_cast<std::uint64_t>(std::random_device{}()) << 32)};
  return counter;
}

ir::TransferCapability random_capability() {
  static std::mutex mutex;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock(mutex);
  ir::TransferCapability c{};
  for (std::size_t i = 0; i < c.size(); i += 8) {
    const std::uint64_t r = rng();
    for (std::size_t b = 0; b < 8; ++b) c[i + b] = static_cast<std::uint8_t>(r >> (8 * b));
  }
  return c;
}

Result<ir::TensorData> read(Tensor& t, std::optional<std::chrono::milliseconds> timeout) {
  if (!t.defined()) return make_error(ErrorCode::kInvalidArgument, "reading an undefined tensor");
  if (const Error* e = t.error()) return *e;
  auto session = t.node()->session;
  auto in = take(t);
  const auto stream = detail::current_stream();
  TB_TRY_ASSIGN(auto content, session->request(
                                  [&](ir::RequestId id) {
                                    return ir::Task(ir::ReadTensorTask{id, stream, in});
                                  },
                                  timeout));
  auto* r = std::get_if<ir::ReadTensorResponse>(&content);
  if (!r) {
    return make_error(ErrorCode::kDecode, "{}: ReadTensor answered with {}", session->describe(),
                      ir::response_name(content));
  }
  if (auto* e = std::get_if<ir::ExecutionError>(&r->result)) {
    return Error{ErrorCode::kExecution, e->reason,
                 fmt::format("{}: reading tensor #{}", session->describe(), in.id.value)};
  }
  return std::move(std::get<ir::TensorData>(r->result));
}

Tensor transfer(Tensor t, const Device& target) {
  if (!t.defined()) return Tensor::failed(invalid("to", "moving an undefined tensor"));
  if (t.error()) return t;
  if (!target.valid()) return Tensor::failed(invalid("to", "the target Device is not connected"));
  auto source = t.node()->session;
  const auto& dest = target.session();
  if (source == dest) return t;
  const ir::Dims shape = t.shape();
  const ir::DType dtype = t.dtype();
  auto in = take(t);
  const auto stream = detail::current_stream();
  auto out = output(dest, shape, dtype);
  if (source->peer_address() == dest->peer_address()) {
    const ir::LocalTransferId transfer = local_transfer_counter().fetch_add(1);
    source->submit_now(ir::ExposeTensorLocalTask{stream, in, transfer});
    dest->submit_now(ir::RegisterTensorLocalTask{stream, transfer, out.ir.id});
  } else {
    const auto capability = random_capability();
    source->submit_now(ir::ExposeTensorRemoteTask{stream, in, 1, capability, dest->peer()});
    dest->submit_now(ir::RegisterTensorRemoteTask{
        stream, ir::TensorRemote{capability, source->peer()}, out.ir.id});
  }
  return std::move(out.tensor);
}

}  // namespace

// ---- Tensor. -------------------------------------------------------------------------------

Tensor Tensor::failed(Error error) {
  auto node = std::make_shared<TensorNode>();
  node->error = std::move(error);
  return Tensor(std::move(node));
}

const Error* Tensor::error() const {
  return node_ && node_->error ? &*node_->error : nullptr;
}

const ir::Dims& Tensor::shape() const {
  static const ir::Dims kNone;
  return node_ ? node_->shape : kNone;
}

std::uint64_t Tensor::numel() const {
  return ir::num_elements(shape());
}

const ir::DType& Tensor::dtype() const {
  static const ir::DType kNone;
  return node_ ? node_->dtype : kNone;
}

Device Tensor::device() const {
  return node_ ? Device(node_->session) : Device();
}

ir::TensorId Tensor::id() const {
  return node_ ? node_->id : ir::TensorId{};
}

Tensor Tensor::from_data(const Device& device, ir::TensorData data) {
  if (!device.valid()) return failed(invalid("from_data", "the Device is not connected"));
  if (!data.dtype.is_quantized()) {
    std::size_t width = data.dtype.element_size();
    const std::uint64_t n = ir::num_elements(data.shape);
    if (data.bytes.size() != n * width) {
      return failed(invalid("from_data", fmt::format("{} bytes do not hold {} {} values",
                                                     data.bytes.size(), n, data.dtype.name())));
    }
  }
  auto node = std::make_shared<TensorNode>();
  node->session = device.session();
  node->id = detail::new_tensor_id();
  node->shape = data.shape;
  node->dtype = data.dtype;
  node->session->submit_now(
      ir::RegisterTensorTask{detail::current_stream(), node->id, std::move(data)});
  return Tensor(std::move(node));
}

Tensor Tensor::full(const Device& device, ir::Dims shape, double value,
                    std::optional<ir::DType> dtype) {
  if (!device.valid()) return failed(invalid("full", "the Device is not connected"));
  const ir::DType d = dtype.value_or(device.float_dtype());
  const Kind k = kind_of(d);
  if (k == Kind::kBool || d.is_quantized()) {
    return failed(invalid("full", fmt::format("not defined for {} tensors", d.name())));
  }
  auto out = output(device.session(), std::move(shape), d);
  const auto category =
      k == Kind::kFloat ? ir::OpCategory::NumericFloat : ir::OpCategory::NumericInt;
  send(device.session(),
       make(category, ir::NumericOp::Full, d, ir::FullOpIr{out.ir, scalar_for(d, value)}));
  return std::move(out.tensor);
}

Tensor Tensor::zeros(const Device& device, ir::Dims shape, std::optional<ir::DType> dtype) {
  return full(device, std::move(shape), 0.0, dtype);
}

Tensor Tensor::ones(const Device& device, ir::Dims shape, std::optional<ir::DType> dtype) {
  return full(device, std::move(shape), 1.0, dtype);
}

Result<ir::TensorData> Tensor::to_data(std::optional<std::chrono::milliseconds> timeout) const& {
  Tensor copy = *this;
  return read(copy, timeout);
}

Result<ir::TensorData> Tensor::to_data(std::optional<std::chrono::milliseconds> timeout) && {
  return read(*this, timeout);
}

Tensor Tensor::to(const Device& device) const& {
  return transfer(*this, device);
}

Tensor Tensor::to(const Device& device) && {
  return transfer(std::move(*this), device);
}

// ---- Arithmetic. ---------------------------------------------------------------------------

Tensor operator+(Tensor a, Tensor b) {
  return binary("add", ir::NumericOp::Add, std::move(a), std::move(b));
}
Tensor operator-(Tensor a, Tensor b) {
  return binary("sub", ir::NumericOp::Sub, std::move(a), std::move(b));
}
Tensor operator*(Tensor a, Tensor b) {
  return binary("mul", ir::NumericOp::Mul, std::move(a), std::move(b));
}
Tensor operator/(Tensor a, Tensor b) {
  return binary("div", ir::NumericOp::Div, std::move(a), std::move(b));
}
Tensor operator+(Tensor a, double b) {
  return scalar_op("add_scalar", ir::NumericOp::AddScalar, std::move(a), b);
}
Tensor operator-(Tensor a, double b) {
  return scalar_op("sub_scalar", ir::NumericOp::SubScalar, std::move(a), b);
}
Tensor operator*(Tensor a, double b) {
  return scalar_op("mul_scalar", ir::NumericOp::MulScalar, std::move(a), b);
}
Tensor operator/(Tensor a, double b) {
  return scalar_op("div_scalar", ir::NumericOp::DivScalar, std::move(a), b);
}
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
  const auto category = kind_of(a.dtype()) == Kind::kFloat ? ir::OpCategory::NumericFloat
                                                           : ir::OpCategory::NumericInt;
  return unary("neg", category, ir::NumericOp::Neg, std::move(a), {Kind::kFloat, Kind::kInt});
}

Tensor matmul(Tensor a, Tensor b) {
  constexpr std::string_view kName = "matmul";
  auto session = common_session(kName, {&a, &b});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_kind(kName, a, {Kind::kFloat, Kind::kInt}); !s)
    return Tensor::failed(s.error());
  if (kind_of(a.dtype()) != kind_of(b.dtype())) {
    return Tensor::failed(
        invalid(kName, fmt::format("operands are {} and {}", a.dtype().name(), b.dtype().name())));
  }
  const auto& sa = a.shape();
  const auto& sb = b.shape();
  if (sa.size() < 2 || sa.size() != sb.size()) {
    return Tensor::failed(invalid(kName, fmt::format("needs two tensors of one rank >= 2, got {} "
                                                     "and {}",
                                                     shape_text(sa), shape_text(sb))));
  }
  const std::size_t r = sa.size();
  if (sa[r - 1] != sb[r - 2]) {
    return Tensor::failed(
        invalid(kName, fmt::format("inner dims differ: {} x {}", shape_text(sa), shape_text(sb))));
  }
  ir::Dims batch_a(sa.begin(), sa.end() - 2);
  ir::Dims batch_b(sb.begin(), sb.end() - 2);
  auto batch = broadcast(kName, batch_a, batch_b);
  if (!batch) return Tensor::failed(batch.error());
  ir::Dims shape = batch.value();
  shape.push_back(sa[r - 2]);
  shape.push_back(sb[r - 1]);
  const ir::DType dtype = a.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : a.dtype();
  auto lhs = take(a);
  auto rhs = take(b);
  auto out = output(session.value(), shape, dtype);
  ir::OperationIr op;
  if (kind_of(dtype) == Kind::kFloat) {
    op = make(ir::OpCategory::Float, ir::FloatOp::Matmul, dtype, ir::MatmulOpIr{lhs, rhs, out.ir});
  } else {
    op = make(ir::OpCategory::Int, ir::IntOp::Matmul, dtype, ir::MatmulOpIr{lhs, rhs, out.ir});
  }
  send(session.value(), std::move(op));
  return std::move(out.tensor);
}

Tensor exp(Tensor x) {
  return unary("exp", ir::OpCategory::Float, ir::FloatOp::Exp, std::move(x), {Kind::kFloat});
}
Tensor log(Tensor x) {
  return unary("log", ir::OpCategory::Float, ir::FloatOp::Log, std::move(x), {Kind::kFloat});
}
Tensor sqrt(Tensor x) {
  return unary("sqrt", ir::OpCategory::Float, ir::FloatOp::Sqrt, std::move(x), {Kind::kFloat});
}
Tensor tanh(Tensor x) {
  return unary("tanh", ir::OpCategory::Float, ir::FloatOp::Tanh, std::move(x), {Kind::kFloat});
}
Tensor abs(Tensor x) {
  const auto category = kind_of(x.dtype()) == Kind::kFloat ? ir::OpCategory::NumericFloat
                                                           : ir::OpCategory::NumericInt;
  return unary("abs", category, ir::NumericOp::Abs, std::move(x), {Kind::kFloat, Kind::kInt});
}
Tensor relu(Tensor x) {
  return unary("relu", ir::OpCategory::Activation, ir::ActivationOp::Relu, std::move(x),
               {Kind::kFloat});
}
Tensor gelu(Tensor x) {
  return unary("gelu", ir::OpCategory::Activation, ir::ActivationOp::Gelu, std::move(x),
               {Kind::kFloat});
}
Tensor sigmoid(Tensor x) {
  return unary("sigmoid", ir::OpCategory::Activation, ir::ActivationOp::Sigmoid, std::move(x),
               {Kind::kFloat});
}

Tensor cast(Tensor x, ir::DType dtype) {
  constexpr std::string_view kName = "cast";
  auto session = common_session(kName, {&x});
  if (!session) return Tensor::failed(session.error());
  const Kind from = kind_of(x.dtype());
  const Kind to = kind_of(dtype);
  if (x.dtype().is_quantized() || dtype.is_quantized()) {
    return Tensor::failed(invalid(kName, "use quantize()/dequantize() for quantized dtypes"));
  }
  if (to == Kind::kBool) {
    return Tensor::failed(invalid(kName, "to bool: compare with a value instead"));
  }
  if (x.dtype() == dtype) return x;
  const ir::DType in_dtype = x.dtype();
  auto in = take(x);
  auto out = output(session.value(), in.shape.dims, dtype);
  ir::CastOpIr p{in, out.ir};
  ir::OperationIr op;
  if (from == to) {
    op = make(base_category(from), ir::BaseOp::Cast, dtype, p);
  } else if (from == Kind::kFloat) {
    op = make(ir::OpCategory::Float, ir::FloatOp::IntoInt, in_dtype, p);
  } else if (from == Kind::kInt) {
    op = make(ir::OpCategory::Int, ir::IntOp::IntoFloat, dtype, p);
  } else if (to == Kind::kFloat) {
    op = make(ir::OpCategory::Bool, ir::BoolOp::IntoFloat, dtype, p);
  } else {
    op = make(ir::OpCategory::Bool, ir::BoolOp::IntoInt, dtype, p);
  }
  send(session.value(), std::move(op));
  return std::move(out.tensor);
}

// ---- Reductions. ---------------------------------------------------------------------------

Tensor sum(Tensor x) {
  return reduce_all("sum", ir::NumericOp::Sum, std::move(x));
}
Tensor mean(Tensor x) {
  return reduce_all("mean", ir::NumericOp::Mean, std::move(x));
}
Tensor max(Tensor x) {
  return reduce_all("max", ir::NumericOp::Max, std::move(x));
}
Tensor min(Tensor x) {
  return reduce_all("min", ir::NumericOp::Min, std::move(x));
}
Tensor sum_dim(Tensor x, std::size_t dim) {
  return reduce_dim("sum_dim", ir::NumericOp::SumDim, std::move(x), dim, false);
}
Tensor mean_dim(Tensor x, std::size_t dim) {
  return reduce_dim("mean_dim", ir::NumericOp::MeanDim, std::move(x), dim, false);
}
Tensor max_dim(Tensor x, std::size_t dim) {
  return reduce_dim("max_dim", ir::NumericOp::MaxDim, std::move(x), dim, false);
}
Tensor min_dim(Tensor x, std::size_t dim) {
  return reduce_dim("min_dim", ir::NumericOp::MinDim, std::move(x), dim, false);
}
Tensor argmax(Tensor x, std::size_t dim) {
  return reduce_dim("argmax", ir::NumericOp::ArgMax, std::move(x), dim, true);
}
Tensor argmin(Tensor x, std::size_t dim) {
  return reduce_dim("argmin", ir::NumericOp::ArgMin, std::move(x), dim, true);
}

// ---- Shape ops. ----------------------------------------------------------------------------

Tensor reshape(Tensor x, std::vector<std::int64_t> shape) {
  constexpr std::string_view kName = "reshape";
  auto session = common_session(kName, {&x});
  if (!session) return Tensor::failed(session.error());
  ir::Dims dims(shape.size());
  std::optional<std::size_t> inferred;
  std::uint64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && !inferred) {
      inferred = i;
    } else if (shape[i] < 0) {
      return Tensor::failed(
          invalid(kName, fmt::format("bad dim {} in [{}]", shape[i], fmt::join(shape, ", "))));
    } else {
      dims[i] = static_cast<std::uint64_t>(shape[i]);
      known *= dims[i];
    }
  }
  if (inferred) {
    if (known == 0 || x.numel() % known != 0) {
      return Tensor::failed(invalid(kName, fmt::format("cannot infer -1 in [{}] for {} elements",
                                                       fmt::join(shape, ", "), x.numel())));
    }
    dims[*inferred] = x.numel() / known;
  }
  if (ir::num_elements(dims) != x.numel()) {
    return Tensor::failed(
        invalid(kName, fmt::format("{} has {} elements, {} has {}", shape_text(x.shape()),
                                   x.numel(), shape_text(dims), ir::num_elements(dims))));
  }
  const ir::DType dtype = x.dtype();
  auto in = take(x);
  auto out = output(session.value(), dims, dtype);
  send(session.value(),
       make(base_category(kind_of(dtype)), ir::BaseOp::Reshape, dtype, ir::ShapeOpIr{in, out.ir}));
  return std::move(out.tensor);
}

Tensor slice(Tensor x, std::vector<Range> ranges) {
  constexpr std::string_view kName = "slice";
  auto session = common_session(kName, {&x});
  if (!session) return Tensor::failed(session.error());
  if (ranges.size() > x.rank()) {
    return Tensor::failed(invalid(kName, fmt::format("{} ranges for a tensor of shape {}",
                                                     ranges.size(), shape_text(x.shape()))));
  }
  ir::Dims dims = x.shape();
  std::vector<ir::Slice> slices;
  for (std::size_t d = 0; d < ranges.size(); ++d) {
    const auto& r = ranges[d];
    if (r.step <= 0) {
      return Tensor::failed(
          invalid(kName, fmt::format("dim {}: step {} (only positive steps)", d, r.step)));
    }
    const auto n = static_cast<std::int64_t>(dims[d]);
    const auto clamp = [n](std::int64_t v) {
      return v < 0 ? std::max<std::int64_t>(0, n + v) : std::min(v, n);
    };
    const std::int64_t start = clamp(r.start);
    const std::int64_t end = r.end ? clamp(*r.end) : n;
    const std::int64_t len = start >= end ? 0 : (end - start + r.step - 1) / r.step;
    dims[d] = static_cast<std::uint64_t>(len);
    slices.push_back(ir::Slice{start, std::max(start, end), r.step});
  }
  const ir::DType dtype = x.dtype();
  auto in = take(x);
  auto out = output(session.value(), dims, dtype);
  send(session.value(), make(base_category(kind_of(dtype)), ir::BaseOp::Slice, dtype,
                             ir::SliceOpIr{in, std::move(slices), out.ir}));
  return std::move(out.tensor);
}

Tensor cat(std::vector<Tensor> tensors, std::size_t dim) {
  constexpr std::string_view kName = "cat";
  if (tensors.empty()) return Tensor::failed(invalid(kName, "no tensors"));
  std::shared_ptr<Session> session;
  for (const auto& t : tensors) {
    auto s = common_session(kName, {&tensors.front(), &t});
    if (!s) return Tensor::failed(s.error());
    session = s.value();
  }
  const auto& first = tensors.front();
  if (auto d = check_dim(kName, first, dim); !d) return Tensor::failed(d.error());
  ir::Dims dims = first.shape();
  dims[dim] = 0;
  for (const auto& t : tensors) {
    bool fits = t.rank() == first.rank() && t.dtype() == first.dtype();
    for (std::size_t i = 0; fits && i < t.rank(); ++i) fits = i == dim || t.dim(i) == first.dim(i);
    if (!fits) {
      return Tensor::failed(
          invalid(kName, fmt::format("{} {} does not fit {} {} along dim {}", t.dtype().name(),
                                     shape_text(t.shape()), first.dtype().name(),
                                     shape_text(first.shape()), dim)));
    }
    dims[dim] += t.dim(dim);
  }
  const ir::DType dtype = first.dtype();
  std::vector<ir::TensorIr> ins;
  for (auto& t : tensors) ins.push_back(take(t));
  auto out = output(session, dims, dtype);
  send(session, make(base_category(kind_of(dtype)), ir::BaseOp::Cat, dtype,
                     ir::CatOpIr{std::move(ins), dim, out.ir}));
  return std::move(out.tensor);
}

Tensor swap_dims(Tensor x, std::size_t dim1, std::size_t dim2) {
  constexpr std::string_view kName = "swap_dims";
  auto session = common_session(kName, {&x});
  if (!session) return Tensor::failed(session.error());
  if (auto d = check_dim(kName, x, dim1); !d) return Tensor::failed(d.error());
  if (auto d = check_dim(kName, x, dim2); !d) return Tensor::failed(d.error());
  const ir::DType dtype = x.dtype();
  auto in = take(x);
  ir::Dims dims = in.shape.dims;
  std::swap(dims[dim1], dims[dim2]);
  auto out = output(session.value(), dims, dtype);
  send(session.value(), make(base_category(kind_of(dtype)), ir::BaseOp::SwapDims, dtype,
                             ir::SwapDimsOpIr{in, out.ir, dim1, dim2}));
  return std::move(out.tensor);
}

Tensor transpose(Tensor x) {
  if (x.defined() && !x.error() && x.rank() < 2) {
    return Tensor::failed(
        invalid("transpose", fmt::format("needs rank >= 2, got {}", shape_text(x.shape()))));
  }
  const std::size_t r = x.rank();
  return swap_dims(std::move(x), r - 2, r - 1);
}

Tensor permute(Tensor x, std::vector<std::size_t> axes) {
  constexpr std::string_view kName = "permute";
  auto session = common_session(kName, {&x});
  if (!session) return Tensor::failed(session.error());
  std::vector<bool> seen(x.rank(), false);
  bool valid = axes.size() == x.rank();
  for (auto a : axes) {
    valid = valid && a < x.rank() && !seen[a];
    if (valid) seen[a] = true;
  }
  if (!valid) {
    return Tensor::failed(
        invalid(kName, fmt::format("[{}] is not a permutation of the dims of {}",
                                   fmt::join(axes, ", "), shape_text(x.shape()))));
  }
  const ir::DType dtype = x.dtype();
  auto in = take(x);
  ir::Dims dims(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) dims[i] = in.shape.dims[axes[i]];
  auto out = output(session.value(), dims, dtype);
  std::vector<std::uint64_t> wire(axes.begin(), axes.end());
  send(session.value(), make(base_category(kind_of(dtype)), ir::BaseOp::Permute, dtype,
                             ir::PermuteOpIr{in, out.ir, std::move(wire)}));
  return std::move(out.tensor);
}

// ---- nn. -----------------------------------------------------------------------------------

namespace nn {

namespace {
ir::OperationIr module_op(ir::ModuleOp variant, ir::OpPayload payload) {
  ir::OperationIr op;
  op.kind = ir::leaf_of(ir::OpCategory::Module, variant);
  op.payload = std::move(payload);
  return op;
}

Status need_float(std::string_view op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (t->defined() && !t->error() && kind_of(t->dtype()) != Kind::kFloat) {
      return invalid(op, fmt::format("needs float tensors, got {}", t->dtype().name()));
    }
  }
  return ok();
}
}  // namespace

Tensor linear(Tensor x, Tensor weight, std::optional<Tensor> bias) {
  constexpr std::string_view kName = "linear";
  auto session =
      bias ? common_session(kName, {&x, &weight, &*bias}) : common_session(kName, {&x, &weight});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_float(kName, {&x, &weight}); !s) return Tensor::failed(s.error());
  if (x.rank() < 1 || weight.rank() != 2 || x.dim(x.rank() - 1) != weight.dim(0) ||
      (bias && (bias->rank() != 1 || bias->dim(0) != weight.dim(1)))) {
    return Tensor::failed(invalid(
        kName, fmt::format("x {} weight {} (want [in, out]) bias {}", shape_text(x.shape()),
                           shape_text(weight.shape()), bias ? shape_text(bias->shape()) : "-")));
  }
  ir::Dims dims = x.shape();
  dims.back() = weight.dim(1);
  const ir::DType dtype = x.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : x.dtype();
  auto xi = take(x);
  auto wi = take(weight);
  std::optional<ir::TensorIr> bi;
  if (bias) bi = take(*bias);
  auto out = output(session.value(), dims, dtype);
  send(session.value(), module_op(ir::ModuleOp::Linear, ir::LinearOpIr{xi, wi, bi, out.ir}));
  return std::move(out.tensor);
}

Tensor conv2d(Tensor x, Tensor weight, std::optional<Tensor> bias, Conv2dOptions o) {
  constexpr std::string_view kName = "conv2d";
  auto session =
      bias ? common_session(kName, {&x, &weight, &*bias}) : common_session(kName, {&x, &weight});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_float(kName, {&x, &weight}); !s) return Tensor::failed(s.error());
  const auto& xs = x.shape();
  const auto& ws = weight.shape();
  if (xs.size() != 4 || ws.size() != 4 || o.groups == 0 || xs[1] != ws[1] * o.groups ||
      ws[0] % o.groups != 0 || (bias && (bias->rank() != 1 || bias->dim(0) != ws[0]))) {
    return Tensor::failed(invalid(
        kName, fmt::format("x {} weight {} groups {}: want x [N, C, H, W], weight [O, C/groups, "
                           "kH, kW], bias [O]",
                           shape_text(xs), shape_text(ws), o.groups)));
  }
  ir::Dims dims{xs[0], ws[0], 0, 0};
  for (std::size_t i = 0; i < 2; ++i) {
    const std::int64_t span =
        static_cast<std::int64_t>(xs[2 + i] + o.padding[i].first + o.padding[i].second) -
        static_cast<std::int64_t>(o.dilation[i] * (ws[2 + i] - 1)) - 1;
    if (span < 0 || o.stride[i] == 0) {
      return Tensor::failed(invalid(kName, fmt::format("the kernel {} does not fit the input {}",
                                                       shape_text(ws), shape_text(xs))));
    }
    dims[2 + i] = static_cast<std::uint64_t>(span) / o.stride[i] + 1;
  }
  const ir::DType dtype = x.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : x.dtype();
  auto xi = take(x);
  auto wi = take(weight);
  std::optional<ir::TensorIr> bi;
  if (bias) bi = take(*bias);
  auto out = output(session.value(), dims, dtype);
  ir::Conv2dOptionsIr options{o.stride, o.padding, o.dilation, o.groups};
  send(session.value(),
       module_op(ir::ModuleOp::Conv2d, ir::Conv2dOpIr{xi, wi, bi, options, out.ir}));
  return std::move(out.tensor);
}

namespace {
Tensor pool2d(std::string_view name, bool max, Tensor x, const Pool2dOptions& o) {
  auto session = common_session(name, {&x});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_float(name, {&x}); !s) return Tensor::failed(s.error());
  if (x.rank() != 4) {
    return Tensor::failed(
        invalid(name, fmt::format("needs x [N, C, H, W], got {}", shape_text(x.shape()))));
  }
  ir::Dims dims = x.shape();
  for (std::size_t i = 0; i < 2; ++i) {
    dims[2 + i] = pool_out(dims[2 + i], o.kernel[i], o.stride[i], o.padding[i],
                           max ? o.dilation[i] : 1, o.ceil_mode);
    if (dims[2 + i] == 0) {
      return Tensor::failed(invalid(
          name, fmt::format("the window does not fit the input {}", shape_text(x.shape()))));
    }
  }
  const ir::DType dtype = x.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : x.dtype();
  auto xi = take(x);
  auto out = output(session.value(), dims, dtype);
  if (max) {
    send(session.value(),
         module_op(ir::ModuleOp::MaxPool2d, ir::MaxPool2dOpIr{xi, o.kernel, o.stride, o.padding,
                                                              o.dilation, o.ceil_mode, out.ir}));
  } else {
    send(session.value(), module_op(ir::ModuleOp::AvgPool2d,
                                    ir::AvgPool2dOpIr{xi, o.kernel, o.stride, o.padding,
                                                      o.count_include_pad, o.ceil_mode, out.ir}));
  }
  return std::move(out.tensor);
}

Tensor dim_activation(std::string_view name, ir::ActivationOp variant, Tensor x, std::size_t dim) {
  auto session = common_session(name, {&x});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_float(name, {&x}); !s) return Tensor::failed(s.error());
  if (auto d = check_dim(name, x, dim); !d) return Tensor::failed(d.error());
  const ir::DType dtype = x.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : x.dtype();
  auto xi = take(x);
  auto out = output(session.value(), xi.shape.dims, dtype);
  ir::OperationIr op;
  op.kind = ir::leaf_of(ir::OpCategory::Activation, variant);
  op.payload = ir::DimOpIr{xi, out.ir, dim};
  send(session.value(), std::move(op));
  return std::move(out.tensor);
}
}  // namespace

Tensor max_pool2d(Tensor x, Pool2dOptions options) {
  return pool2d("max_pool2d", true, std::move(x), options);
}
Tensor avg_pool2d(Tensor x, Pool2dOptions options) {
  return pool2d("avg_pool2d", false, std::move(x), options);
}
Tensor softmax(Tensor x, std::size_t dim) {
  return dim_activation("softmax", ir::ActivationOp::Softmax, std::move(x), dim);
}
Tensor log_softmax(Tensor x, std::size_t dim) {
  return dim_activation("log_softmax", ir::ActivationOp::LogSoftmax, std::move(x), dim);
}

Tensor layer_norm(Tensor x, Tensor gamma, std::optional<Tensor> beta, double epsilon) {
  constexpr std::string_view kName = "layer_norm";
  auto session =
      beta ? common_session(kName, {&x, &gamma, &*beta}) : common_session(kName, {&x, &gamma});
  if (!session) return Tensor::failed(session.error());
  if (auto s = need_float(kName, {&x, &gamma}); !s) return Tensor::failed(s.error());
  const std::uint64_t d = x.rank() ? x.dim(x.rank() - 1) : 0;
  if (x.rank() < 1 || gamma.shape() != ir::Dims{d} || (beta && beta->shape() != ir::Dims{d})) {
    return Tensor::failed(
        invalid(kName, fmt::format("x {} gamma {}: gamma and beta must be [{}]",
                                   shape_text(x.shape()), shape_text(gamma.shape()), d)));
  }
  const ir::DType dtype = x.dtype().is_quantized() ? ir::DType(ir::DTypeKind::F32) : x.dtype();
  auto xi = take(x);
  auto gi = take(gamma);
  std::optional<ir::TensorIr> bi;
  if (beta) bi = take(*beta);
  auto out = output(session.value(), xi.shape.dims, dtype);
  send(session.value(), module_op(ir::ModuleOp::LayerNorm,
                                  ir::LayerNormOpIr{xi, gi, bi, ir::ScalarIr::f(epsilon), out.ir}));
  return std::move(out.tensor);
}

Tensor attention(Tensor q, Tensor k, Tensor v, std::optional<Tensor> mask,
                 std::optional<Tensor> bias, AttentionOptions o) {
  constexpr std::string_view kName = "attention";
  auto session = common_session(kName, {&q, &k, &v});
  if (!session) return Tensor::failed(session.error());
  for (auto* extra : {&mask, &bias}) {
    if (!*extra) continue;
    auto s = common_session(kName, {&q, &**extra});
    if (!s) return Tensor::failed(s.error());
  }
  if (auto s = need_float(kName, {&q, &k, &v}); !s) return Tensor::failed(s.error());
  const auto& qs = q.shape();
  const auto& ks = k.shape();
  const auto& vs = v.shape();
  const bool shapes_ok = qs.size() == 4 && ks.size() == 4 && vs.size() == 4 && qs[0] == ks[0] &&
                         qs[1] == ks[1] && qs[3] == ks[3] && ks[0] == vs[0] && ks[1] == vs[1] &&
                         ks[2] == vs[2];
  const ir::Dims scores{qs.size() == 4 ? qs[0] : 0, qs.size() == 4 ? qs[1] : 0,
                        qs.size() == 4 ? qs[2] : 0, ks.size() == 4 ? ks[2] : 0};
  if (!shapes_ok || (mask && mask->shape() != scores) || (bias && bias->shape() != scores)) {
    return Tensor::failed(invalid(
        kName, fmt::format("q {} k {} v {}: want [B, H, Sq, D], [B, H, Sk, D], [B, H, Sk, Dv]; "
                           "mask and bias [B, H, Sq, Sk]",
                           shape_text(qs), shape_text(ks), shape_text(vs))));
  }
  if (mask && !mask->dtype().is_bool()) {
    return Tensor::failed(invalid(kName, "the mask must be a bool tensor"));
  }
  ir::Dims dims{qs[0], qs[1], qs[2], vs[3]};
  const ir::DType dtype = q.dtype();
  auto qi = take(q);
  auto ki = take(k);
  auto vi = take(v);
  std::optional<ir::TensorIr> mi;
  std::optional<ir::TensorIr> bi;
  if (mask) mi = take(*mask);
  if (bias) bi = take(*bias);
  auto out = output(session.value(), dims, dtype);
  ir::AttentionOptionsIr options;
  if (o.scale) options.scale = ir::ScalarIr::f(*o.scale);
  if (o.softcap) options.softcap = ir::ScalarIr::f(*o.softcap);
  options.is_causal = o.is_causal;
  send(session.value(),
       module_op(ir::ModuleOp::Attention, ir::AttentionOpIr{qi, ki, vi, mi, bi, options, out.ir}));
  return std::move(out.tensor);
}

}  // namespace nn

// ---- Quantization. -------------------------------------------------------------------------

ir::QuantScheme q8_symmetric_scheme() {
  ir::QuantScheme s;
  s.value = ir::QuantValue::Q8S;
  s.store = ir::QuantStore{ir::QuantStoreKind::Native, 0};
  s.mode = ir::QuantMode::Symmetric;
  s.tensor = ir::ScaleDtype::F32;
  s.block = std::nullopt;
  return s;
}

namespace {
std::optional<float> value_range(ir::QuantValue v) {
  switch (v) {
    case ir::QuantValue::Q8F:
      return 255.0f;
    case ir::QuantValue::Q8S:
      return 254.0f;
    case ir::QuantValue::Q4F:
      return 15.0f;
    case ir::QuantValue::Q4S:
      return 14.0f;
    case ir::QuantValue::Q2F:
      return 3.0f;
    case ir::QuantValue::Q2S:
      return 2.0f;
    default:
      return std::nullopt;
  }
}
}  // namespace

Tensor quantize(Tensor x, Tensor scales, const ir::QuantScheme& scheme) {
  constexpr std::string_view kName = "quantize";
  auto session = common_session(kName, {&x, &scales});
  if (!session) return Tensor::failed(session.error());
  if (!x.dtype().is_float() || !scales.dtype().is_float()) {
    return Tensor::failed(invalid(kName, fmt::format("needs float values and scales, got {} and {}",
                                                     x.dtype().name(), scales.dtype().name())));
  }
  if (scheme.block) {
    return Tensor::failed(invalid(kName,
                                  "block-wise schemes need a scale grid; this client "
                                  "quantizes per tensor"));
  }
  if (scales.shape() != ir::Dims{1}) {
    return Tensor::failed(invalid(
        kName, fmt::format("a per-tensor scale is shape [1], got {}", shape_text(scales.shape()))));
  }
  const ir::DType in_dtype = x.dtype();
  auto xi = take(x);
  auto si = take(scales);
  auto out = output(session.value(), xi.shape.dims, ir::DType::qfloat(scheme));
  send(session.value(),
       make(ir::OpCategory::Float, ir::FloatOp::Quantize, in_dtype,
            ir::QuantizeOpIr{xi, ir::QuantizationParametersIr{si, std::nullopt}, scheme, out.ir}));
  return std::move(out.tensor);
}

Tensor quantize_dynamic(Tensor x, const ir::QuantScheme& scheme) {
  const auto range = value_range(scheme.value);
  if (!range) {
    return Tensor::failed(invalid("quantize_dynamic", "only integer value kinds (Q8/Q4/Q2) here"));
  }
  // Burn's per-tensor dynamic scale: 2 * max|x| / (b - a).
  Tensor scales = reduce_all("quantize_dynamic", ir::NumericOp::MaxAbs, x) * (2.0 / *range);
  return quantize(std::move(x), std::move(scales), scheme);
}

Tensor dequantize(Tensor x, std::optional<ir::DType> dtype) {
  constexpr std::string_view kName = "dequantize";
  auto session = common_session(kName, {&x});
  if (!session) return Tensor::failed(session.error());
  if (!x.dtype().is_quantized()) {
    return Tensor::failed(
        invalid(kName, fmt::format("the tensor is {}, not quantized", x.dtype().name())));
  }
  const ir::DType out_dtype = dtype.value_or(ir::DType(ir::DTypeKind::F32));
  if (!out_dtype.is_float()) {
    return Tensor::failed(
        invalid(kName, fmt::format("to {}: a float dtype is needed", out_dtype.name())));
  }
  auto xi = take(x);
  auto out = output(session.value(), xi.shape.dims, out_dtype);
  send(session.value(), make(ir::OpCategory::Float, ir::FloatOp::Dequantize, out_dtype,
                             ir::DequantizeOpIr{xi, out.ir}));
  return std::move(out.tensor);
}

Result<Q8Values> q8_values(const ir::TensorData& data) {
  const auto& s = data.dtype.scheme;
  if (!data.dtype.is_quantized() ||
      (s.value != ir::QuantValue::Q8S && s.value != ir::QuantValue::Q8F) || s.block ||
      s.store.kind != ir::QuantStoreKind::Native) {
    return make_error(ErrorCode::kInvalidArgument,
                      "q8_values: {} is not a per-tensor 8-bit scheme with a native store",
                      data.dtype.name());
  }
  const std::uint64_t n = ir::num_elements(data.shape);
  if (data.bytes.size() != n + 4) {
    return make_error(ErrorCode::kDecode, "q8_values: {} bytes for {} values and one f32 scale",
                      data.bytes.size(), n);
  }
  Q8Values out;
  out.values.resize(n);
  if (n) std::memcpy(out.values.data(), data.bytes.data(), n);
  std::memcpy(&out.scale, data.bytes.data() + n, 4);
  return out;
}

// ---- Custom ops. ---------------------------------------------------------------------------

std::vector<Tensor> custom(const Device& device, std::string id, std::vector<Tensor> inputs,
                           std::vector<TensorSpec> outputs, std::vector<ir::ScalarIr> scalars) {
  const std::string name = fmt::format("custom op '{}'", id);
  auto fail_all = [&](Error e) {
    std::vector<Tensor> failed;
    for (std::size_t i = 0; i < outputs.size(); ++i) failed.push_back(Tensor::failed(e));
    return failed;
  };
  if (!device.valid()) return fail_all(invalid(name, "the Device is not connected"));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto s = common_session(name, {&inputs[i]});
    if (!s) return fail_all(s.error());
    if (s.value() != device.session()) {
      return fail_all(
          invalid(name, fmt::format("input #{} lives on {}, not on {}", i, s.value()->describe(),
                                    device.session()->describe())));
    }
  }
  ir::CustomOpIr op;
  op.id = std::move(id);
  for (auto& t : inputs) op.inputs.push_back(take(t));
  std::vector<Tensor> results;
  for (auto& spec : outputs) {
    auto out = output(device.session(), spec.shape, spec.dtype);
    op.outputs.push_back(out.ir);
    results.push_back(std::move(out.tensor));
  }
  op.scalars = std::move(scalars);
  ir::OperationIr wire;
  wire.kind = ir::OpKind::Custom_Op;
  wire.payload = std::move(op);
  send(device.session(), std::move(wire));
  return results;
}

}  // namespace tb::client
