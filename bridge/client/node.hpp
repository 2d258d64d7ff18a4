// What a client Tensor shares (one host tensor id on one session, or an error), and the one way
// the client's sources reach the private parts of Tensor and Device.
#pragma once

#include <memory>
#include <optional>

#include "session.hpp"
#include "torchbridge/client/tensor.hpp"

namespace tb::client::detail {

struct TensorNode {
  std::shared_ptr<Session> session;
  ir::TensorId id{};
  Shape shape;
  ir::DType dtype;
  std::optional<Error> error;
  // Handed to the host as ReadWrite (the host frees it): no Drop when the node goes.
  bool consumed = false;

  ~TensorNode();
};

// Friend of Tensor and Device, so that the public headers need no accessors for these.
struct Access {
  static const std::shared_ptr<TensorNode>& node(const Tensor& t) { return t.node_; }
  static std::shared_ptr<TensorNode> release(Tensor& t) { return std::move(t.node_); }
  static Tensor tensor(std::shared_ptr<TensorNode> node) { return Tensor(std::move(node)); }
  static const std::shared_ptr<Session>& session(const Device& d) { return d.session_; }
  static Device device(std::shared_ptr<Session> session) { return Device(std::move(session)); }
};

// Between the client's sizes and the wire's (Burn's usize); the client checks sizes are >= 0
// before any reaches the wire.
inline ir::Dims to_dims(const Shape& shape) {
  return ir::Dims(shape.begin(), shape.end());
}
inline Shape to_shape(const ir::Dims& dims) {
  return Shape(dims.begin(), dims.end());
}

}  // namespace tb::client::detail
