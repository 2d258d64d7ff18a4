// Streams of ops run twice, on an executor that defers (element-wise runs, held subtractions and
// zero slices: the default) and on one that does not (BackendOptions::fuse_elementwise off), and
// compared: the same tensors bit for bit (a NaN matches any NaN, see same_bits), the same ids
// consumed, the same errors.
#pragma once

#include <gmock/gmock.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "backends/libtorch/op_test_util.hpp"
#include "exec/executor.hpp"

namespace tb::test {

using backend::Executor;

struct Stream {
  std::vector<std::pair<std::uint64_t, TensorData>> inputs;
  std::vector<OperationIr> ops;
  std::vector<TensorIr> reads;  // read at the end, each ReadOnly
};

struct Outcome {
  std::vector<Status> statuses;
  std::vector<std::optional<TensorData>> reads;  // nullopt: the read failed
  std::vector<std::string> read_errors;
  std::uint64_t live_tensors = 0;
  bool sync_failed = false;
  bool deferred = false;                // ops were still deferred after the stream's last op
  std::uint64_t zero_slices_added = 0;  // sums the held zero slices wrote in place
  // The ops deferred after each op of the stream: the runs the comparison covered.
  std::vector<std::size_t> deferred_after;
  std::size_t longest_run() const {
    return deferred_after.empty() ? 0
                                  : *std::max_element(deferred_after.begin(), deferred_after.end());
  }
};

inline Outcome run_stream(Executor& e, const Stream& s) {
  Outcome o;
  for (const auto& [id, data] : s.inputs) EXPECT_TRUE(e.register_tensor(TensorId{id}, data));
  const auto& lt = dynamic_cast<backend::libtorch::LibTorchExecutor&>(e);
  for (const auto& op : s.ops) {
    o.statuses.push_back(e.execute(op));
    o.deferred_after.push_back(lt.deferred_ops());
  }
  // A dtype query runs nothing: what is deferred stays deferred until the reads.
  e.dtype_usage(DType(DTypeKind::F32));
  o.deferred = e.has_deferred();
  o.sync_failed = !e.sync();
  EXPECT_FALSE(e.has_deferred()) << "a sync runs what is deferred";
  o.live_tensors = e.stats().live_tensors;
  o.zero_slices_added = lt.zero_slices_added();
  for (auto t : s.reads) {
    t.status = TensorStatus::ReadOnly;
    auto r = e.read_tensor(t);
    o.reads.push_back(r ? std::optional<TensorData>(r.value()) : std::nullopt);
    o.read_errors.push_back(r ? "" : r.error().what());
  }
  return o;
}

// Bit for bit, signed zeros and all, except that any NaN matches any NaN: which NaN an op on two
// NaNs returns, and so its sign and payload, is unspecified (IEEE 754 6.2.3) and differs between
// ATen's vectorised loops and a scalar loop (x86 returns the first operand, and compilers swap the
// operands of commutative ops).
inline ::testing::AssertionResult same_bits(const TensorData& a, const TensorData& b) {
  if (a.shape != b.shape || a.dtype != b.dtype || a.bytes.size() != b.bytes.size()) {
    return ::testing::AssertionFailure() << "shape, dtype or size differ";
  }
  if (a.dtype.kind != DTypeKind::F32) {
    if (a == b) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "bytes differ";
  }
  for (std::size_t i = 0; i < a.bytes.size() / 4; ++i) {
    std::uint32_t x, y;
    std::memcpy(&x, a.bytes.data() + i * 4, 4);
    std::memcpy(&y, b.bytes.data() + i * 4, 4);
    float fx, fy;
    std::memcpy(&fx, &x, 4);
    std::memcpy(&fy, &y, 4);
    if (x != y && !(std::isnan(fx) && std::isnan(fy))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << fx << " (0x" << std::hex
                                           << x << ") vs " << fy << " (0x" << y << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

class FusedCompare : public OpTest {
 protected:
  void SetUp() override {
    if (test_device() != "cpu") GTEST_SKIP() << "the executor defers ops on the CPU only";
  }
  // `require_run`: the fusing executor must have formed an element-wise run (a stream that
  // tests another deferral says so itself).
  void expect_same(const Stream& s, bool require_run = true) {
    backend::libtorch::BackendOptions eager_options;
    eager_options.fuse_elementwise = false;
    auto eager_backend = std::move(backend::libtorch::make_backend(eager_options)).value();
    auto fused = backend_->new_executor();
    auto eager = eager_backend->new_executor();
    const Outcome a = run_stream(*fused, s);
    const Outcome b = run_stream(*eager, s);
    EXPECT_EQ(b.longest_run(), 0u) << "an executor that does not fuse defers nothing";
    // Without a run on the fusing side the comparison would be eager against eager.
    if (require_run) {
      EXPECT_GT(a.longest_run(), 0u) << "the fusing executor deferred nothing";
    }
    fused_ = a;
    ASSERT_EQ(a.reads.size(), b.reads.size());
    EXPECT_EQ(a.live_tensors, b.live_tensors);
    for (std::size_t i = 0; i < a.reads.size(); ++i) {
      ASSERT_EQ(a.reads[i].has_value(), b.reads[i].has_value())
          << "read of #" << s.reads[i].id.value << ": " << a.read_errors[i] << " / "
          << b.read_errors[i];
      if (a.reads[i]) {
        EXPECT_TRUE(same_bits(*a.reads[i], *b.reads[i])) << "tensor #" << s.reads[i].id.value;
      }
    }
    EXPECT_EQ(a.sync_failed, b.sync_failed);
  }
  // The fusing executor's outcome of the last stream: which runs the comparison covered.
  Outcome fused_;
};

inline TensorData f32_data(const Dims& dims, const std::vector<float>& v) {
  TensorData d;
  d.shape = dims;
  d.dtype = DTypeKind::F32;
  d.bytes = ir::Bytes::copy_of(v.data(), v.size() * sizeof(float));
  return d;
}

inline std::vector<float> special_values(std::size_t n, std::uint32_t seed) {
  const float inf = std::numeric_limits<float>::infinity();
  // Halves and a small negative for the rounding kernels (half to even; ceil(-0.3) is -0).
  const std::vector<float> specials = {0.0f,   -0.0f,   inf,   -inf,   std::nanf(""),
                                       1e-40f, -1e-40f, 3e38f, -3e38f, 1.0f,
                                       -1.0f,  0.5f,    2.5f,  -1.5f,  -0.3f};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-4, 4);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = (i % 7 == 0) ? specials[(i / 7) % specials.size()] : u(rng);
  return v;
}

inline TensorIr f(std::uint64_t id, const Dims& d, TensorStatus s = TensorStatus::ReadOnly) {
  TensorIr t = tir(id, d);
  t.status = s;
  return t;
}
inline TensorIr mask_ir(std::uint64_t id, const Dims& d, TensorStatus s = TensorStatus::ReadOnly) {
  TensorIr t = tir(id, d, DType::boolean(BoolStore::Native));
  t.status = s;
  return t;
}

// Every way into an executor but the op that continues what it defers, each of which must run
// what is deferred first: a read, a transfer and an alias (id 3) of `deferred` (a tensor the
// deferral produced), a sync, an upload of `upload` (id 3), a recorded failure, a profiling
// window, and `other`, an op that reads `deferred`.
using Entry = std::pair<const char*, std::function<void(Executor&)>>;
inline std::vector<Entry> every_other_entry(const TensorIr& deferred, const TensorData& upload,
                                            const OperationIr& other) {
  return {
      {"read", [=](Executor& e) { EXPECT_TRUE(e.read_tensor(deferred)); }},
      {"sync", [](Executor& e) { EXPECT_TRUE(e.sync()); }},
      {"register", [=](Executor& e) { EXPECT_TRUE(e.register_tensor(TensorId{3}, upload)); }},
      {"alias", [=](Executor& e) { EXPECT_TRUE(e.register_alias(TensorId{3}, deferred.id)); }},
      {"transfer", [=](Executor& e) { EXPECT_TRUE(e.take_for_transfer(deferred)); }},
      {"fail", [](Executor& e) { e.fail(make_error(ErrorCode::kInternal, "x"), {TensorId{9}}); }},
      {"profile", [](Executor& e) { EXPECT_TRUE(e.profile_start()); }},
      {"other op", [=](Executor& e) { EXPECT_TRUE(e.execute(other)); }},
  };
}

}  // namespace tb::test
