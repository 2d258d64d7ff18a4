#include "torchbridge/ir/codec.hpp"

#include <string>

#include <gtest/gtest.h>

#include "ir/test_util.hpp"
#include "torchbridge/ir/format.hpp"

namespace tb::ir {
namespace {

using test::hex_bytes;
using test::to_hex;

TensorIr tensor(std::uint64_t id, Dims dims, DType dtype = DTypeKind::F32,
                TensorStatus status = TensorStatus::ReadOnly) {
  return TensorIr{TensorId{id}, Shape{std::move(dims)}, status, dtype};
}

template <class T>
T round_trip(const T& value) {
  const auto bytes = encode(value);
  auto decoded = decode<T>(Bytes::copy_of(bytes.data(), bytes.size()));
  EXPECT_TRUE(decoded) << (decoded ? "" : decoded.error().what());
  if (!decoded) return T{};
  EXPECT_EQ(to_hex(encode(decoded.value())), to_hex(bytes));
  return decoded.value();
}

TEST(Codec, TensorIrLayoutIsBurns) {
  // [[id], [[dims]], status, dtype]
  const auto t = tensor(7, {2, 3});
  EXPECT_EQ(to_hex(encode(t)),
            "94"
            "9107"
            "91920203"
            "a8526561644f6e6c79"
            "a3463332");
  EXPECT_EQ(round_trip(t), t);
}

TEST(Codec, EveryDTypeRoundTrips) {
  for (std::size_t k = 0; k < EnumNames<DTypeKind>::kNames.size(); ++k) {
    DType d(static_cast<DTypeKind>(k));
    if (d.kind == DTypeKind::Bool) d.bool_store = BoolStore::U32;
    if (d.kind == DTypeKind::QFloat) {
      d.scheme = default_quant_scheme();
      d.scheme.value = QuantValue::Q4S;
      d.scheme.block = BlockScale{make_block_size({1, 32}), ScaleDtype::F16};
      d.scheme.tensor = ScaleDtype::F32;
    }
    EXPECT_EQ(round_trip(d), d) << d.name();
  }
  EXPECT_EQ(to_hex(encode(DType::boolean(BoolStore::Native))), "81a4426f6f6ca64e6174697665");
}

TEST(Codec, OperationsRoundTrip) {
  auto add = make_op<OpKind::NumericFloat_AddScalar>(
      ScalarOpIr{tensor(1, {2, 3}), ScalarIr::f(-2.5),
                 tensor(2, {2, 3}, DTypeKind::F32, TensorStatus::NotInit)},
      DTypeKind::F32);
  EXPECT_EQ(round_trip(add), add);

  auto sync = make_op<OpKind::Distributed_SyncCollective>(UnitPayload{});
  EXPECT_EQ(to_hex(encode(sync)), "81ab4469737472696275746564ae53796e63436f6c6c656374697665");
  EXPECT_EQ(round_trip(sync), sync);

  SliceOpIr slice{tensor(3, {5}), {Slice{-1, std::nullopt, -2}, Slice{0, -1, 1}}, tensor(4, {3})};
  auto op = make_op<OpKind::BaseInt_Slice>(slice);
  EXPECT_EQ(round_trip(op), op);

  CustomOpIr custom{"my_model", {tensor(5, {1})}, {tensor(6, {1})}, {ScalarIr::u(3)}};
  auto c = make_op<OpKind::Custom_Op>(custom);
  EXPECT_EQ(round_trip(c), c);
}

TEST(Codec, ErrorsNameThePathIntoTheValue) {
  // A frame whose AddScalar payload has two fields instead of three.
  Writer w;
  w.array(1);
  w.map(1);
  w.str("Task");
  w.map(1);
  w.str("RegisterOperation");
  w.array(2);
  encode(w, StreamId{1});
  w.map(1);
  w.str("NumericFloat");
  w.array(2);
  encode(w, DType(DTypeKind::F32));
  w.map(1);
  w.str("AddScalar");
  w.array(2);
  encode(w, tensor(1, {1}));
  encode(w, ScalarIr::f(1));
  auto result = decode<ClientFrame>(Bytes::from_vector(w.take()));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kDecode);
  EXPECT_EQ(result.error().what(),
            "ClientFrame[0] > Task > RegisterOperation > op > NumericFloat[1] > AddScalar: "
            "expected array of 3 elements, got 2");
}

TEST(Codec, UnknownVariantsNameTheVariantAndTheEnum) {
  Writer w;
  w.map(1);
  w.str("NumericFloat");
  w.array(2);
  w.str("F32");
  w.map(1);
  w.str("Frobnicate");
  w.nil();
  auto op = decode<OperationIr>(Bytes::from_vector(w.take()));
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().what(),
            "OperationIr > NumericFloat[1]: unknown variant \"Frobnicate\" of enum "
            "NumericOperationIr");

  Writer d;
  d.str("F128");
  auto dtype = decode<DType>(Bytes::from_vector(d.take()));
  ASSERT_FALSE(dtype);
  EXPECT_EQ(dtype.error().message, "unknown variant \"F128\" of enum DType");

  Writer m;
  m.array(1);
  m.map(1);
  m.str("Shutdown");
  m.nil();
  auto msg = decode<ClientFrame>(Bytes::from_vector(m.take()));
  ASSERT_FALSE(msg);
  EXPECT_NE(msg.error().message.find("unknown variant \"Shutdown\" of enum RemoteMessage"),
            std::string::npos);
}

TEST(Codec, WrongTypesAreClearErrors) {
  auto r = decode<TensorIr>(hex_bytes("a3616263"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("expected array, got string"), std::string::npos)
      << r.error().what();
}

TEST(Codec, HugeDeclaredLengthsAreRefusedBeforeAllocating) {
  // A ClientFrame claiming 2^32-1 messages in 5 bytes.
  auto r = decode<ClientFrame>(hex_bytes("ddffffffff"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("array declares 4294967295 elements"), std::string::npos);
  // A shape with 2^31 dims.
  auto t = decode<TensorIr>(hex_bytes("94910191dd80000000"));
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("array declares 2147483648 elements"), std::string::npos);
}

TEST(Codec, DeepNestingInAnOpaquePeerIsBounded) {
  // RegisterTensorRemote from an Iroh peer whose (opaque) address nests 1000 arrays deep.
  Writer w;
  w.map(1);
  w.str("RegisterTensorRemote");
  w.array(3);
  encode(w, StreamId{1});
  w.array(2);
  w.array(32);
  for (int i = 0; i < 32; ++i) w.u64(0);
  w.map(1);
  w.str("Iroh");
  const std::vector<std::uint8_t> nest(1000, 0x91);
  w.raw(nest.data(), nest.size());
  w.nil();
  encode(w, TensorId{2});
  auto r = decode<Task>(Bytes::from_vector(w.take()));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("nesting deeper than 64 levels"), std::string::npos)
      << r.error().what();
}

TEST(Codec, TensorDataLengthMustMatchShapeAndDType) {
  TensorData data{Bytes::copy_of("abcdefgh", 8), {2, 2}, DTypeKind::F32};  // needs 16 bytes
  Writer w;
  encode(w, data);
  auto r = decode<TensorData>(Bytes::from_vector(w.take()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "TensorData of shape 2x2 and dtype f32 needs 16 bytes, got 8");
}

TEST(Codec, TrailingBytesAreAnError) {
  auto r = decode<DType>(hex_bytes("a3463332c0"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("1 trailing byte(s)"), std::string::npos);
}

TEST(Codec, EveryPrefixOfAValidFrameFailsCleanly) {
  ClientFrame frame;
  frame.push_back(Task{ReadTensorTask{9, StreamId{3}, tensor(4, {2, 2})}});
  frame.push_back(Task{RegisterTensorTask{
      StreamId{3}, TensorId{5}, TensorData{Bytes::copy_of("abcd", 4), {4}, DTypeKind::U8}}});
  const auto bytes = encode(frame);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto r = decode<ClientFrame>(Bytes::copy_of(bytes.data(), n));
    EXPECT_FALSE(r) << "prefix of " << n << " bytes decoded";
  }
  EXPECT_TRUE(decode<ClientFrame>(Bytes::copy_of(bytes.data(), bytes.size())));
}

TEST(Codec, ResponsesRoundTrip) {
  TaskResponse ok{TaskResponseContent{ReadTensorResponse{
                      TensorData{Bytes::copy_of("\0\0\x80?", 4), {1}, DTypeKind::F32}}},
                  12};
  EXPECT_EQ(round_trip(ok), ok);
  TaskResponse err{TaskResponseContent{SyncBackendResponse{
                       ExecutionError{ExecutionErrorKind::WithContext, "boom"}}},
                   13};
  // {"SyncBackend": {"Err": {"WithContext": ["boom"]}}}
  EXPECT_EQ(to_hex(encode(err)),
            "92"
            "81ab53796e634261636b656e64"
            "81a3457272"
            "81ab57697468436f6e74657874"
            "91a4626f6f6d"
            "0d");
  EXPECT_EQ(round_trip(err), err);
  TaskResponse refused{TaskResponseContent{InitRefusedResponse{
                           SessionRefusal{RefusalKind::IncompatibleProtocol, 2}}},
                       0};
  // Burn's own test vector (burn-remote src/shared/task.rs).
  EXPECT_EQ(to_hex(encode(refused)),
            "9281ab496e697452656675736564"
            "81b4496e636f6d70617469626c6550726f746f636f6c"
            "910200");
}

}  // namespace
}  // namespace tb::ir
