// Tensor transfers through a live host, every dtype, both directions: between two devices of one
// host (ExposeTensorLocal / RegisterTensorLocal) and between two hosts on loopback
// (ExposeTensorRemote / RegisterTensorRemote over `/data`). Quantized tensors produced on the host
// arrive bit-identical. What cannot move fails with an error the waiting session reports in time.
#include <chrono>
#include <random>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "backends/libtorch/quant_test_util.hpp"
#include "bridge/bridge_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

// One tensor of every dtype Burn can send (QFloat: a few schemes in Burn's layout).
std::vector<TensorData> every_dtype() {
  std::vector<TensorData> out;
  const Dims shape = {2, 4};
  const std::vector<double> v = {1.5, -2, 0, 3, 7, -8, 100, 0.25};
  const std::vector<double> u = {1, 2, 0, 3, 7, 8, 100, 255};
  for (DTypeKind k :
       {DTypeKind::F64, DTypeKind::F32, DTypeKind::Flex32, DTypeKind::F16, DTypeKind::BF16,
        DTypeKind::I64, DTypeKind::I32, DTypeKind::I16, DTypeKind::I8}) {
    out.push_back(make_data(shape, k, v));
  }
  for (DTypeKind k : {DTypeKind::U64, DTypeKind::U32, DTypeKind::U16, DTypeKind::U8})
    out.push_back(make_data(shape, k, u));
  for (BoolStore b : {BoolStore::Native, BoolStore::U8, BoolStore::U32})
    out.push_back(make_data(shape, DType::boolean(b), {1, 0, 0, 1, 1, 1, 0, 0}));
  std::mt19937 rng(5);
  const QuantScheme schemes[] = {
      make_scheme(QuantValue::Q8S, {QuantStoreKind::Native, 0}, ScaleDtype::F32, {},
                  ScaleDtype::F32),
      make_scheme(QuantValue::Q4S, {QuantStoreKind::PackedU32, 0}, std::nullopt, {4},
                  ScaleDtype::F16),
      make_scheme(QuantValue::E4M3, {QuantStoreKind::Native, 0}, ScaleDtype::F32, {4},
                  ScaleDtype::UE4M3),
  };
  for (const auto& s : schemes) {
    RefQ q{random_values(s.value, 8, rng), {}, std::nullopt};
    for (std::uint64_t i = 0; i < ref_num_params(shape, s); ++i)
      q.scales.push_back(0.25f * (i + 1));
    if (s.block && s.tensor) q.global = 0.5f;
    out.push_back(TensorData{Bytes::from_vector(ref_bytes(q, shape, s)), shape, DType::qfloat(s)});
  }
  return out;
}

TensorIr ir_of(std::uint64_t id, const TensorData& d, TensorStatus st = TensorStatus::ReadOnly) {
  return TensorIr{TensorId{id}, Shape{d.shape}, st, d.dtype};
}

void expect_data(const WireResult<TensorData>& r, const TensorData& want) {
  ASSERT_TRUE(std::holds_alternative<TensorData>(r)) << std::get<ExecutionError>(r).reason;
  EXPECT_EQ(std::get<TensorData>(r), want);
}

// Registers every dtype on `from`, moves each to `to` with `move(tensor, i, new id)` and reads it
// back there.
template <class Move>
void move_every_dtype(Session& from, Session& to, std::uint64_t first_id, Move move) {
  const auto all = every_dtype();
  for (std::size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE(all[i].dtype.name());
    const std::uint64_t id = first_id + 2 * i;
    from.send({register_tensor(id, all[i])});
    move(ir_of(id, all[i], TensorStatus::ReadWrite), i, id + 1);
    expect_data(to.read(ir_of(id + 1, all[i])), all[i]);
  }
  EXPECT_TRUE(std::holds_alternative<std::monostate>(from.sync()));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(to.sync()));
}

// A quantized tensor made on the host (Float.Quantize of f32 data).
std::uint64_t quantize_on_host(Session& s, std::uint64_t id, const QuantScheme& scheme) {
  std::vector<double> x;
  for (int i = 0; i < 32; ++i) x.push_back(std::sin(i) * 5);
  s.send({register_tensor(id, make_data({4, 8}, DTypeKind::F32, x)),
          register_tensor(id + 1, make_data({1}, DTypeKind::F32, {5.0 / 127})),
          register_op(make_op<OpKind::Float_Quantize>(
              QuantizeOpIr{tir(id, {4, 8}),
                           {tir(id + 1, {1}), std::nullopt},
                           scheme,
                           out(id + 2, {4, 8}, DType::qfloat(scheme))},
              DTypeKind::F32))});
  return id + 2;
}

const QuantScheme kQ8 =
    make_scheme(QuantValue::Q8S, {QuantStoreKind::Native, 0}, ScaleDtype::F32, {}, ScaleDtype::F32);

TEST(BridgeTransfer, SameHostEveryDTypeBetweenTwoDevicesBothWays) {
  TestHost host(2);
  Session a(host.port(), 0), b(host.port(), 1);
  LocalTransferId xfer = 100;
  move_every_dtype(a, b, 1, [&](const TensorIr& t, std::size_t, std::uint64_t new_id) {
    a.send({expose_local(t, xfer)});
    b.send({register_local(xfer++, new_id)});
  });
  move_every_dtype(b, a, 1001, [&](const TensorIr& t, std::size_t, std::uint64_t new_id) {
    b.send({expose_local(t, xfer)});
    a.send({register_local(xfer++, new_id)});
  });
  // The target registers before the source exposes: it waits for it.
  const auto d = make_data({3}, DTypeKind::F32, {1, 2, 3});
  b.send({register_local(999, 5)});
  a.send({register_tensor(5, d), expose_local(tir(5, {3}), 999)});
  expect_data(b.read(tir(5, {3})), d);
}

TEST(BridgeTransfer, QuantizedTensorsMadeOnTheHostMoveBetweenDevicesBitExactly) {
  TestHost host(2);
  Session a(host.port(), 0), b(host.port(), 1);
  const auto q4 = make_scheme(QuantValue::Q4S, {QuantStoreKind::PackedU32, 0}, ScaleDtype::F16, {},
                              ScaleDtype::F16);
  LocalTransferId xfer = 1;
  std::uint64_t id = 10;
  for (const auto& scheme : {kQ8, q4}) {
    SCOPED_TRACE(to_string(scheme));
    for (int direction = 0; direction < 2; ++direction) {
      Session& from = direction ? b : a;
      Session& to = direction ? a : b;
      const std::uint64_t q = quantize_on_host(from, id, scheme);
      const TensorIr qt = tir(q, {4, 8}, DType::qfloat(scheme));
      const auto sent = from.read(qt);
      ASSERT_TRUE(std::holds_alternative<TensorData>(sent));
      from.send({expose_local(qt, xfer)});
      to.send({register_local(xfer++, q + 10)});
      expect_data(to.read(tir(q + 10, {4, 8}, DType::qfloat(scheme))), std::get<TensorData>(sent));
      // And it dequantizes to the same floats on either side.
      expect_data(to.read(tir(q + 10, {4, 8})), std::get<TensorData>(from.read(tir(q, {4, 8}))));
      id += 100;
    }
  }
}

TEST(BridgeTransfer, HostToHostEveryDTypeBothWays) {
  TestHost h1(1), h2(1);
  Session a(h1.port(), 0), b(h2.port(), 0);
  std::uint64_t key = 0x1000;
  move_every_dtype(a, b, 1, [&](const TensorIr& t, std::size_t, std::uint64_t new_id) {
    a.send({expose_remote(t, key, h2.peer())});
    b.send({register_remote(key++, h1.peer(), new_id)});
  });
  move_every_dtype(b, a, 1001, [&](const TensorIr& t, std::size_t, std::uint64_t new_id) {
    b.send({expose_remote(t, key, h1.peer())});
    a.send({register_remote(key++, h2.peer(), new_id)});
  });
}

TEST(BridgeTransfer, QuantizedTensorsMadeOnTheHostMoveBetweenHostsBitExactly) {
  TestHost h1(1), h2(1);
  Session a(h1.port(), 0), b(h2.port(), 0);
  std::uint64_t key = 0x2000, id = 10;
  for (int direction = 0; direction < 2; ++direction) {
    Session& from = direction ? b : a;
    Session& to = direction ? a : b;
    TestHost& source = direction ? h2 : h1;
    TestHost& target = direction ? h1 : h2;
    const std::uint64_t q = quantize_on_host(from, id, kQ8);
    const TensorIr qt = tir(q, {4, 8}, DType::qfloat(kQ8));
    const auto sent = from.read(qt);
    ASSERT_TRUE(std::holds_alternative<TensorData>(sent));
    from.send({expose_remote(qt, key, target.peer())});
    to.send({register_remote(key++, source.peer(), q + 10)});
    expect_data(to.read(tir(q + 10, {4, 8}, DType::qfloat(kQ8))), std::get<TensorData>(sent));
    id += 100;
  }
}

// ---- What cannot move. -------------------------------------------------------------------------

// The waiting session answers within the transfer timeout plus this.
constexpr auto kSlack = 5s;

TEST(BridgeTransfer, AnUnknownSameHostTransferIdIsAnErrorNotAHang) {
  TestHost host(2, 300ms);
  Session b(host.port(), 1);
  const auto start = std::chrono::steady_clock::now();
  b.send({register_local(424242, 7)});
  auto s = b.sync(300ms + kSlack);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms + kSlack);
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(s));
  EXPECT_THAT(std::get<ExecutionError>(s).reason,
              HasSubstr("RegisterTensorLocal #7: same-host transfer 424242 was not exposed"));
  auto r = b.read(tir(7, {1}));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
  EXPECT_THAT(std::get<ExecutionError>(r).reason, HasSubstr("transfer 424242"));
  // The session goes on.
  const auto d = make_data({2}, DTypeKind::F32, {1, 2});
  b.send({register_tensor(8, d)});
  expect_data(b.read(tir(8, {2})), d);
}

TEST(BridgeTransfer, ExposingAnUnknownTensorReachesTheTargetAsAnError) {
  TestHost host(2);
  Session a(host.port(), 0), b(host.port(), 1);
  a.send({expose_local(tir(77, {1}), 5)});
  b.send({register_local(5, 9)});
  auto r = b.read(tir(9, {1}));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
  EXPECT_THAT(std::get<ExecutionError>(r).reason, HasSubstr("tensor #77 is unknown"));
}

TEST(BridgeTransfer, ARemotePeerThatNeverExposesTimesOut) {
  TestHost h1(1, 300ms), h2(1, 300ms);
  Session b(h2.port(), 0);
  const auto start = std::chrono::steady_clock::now();
  b.send({register_remote(0xdead, h1.peer(), 3)});
  auto s = b.sync(300ms + kSlack);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms + kSlack);
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(s));
  EXPECT_THAT(std::get<ExecutionError>(s).reason, HasSubstr("RegisterTensorRemote #3"));
  EXPECT_THAT(std::get<ExecutionError>(s).reason, HasSubstr("transfer 0xdead"));
  EXPECT_THAT(std::get<ExecutionError>(s).reason,
              AnyOf(HasSubstr("was not exposed in time"), HasSubstr("timed out after 300 ms")));
}

TEST(BridgeTransfer, AnUnreachablePeerIsAnError) {
  std::uint16_t closed_port = 0;
  {
    TestHost gone(1);
    closed_port = gone.port();
  }
  TestHost h2(1, 2s);
  Session b(h2.port(), 0);
  b.send({register_remote(1, Peer{PeerKind::WebSocket, Address{"ws", "127.0.0.1", closed_port}, {}},
                          3)});
  auto r = b.read(tir(3, {1}));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
  EXPECT_THAT(std::get<ExecutionError>(r).reason, HasSubstr("while connecting"));
}

TEST(BridgeTransfer, ExposingAnUnknownTensorToAnotherHostReachesItAsAnError) {
  TestHost h1(1), h2(1);
  Session a(h1.port(), 0), b(h2.port(), 0);
  a.send({expose_remote(tir(77, {1}), 0xbeef, h2.peer())});
  b.send({register_remote(0xbeef, h1.peer(), 4)});
  auto r = b.read(tir(4, {1}));
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(r));
  EXPECT_THAT(std::get<ExecutionError>(r).reason, HasSubstr("tensor #77 is unknown"));
}

}  // namespace
}  // namespace tb::test
