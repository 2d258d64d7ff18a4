// An in-process torchbridge host (LibTorch CPU devices, any free port) for client tests, with one
// custom op registered: "tb.test.axpy" computes inputs[0] * scalars[0] + inputs[1].
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "torchbridge/bridge/host.hpp"
#include "torchbridge/client/device.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::test {

class ClientTestHost {
 public:
  // `options`' port and transfer timeout are the test's (any free port, 10 s).
  explicit ClientTestHost(int devices = 1, bridge::HostOptions options = {}) {
    auto registry = std::make_shared<backend::libtorch::CustomOpRegistry>();
    registry->add(
        "tb.test.axpy",
        [](const backend::libtorch::CustomOpCall& call) -> Result<std::vector<at::Tensor>> {
          if (call.inputs.size() != 2 || call.op.scalars.size() != 1) {
            return make_error(ErrorCode::kInvalidArgument, "axpy takes two inputs and one scalar");
          }
          return std::vector<at::Tensor>{call.inputs[0] * call.op.scalars[0].as_double() +
                                         call.inputs[1]};
        });
    options.port = 0;
    options.transfer_timeout = std::chrono::seconds(10);
    std::vector<std::shared_ptr<backend::Backend>> backends;
    for (int i = 0; i < devices; ++i) {
      backends.push_back(std::move(backend::libtorch::make_backend({"cpu", registry})).value());
    }
    tls_ = options.tls_cert_file.has_value();
    host_ = std::make_unique<bridge::Host>(options, std::move(backends));
    auto s = host_->start();
    EXPECT_TRUE(s) << (s ? "" : s.error().what());
  }
  std::string address() const {
    return (tls_ ? "wss://127.0.0.1:" : "ws://127.0.0.1:") + std::to_string(host_->port());
  }
  bridge::Host& host() { return *host_; }
  // Host tensors alive once the host has run all `device` sent: the second sync returns after the
  // host has accounted for the first.
  std::uint64_t live_tensors(const client::Device& device) {
    EXPECT_TRUE(device.sync());
    EXPECT_TRUE(device.sync());
    return host_->metrics().live_tensors;
  }

 private:
  std::unique_ptr<bridge::Host> host_;
  bool tls_ = false;
};

}  // namespace tb::test
