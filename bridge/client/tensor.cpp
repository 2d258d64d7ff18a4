// Tensor itself: what it holds, uploads and factories, reads, and moves between devices. The ops
// live in ops_*.cpp, one file per family.
#include "torchbridge/client/tensor.hpp"

#include <atomic>
#include <mutex>

#include "net/secure_random.hpp"
#include "ops.hpp"
#include "session.hpp"
#include "torchbridge/ir/exclusive_block.hpp"

namespace tb::client {

using detail::Access;
using detail::invalid;
using detail::Kind;
using detail::kind_of;
using detail::Session;
using detail::TensorNode;

namespace detail {

TensorNode::~TensorNode() {
  if (!session || consumed || error) return;
  // Burn's RouterTensor drop: the last reference went without being consumed by an op.
  ir::OperationIr op;
  op.kind = ir::OpKind::Drop_Op;
  op.payload = ir::TensorIr{id, ir::Shape{to_dims(shape)}, ir::TensorStatus::ReadWrite, dtype};
  session->submit(ir::RegisterOperationTask{current_stream(), std::move(op)});
}

ir::Bytes copy_payload(const void* data, std::size_t size) {
  return ir::exclusive_copy_of(data, size, message_blocks());
}

}  // namespace detail

namespace {

std::atomic<std::uint64_t>& local_transfer_counter() {
  // Burn counts from 0 per process; two clients of one host would then collide on ids, so this
  // client starts at a random point of the u64 range.
  static std::atomic<std::uint64_t> counter{tb::net::secure_random_u64()};
  return counter;
}

// A download key is a bearer token: all 32 bytes from the CSPRNG.
ir::TransferCapability random_capability() {
  ir::TransferCapability c{};
  tb::net::secure_random(c.data(), c.size());
  return c;
}

Result<ir::TensorData> read(Tensor& t, std::optional<std::chrono::milliseconds> timeout) {
  if (!t.defined()) return make_error(ErrorCode::kInvalidArgument, "reading an undefined tensor");
  if (const Error* e = t.error()) return *e;
  auto session = Access::node(t)->session;
  auto in = detail::take(t);
  const auto stream = detail::current_stream();
  TB_TRY_ASSIGN(auto r, session->request_answer<ir::ReadTensorResponse>(
                            [&](ir::RequestId id) {
                              return ir::Task(ir::ReadTensorTask{id, stream, in});
                            },
                            timeout));
  if (auto* e = std::get_if<ir::ExecutionError>(&r.result)) {
    return Error{ErrorCode::kExecution, e->reason,
                 fmt::format("{}: reading tensor #{}", session->describe(), in.id.value)};
  }
  return std::move(std::get<ir::TensorData>(r.result));
}

Tensor transfer(Tensor t, const Device& target) {
  if (!t.defined()) return Tensor::failed(invalid("to", "moving an undefined tensor"));
  if (t.error()) return t;
  if (!target.valid()) return Tensor::failed(invalid("to", "the target Device is not connected"));
  auto source = Access::node(t)->session;
  const auto& dest = Access::session(target);
  if (source == dest) return t;
  const Shape shape = t.shape();
  const ir::DType dtype = t.dtype();
  auto in = detail::take(t);
  const auto stream = detail::current_stream();
  auto out = detail::output(dest, shape, dtype);
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

Tensor Tensor::failed(Error error) {
  auto node = std::make_shared<TensorNode>();
  node->error = std::move(error);
  return Tensor(std::move(node));
}

const Error* Tensor::error() const {
  return node_ && node_->error ? &*node_->error : nullptr;
}

const Shape& Tensor::shape() const {
  static const Shape kNone;
  return node_ ? node_->shape : kNone;
}

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape()) n *= d;
  return n;
}

const ir::DType& Tensor::dtype() const {
  static const ir::DType kNone;
  return node_ ? node_->dtype : kNone;
}

Device Tensor::device() const {
  return node_ ? Access::device(node_->session) : Device();
}

ir::TensorId Tensor::id() const {
  return node_ ? node_->id : ir::TensorId{};
}

Status Tensor::check_element(const ir::TensorData& data, ir::DTypeKind want,
                             std::size_t element_size) {
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
  return tb::ok();  // qualified: Tensor::ok() would be found first
}

Status Tensor::check_shape(std::string_view op, const Shape& shape,
                           std::optional<std::size_t> count) {
  return detail::check_shape(op, shape, count);
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
  node->session = Access::session(device);
  node->id = detail::new_tensor_id();
  node->shape = detail::to_shape(data.shape);
  node->dtype = data.dtype;
  node->session->submit_now(
      ir::RegisterTensorTask{detail::current_stream(), node->id, std::move(data)});
  return Tensor(std::move(node));
}

Tensor Tensor::full(const Device& device, Shape shape, double value,
                    std::optional<ir::DType> dtype) {
  return detail::record([&]() -> Result<Tensor> {
    if (!device.valid()) return invalid("full", "the Device is not connected");
    const ir::DType d = dtype.value_or(device.float_dtype());
    if (kind_of(d) == Kind::kBool || d.is_quantized()) {
      return invalid("full", fmt::format("not defined for {} tensors", d.name()));
    }
    TB_TRY(check_shape("full", shape, std::nullopt));
    const detail::Prepared p{Access::session(device), d};
    return detail::emit(p, std::move(shape), d, [&](const ir::TensorIr& out) {
      return detail::make(detail::numeric_category(d), ir::NumericOp::Full, d,
                          ir::FullOpIr{out, detail::scalar_for(d, value)});
    });
  });
}

Tensor Tensor::zeros(const Device& device, Shape shape, std::optional<ir::DType> dtype) {
  return full(device, std::move(shape), 0.0, dtype);
}

Tensor Tensor::ones(const Device& device, Shape shape, std::optional<ir::DType> dtype) {
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

}  // namespace tb::client
