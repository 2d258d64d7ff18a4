// What the in-process benchmarks share (bench/inprocess.cpp, bench/inprocess_kernels.cpp): the
// device, IR helpers, deterministic inputs, our executor fed op by op, and the check that ours and
// ATen's answers agree before anything is timed.
#pragma once

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "torchbridge/ir/operation.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::bench {

using namespace tb::ir;
namespace lt = tb::backend::libtorch;

inline std::string g_device = "cpu";

[[noreturn]] inline void die(const std::string& message) {
  std::fprintf(stderr, "tb_bench_inprocess: %s\n", message.c_str());
  std::exit(2);
}

inline at::Device device() {
  return at::Device(g_device);
}

inline void device_sync() {
  const at::Device d = device();
  if (d.is_cuda()) at::detail::getCUDAHooks().deviceSynchronize(d.index() < 0 ? 0 : d.index());
}

inline TensorIr tir(std::uint64_t id, Dims dims, TensorStatus status = TensorStatus::ReadOnly) {
  return TensorIr{TensorId{id}, Shape{std::move(dims)}, status, DType(DTypeKind::F32)};
}
inline TensorIr out(std::uint64_t id, Dims dims) {
  return tir(id, std::move(dims), TensorStatus::NotInit);
}
inline TensorIr rw(TensorIr t) {
  t.status = TensorStatus::ReadWrite;
  return t;
}
inline Dims dims_of(const at::Tensor& t) {
  return Dims(t.sizes().begin(), t.sizes().end());
}

// Deterministic f32 values in [lo, hi), on the CPU (registered as bytes, moved by each side).
inline at::Tensor values(std::vector<std::int64_t> sizes, double lo, double hi,
                         std::uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::empty(sizes, at::kFloat).uniform_(lo, hi, gen);
}

// One executor on the benchmark's device, fed op by op as the host would feed it.
class Ours {
 public:
  // `fuse`: the executor as the host runs it (element-wise chains deferred and run as one loop);
  // off, every op through its lowering.
  explicit Ours(bool fuse = true) {
    lt::BackendOptions options{g_device, nullptr};
    options.fuse_elementwise = fuse;
    auto backend = lt::make_backend(options);
    if (!backend) die(backend.error().what());
    backend_ = std::move(backend).value();
    exec_ = backend_->new_executor();
  }
  void put(std::uint64_t id, const at::Tensor& cpu) {
    const at::Tensor c = cpu.contiguous();
    const auto* p = static_cast<const std::uint8_t*>(c.data_ptr());
    TensorData data{Bytes::copy_of(p, c.numel() * c.element_size()), dims_of(c),
                    DType(DTypeKind::F32)};
    if (auto s = exec_->register_tensor(TensorId{id}, data); !s) die(s.error().what());
  }
  void run(const OperationIr& op) {
    if (auto s = exec_->execute(op); !s) die(fmt::format("{}: {}", op.name(), s.error().what()));
  }
  void run_all(const std::vector<OperationIr>& ops) {
    for (const auto& op : ops) run(op);
  }
  void sync() {
    if (auto s = exec_->sync(); !s) die(fmt::format("an op failed: {}", s.error().what()));
  }
  at::Tensor get(const TensorIr& t) {
    TensorIr read = t;
    read.status = TensorStatus::ReadOnly;
    auto data = exec_->read_tensor(read);
    if (!data) die(data.error().what());
    const auto& d = data.value();
    std::vector<std::int64_t> sizes(d.shape.begin(), d.shape.end());
    return at::from_blob(const_cast<std::uint8_t*>(d.bytes.data()), sizes, at::kFloat).clone();
  }

 private:
  std::unique_ptr<tb::backend::Backend> backend_;
  std::unique_ptr<tb::backend::Executor> exec_;
};

inline void check_same(const char* what, const at::Tensor& ours, const at::Tensor& aten) {
  const at::Tensor a = ours.cpu(), b = aten.cpu();
  if (!a.sizes().equals(b.sizes()) || !at::allclose(a, b, 1e-4, 1e-5)) {
    die(fmt::format("{}: our result differs from ATen's (max abs diff {})", what,
                    a.sizes().equals(b.sizes()) ? (a - b).abs().max().item<double>() : -1.0));
  }
}

}  // namespace tb::bench
