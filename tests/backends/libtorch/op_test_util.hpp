// Test harness for the LibTorch lowering: one executor on CPU, tensors in and out as plain
// numbers, converted to and from Burn's byte layout independently of the code under test.
//
// Convention: the cases for a leaf live in a test suite named after its OpKind enumerator
// (TEST(NumericFloat_Add, Broadcasts)); coverage_test.cpp fails for a leaf without one.
#pragma once

#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include "test_devices.hpp"

#include "torchbridge/ir/format.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::test {

using namespace tb::ir;

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// Every dtype the op tests name.
inline const DType kF64 = DTypeKind::F64;
inline const DType kF32 = DTypeKind::F32;
inline const DType kFlex32 = DTypeKind::Flex32;
inline const DType kF16 = DTypeKind::F16;
inline const DType kBF16 = DTypeKind::BF16;
inline const DType kI64 = DTypeKind::I64;
inline const DType kI32 = DTypeKind::I32;
inline const DType kI16 = DTypeKind::I16;
inline const DType kI8 = DTypeKind::I8;
inline const DType kU64 = DTypeKind::U64;
inline const DType kU32 = DTypeKind::U32;
inline const DType kU16 = DTypeKind::U16;
inline const DType kU8 = DTypeKind::U8;
inline const DType kBool = DType::boolean(BoolStore::Native);
inline const DType kBoolU8 = DType::boolean(BoolStore::U8);
inline const DType kBoolU32 = DType::boolean(BoolStore::U32);

// Deterministic pseudo-random values in [lo, hi), multiples of 1/64: exact in f32, and in f16 and
// bf16 while |x| < 4, so every float dtype holds the same inputs.
inline std::vector<double> rnd(std::size_t n, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = std::round(dist(gen) * 64) / 64;
  return v;
}
inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

inline TensorIr tir(std::uint64_t id, Dims dims, DType dtype = DTypeKind::F32,
                    TensorStatus status = TensorStatus::ReadOnly) {
  return TensorIr{TensorId{id}, Shape{std::move(dims)}, status, dtype};
}
// The same tensor as an output (NotInit) or as a consumed input (ReadWrite).
inline TensorIr out(std::uint64_t id, Dims dims, DType dtype = DTypeKind::F32) {
  return tir(id, std::move(dims), dtype, TensorStatus::NotInit);
}
inline TensorIr rw(TensorIr t) {
  t.status = TensorStatus::ReadWrite;
  return t;
}
inline TensorIr ro(TensorIr t) {
  t.status = TensorStatus::ReadOnly;
  return t;
}

// A slice range as Burn's IR carries it.
inline Slice sl(std::int64_t start, std::optional<std::int64_t> end, std::int64_t step = 1) {
  return Slice{start, end, step};
}

// Burn's TensorData bytes for `values` in `dtype`.
inline TensorData make_data(const Dims& dims, const DType& dtype,
                            const std::vector<double>& values) {
  std::vector<std::uint8_t> bytes;
  auto put = [&](const auto v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(v));
  };
  for (double v : values) {
    switch (dtype.kind) {
      case DTypeKind::F64:
        put(v);
        break;
      case DTypeKind::F32:
      case DTypeKind::Flex32:
        put(static_cast<float>(v));
        break;
      case DTypeKind::F16:
        put(c10::Half(static_cast<float>(v)).x);
        break;
      case DTypeKind::BF16:
        put(c10::BFloat16(static_cast<float>(v)).x);
        break;
      case DTypeKind::I64:
        put(static_cast<std::int64_t>(v));
        break;
      case DTypeKind::I32:
        put(static_cast<std::int32_t>(v));
        break;
      case DTypeKind::I16:
        put(static_cast<std::int16_t>(v));
        break;
      case DTypeKind::I8:
        put(static_cast<std::int8_t>(v));
        break;
      case DTypeKind::U64:
        put(static_cast<std::uint64_t>(v));
        break;
      case DTypeKind::U32:
        put(static_cast<std::uint32_t>(v));
        break;
      case DTypeKind::U16:
        put(static_cast<std::uint16_t>(v));
        break;
      case DTypeKind::U8:
        put(static_cast<std::uint8_t>(v));
        break;
      case DTypeKind::Bool:
        if (dtype.bool_store == BoolStore::U32) {
          put(static_cast<std::uint32_t>(v != 0));
        } else {
          put(static_cast<std::uint8_t>(v != 0));
        }
        break;
      case DTypeKind::QFloat:
        ADD_FAILURE() << "make_data: use the quantization helpers";
        break;
    }
  }
  return TensorData{Bytes::from_vector(std::move(bytes)), dims, dtype};
}

// The numbers in Burn's TensorData bytes.
inline std::vector<double> values_of(const TensorData& data) {
  std::vector<double> out;
  const std::uint8_t* p = data.bytes.data();
  const std::size_t n = static_cast<std::size_t>(num_elements(data.shape));
  auto get = [&](auto tag, std::size_t i) {
    decltype(tag) v;
    std::memcpy(&v, p + i * sizeof(v), sizeof(v));
    return v;
  };
  for (std::size_t i = 0; i < n; ++i) {
    switch (data.dtype.kind) {
      case DTypeKind::F64:
        out.push_back(get(double{}, i));
        break;
      case DTypeKind::F32:
      case DTypeKind::Flex32:
        out.push_back(get(float{}, i));
        break;
      case DTypeKind::F16: {
        c10::Half h;
        h.x = get(std::uint16_t{}, i);
        out.push_back(static_cast<float>(h));
        break;
      }
      case DTypeKind::BF16: {
        c10::BFloat16 b;
        b.x = get(std::uint16_t{}, i);
        out.push_back(static_cast<float>(b));
        break;
      }
      case DTypeKind::I64:
        out.push_back(static_cast<double>(get(std::int64_t{}, i)));
        break;
      case DTypeKind::I32:
        out.push_back(get(std::int32_t{}, i));
        break;
      case DTypeKind::I16:
        out.push_back(get(std::int16_t{}, i));
        break;
      case DTypeKind::I8:
        out.push_back(get(std::int8_t{}, i));
        break;
      case DTypeKind::U64:
        out.push_back(static_cast<double>(get(std::uint64_t{}, i)));
        break;
      case DTypeKind::U32:
        out.push_back(get(std::uint32_t{}, i));
        break;
      case DTypeKind::U16:
        out.push_back(get(std::uint16_t{}, i));
        break;
      case DTypeKind::U8:
        out.push_back(get(std::uint8_t{}, i));
        break;
      case DTypeKind::Bool:
        out.push_back(data.dtype.bool_store == BoolStore::U32 ? get(std::uint32_t{}, i)
                                                              : get(std::uint8_t{}, i));
        break;
      case DTypeKind::QFloat:
        ADD_FAILURE() << "values_of: use the quantization helpers";
        break;
    }
  }
  return out;
}

// Ops run on test_device() (tests/test_devices.hpp): the CPU, or TB_TEST_DEVICE.
class OpTest : public ::testing::Test {
 protected:
  OpTest() {
    backend::libtorch::BackendOptions options;
    options.custom_ops = registry;
    // An unusable device skips the whole run (DeviceEnvironment); the fixture is still built.
    if (device_usable(test_device())) options.device = test_device();
    backend_ = std::move(backend::libtorch::make_backend(options)).value();
    exec = backend_->new_executor();
  }

  // Registers `values` under t's id (t.dtype, t.shape).
  void put(const TensorIr& t, const std::vector<double>& values) {
    auto s = exec->register_tensor(t.id, make_data(t.shape.dims, t.dtype, values));
    ASSERT_TRUE(s) << s.error().what();
  }
  // Runs the op of leaf K with `payload`; fails the test if it fails.
  template <OpKind K>
  void op(PayloadOfT<K> payload) {
    run(make_op<K>(std::move(payload)));
  }
  // Runs the op of leaf K with `payload`, which must fail; returns the error message.
  template <OpKind K>
  std::string op_error(PayloadOfT<K> payload) {
    return run_error(make_op<K>(std::move(payload)));
  }
  // Runs an op; fails the test if it fails.
  void run(const OperationIr& op) {
    auto s = exec->execute(op);
    ASSERT_TRUE(s) << fmt::format("{}", op) << ": " << s.error().what();
  }
  // Runs an op that must fail; returns the error message.
  std::string run_error(const OperationIr& op) {
    auto s = exec->execute(op);
    EXPECT_FALSE(s) << fmt::format("{}", op) << " succeeded";
    return s ? std::string() : s.error().what();
  }
  // The transpose of the 2-D tensor `t` as a strided view, stored as tensor `id` (by default an
  // id of its own, far above any a test picks): feeds non-contiguous inputs to the lowerings. The
  // custom op "transpose" makes the view, so that no lowering under test does.
  TensorIr transposed(const TensorIr& t, std::optional<std::uint64_t> id = std::nullopt) {
    if (!registry->find("transpose")) {
      registry->add(
          "transpose",
          [](const backend::libtorch::CustomOpCall& call) -> Result<std::vector<at::Tensor>> {
            return std::vector<at::Tensor>{call.inputs.at(0).t()};
          });
    }
    const auto o =
        out(id.value_or(next_view_id_++), {t.shape.dims.at(1), t.shape.dims.at(0)}, t.dtype);
    run(make_op<OpKind::Custom_Op>(CustomOpIr{"transpose", {t}, {o}, {}}));
    return ro(o);
  }
  // Reads t (as ReadOnly unless t says otherwise) and returns its values; checks shape and dtype.
  std::vector<double> get(const TensorIr& t) {
    TensorIr read = t;
    if (read.status == TensorStatus::NotInit) read.status = TensorStatus::ReadOnly;
    auto data = exec->read_tensor(read);
    EXPECT_TRUE(data) << (data ? "" : data.error().what());
    if (!data) return {};
    EXPECT_EQ(data.value().shape, t.shape.dims);
    EXPECT_EQ(data.value().dtype, t.dtype);
    return values_of(data.value());
  }

  std::shared_ptr<backend::libtorch::CustomOpRegistry> registry =
      std::make_shared<backend::libtorch::CustomOpRegistry>();
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<backend::Executor> exec;

 private:
  std::uint64_t next_view_id_ = std::uint64_t{1} << 40;
};

// Element-wise comparison with a relative tolerance; NaNs match NaNs, infinities match.
inline void expect_near(const std::vector<double>& actual, const std::vector<double>& expected,
                        double tol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(a)) << "at " << i << ": " << a << " vs NaN";
    } else if (std::isinf(e)) {
      EXPECT_EQ(a, e) << "at " << i;
    } else {
      EXPECT_NEAR(a, e, tol * std::max(1.0, std::abs(e))) << "at " << i;
    }
  }
}

}  // namespace tb::test
