#include "ops.hpp"

namespace tb::client::detail {

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

ir::OpCategory numeric_category(const ir::DType& d) {
  return kind_of(d) == Kind::kFloat ? ir::OpCategory::NumericFloat : ir::OpCategory::NumericInt;
}

ir::DType compute_dtype(const ir::DType& d) {
  return d.is_quantized() ? ir::DType(ir::DTypeKind::F32) : d;
}

ir::ScalarIr scalar_for(const ir::DType& d, double v) {
  if (kind_of(d) == Kind::kFloat) return ir::ScalarIr::f(v);
  if (d.is_uint()) return ir::ScalarIr::u(static_cast<std::uint64_t>(v));
  return ir::ScalarIr::i(static_cast<std::int64_t>(v));
}

Error invalid(std::string_view op, std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), std::string(op)};
}

std::string shape_text(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

namespace {

// Folds one more input into the session every input so far lives on; `i` numbers it in messages.
Status join_session(std::string_view op, const Tensor& t, std::size_t i,
                    std::shared_ptr<Session>& session) {
  if (!t.defined()) return invalid(op, fmt::format("input #{} is an undefined tensor", i));
  if (const Error* e = t.error()) return *e;
  const auto& s = Access::node(t)->session;
  if (!session) {
    session = s;
  } else if (s != session) {
    return invalid(op, fmt::format("inputs live on different devices ({} and {}); move one "
                                   "with to(device)",
                                   session->describe(), s->describe()));
  }
  return ok();
}

}  // namespace

Result<Prepared> prepare(std::string_view op, Inputs inputs, Kinds kinds, Inputs others) {
  Prepared p;
  std::size_t i = 0;
  for (Inputs list : {inputs, others}) {
    for (const Tensor* t : list) {
      if (t) TB_TRY(join_session(op, *t, i, p.session));
      ++i;
    }
  }
  if (kinds != kAnyKind) {
    for (const Tensor* t : inputs) {
      if (t && !(kinds & kind_bit(kind_of(t->dtype())))) {
        return invalid(op, fmt::format("not defined for {} tensors", t->dtype().name()));
      }
    }
  }
  if (inputs.size() && *inputs.begin()) p.dtype = compute_dtype((*inputs.begin())->dtype());
  return p;
}

Result<std::shared_ptr<Session>> common_session(std::string_view op,
                                                const std::vector<Tensor>& tensors) {
  std::shared_ptr<Session> session;
  for (std::size_t i = 0; i < tensors.size(); ++i) TB_TRY(join_session(op, tensors[i], i, session));
  return session;
}

Status check_shape(std::string_view op, const Shape& shape, std::optional<std::size_t> count) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return invalid(op, fmt::format("negative size in {}", shape_text(shape)));
    n *= static_cast<std::uint64_t>(d);
  }
  if (count && n != *count) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: {} values do not fill a tensor of {} elements", op, *count, n);
  }
  return ok();
}

Status same_kind(std::string_view op, const Tensor& a, const Tensor& b) {
  if (kind_of(a.dtype()) == kind_of(b.dtype())) return ok();
  return invalid(op, fmt::format("operands are {} and {}; cast() one first", a.dtype().name(),
                                 b.dtype().name()));
}

Result<std::uint64_t> check_dim(std::string_view op, const Tensor& t, std::int64_t dim) {
  if (dim < 0 || dim >= t.rank()) {
    return invalid(op, fmt::format("dim {} is out of range for a tensor of shape {}", dim,
                                   shape_text(t.shape())));
  }
  return static_cast<std::uint64_t>(dim);
}

Result<Shape> broadcast(std::string_view op, const Shape& a, const Shape& b) {
  if (a.size() != b.size()) {
    return invalid(op, fmt::format("ranks differ: {} and {}", shape_text(a), shape_text(b)));
  }
  Shape out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1) {
      return invalid(op, fmt::format("shapes {} and {} do not broadcast (dim {})", shape_text(a),
                                     shape_text(b), i));
    }
    out[i] = a[i] == 1 ? b[i] : a[i];
  }
  return out;
}

ir::TensorIr take(Tensor& t) {
  std::shared_ptr<TensorNode> node = Access::release(t);
  ir::TensorIr ir{node->id, ir::Shape{to_dims(node->shape)}, ir::TensorStatus::ReadOnly,
                  node->dtype};
  if (node.use_count() == 1) {
    ir.status = ir::TensorStatus::ReadWrite;
    node->consumed = true;
  }
  return ir;
}

std::optional<ir::TensorIr> take(std::optional<Tensor>& t) {
  if (!t) return std::nullopt;
  return take(*t);
}

Output output(const std::shared_ptr<Session>& session, Shape shape, ir::DType dtype) {
  auto node = std::make_shared<TensorNode>();
  node->session = session;
  node->id = new_tensor_id();
  node->shape = std::move(shape);
  node->dtype = dtype;
  ir::TensorIr ir{node->id, ir::Shape{to_dims(node->shape)}, ir::TensorStatus::NotInit, dtype};
  return Output{Access::tensor(std::move(node)), std::move(ir)};
}

void send(const std::shared_ptr<Session>& session, ir::OperationIr op) {
  session->submit(ir::RegisterOperationTask{current_stream(), std::move(op)});
}

}  // namespace tb::client::detail
