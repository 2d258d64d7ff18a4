// What a client Tensor shares: one host tensor id on one session, or an error.
#pragma once

#include <memory>
#include <optional>

#include "session.hpp"
#include "torchbridge/client/tensor.hpp"

namespace tb::client::detail {

struct TensorNode {
  std::shared_ptr<Session> session;
  ir::TensorId id{};
  ir::Dims shape;
  ir::DType dtype;
  std::optional<Error> error;
  // Handed to the host as ReadWrite (the host frees it): no Drop when the node goes.
  bool consumed = false;

  ~TensorNode();
};

struct TensorAccess {
  static std::shared_ptr<TensorNode> release(Tensor& t) { return std::move(t.node_); }
};

}  // namespace tb::client::detail
