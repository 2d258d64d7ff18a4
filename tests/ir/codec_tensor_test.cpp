// The one-pass TensorIr read: it takes the forms Burn sends, gives every other form to the checked
// path, and decodes what that path decodes.
#include "codec_tensor.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/test_util.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::ir {
namespace {

using test::from_hex;

struct Scanned {
  bool taken = false;
  std::size_t used = 0;
  TensorIr value;
};

Scanned scan(const std::vector<std::uint8_t>& bytes) {
  Scanned s;
  s.taken = scan_tensor(bytes.data(), bytes.data() + bytes.size(), s.value, s.used);
  return s;
}

TensorIr tensor(std::uint64_t id, Dims dims, DType dtype, TensorStatus status) {
  return TensorIr{TensorId{id}, Shape{std::move(dims)}, status, dtype};
}

// What Burn's clients send, as our encoder writes it (rmp-serde's forms): every status, every
// dtype without payload, ids and dims in each integer width, ranks 0 to 15.
TEST(CodecTensor, TheFormsBurnSendsAreScannedInOnePass) {
  std::vector<TensorIr> cases;
  for (std::size_t k = 0; k < EnumNames<DTypeKind>::kNames.size(); ++k) {
    const auto kind = static_cast<DTypeKind>(k);
    if (kind == DTypeKind::Bool || kind == DTypeKind::QFloat) continue;
    for (auto status : {TensorStatus::ReadOnly, TensorStatus::ReadWrite, TensorStatus::NotInit}) {
      cases.push_back(tensor(55377, {500, 128}, kind, status));
    }
  }
  for (std::uint64_t big : {0x7fULL, 0xffULL, 0xffffULL, 0xffffffffULL, ~0ULL}) {
    cases.push_back(tensor(big, {big, 1, big}, DTypeKind::I64, TensorStatus::ReadWrite));
  }
  cases.push_back(tensor(3, {}, DTypeKind::F32, TensorStatus::ReadOnly));
  cases.push_back(tensor(3, Dims(15, 2), DTypeKind::F32, TensorStatus::ReadOnly));
  for (const auto& t : cases) {
    const auto bytes = encode(t);
    const auto s = scan(bytes);
    ASSERT_TRUE(s.taken) << "bytes " << test::to_hex(bytes);
    EXPECT_EQ(s.used, bytes.size());
    EXPECT_EQ(s.value, t);
  }
}

// Everything else goes to the checked path, which decodes it or names what is wrong.
TEST(CodecTensor, OtherFormsFallBackToTheCheckedPath) {
  const std::vector<TensorIr> others = {
      tensor(1, {2}, DType::boolean(BoolStore::U8), TensorStatus::ReadOnly),  // dtype payload
      tensor(1, {2}, DType::qfloat(default_quant_scheme()), TensorStatus::ReadOnly),
      tensor(1, Dims(16, 1), DTypeKind::F32, TensorStatus::ReadOnly),  // array16 of dims
  };
  for (const auto& t : others) {
    const auto bytes = encode(t);
    EXPECT_FALSE(scan(bytes).taken) << test::to_hex(bytes);
    const auto decoded = decode<TensorIr>(Bytes::copy_of(bytes.data(), bytes.size()));
    ASSERT_TRUE(decoded) << decoded.error().what();
    EXPECT_EQ(decoded.value(), t);
  }
  // A signed form of a non-negative id (rmp-serde never writes it; the checked path reads it).
  const auto int8_id = from_hex(
      "9491d007"
      "91920203"
      "a8526561644f6e6c79"
      "a3463332");
  EXPECT_FALSE(scan(int8_id).taken);
  const auto decoded = decode<TensorIr>(Bytes::copy_of(int8_id.data(), int8_id.size()));
  ASSERT_TRUE(decoded) << decoded.error().what();
  EXPECT_EQ(decoded.value(), tensor(7, {2, 3}, DTypeKind::F32, TensorStatus::ReadOnly));
}

// A name that is not a variant, or one that only shares a prefix or a length with one, is never
// taken for it: the checked path names it.
TEST(CodecTensor, NamesMatchWholly) {
  const std::vector<std::pair<std::string, std::string>> wrong = {
      {"a8526561644f6e6c78", "unknown variant \"ReadOnlx\" of enum TensorStatus"},
      {"a7526561644f6e6c", "unknown variant \"ReadOnl\" of enum TensorStatus"},
      {"a3463332", "unknown variant \"F32\" of enum TensorStatus"},
  };
  for (const auto& [status, message] : wrong) {
    const auto bytes = from_hex(
        "94"
        "9107"
        "91920203" +
        status + "a3463332");
    EXPECT_FALSE(scan(bytes).taken);
    const auto decoded = decode<TensorIr>(Bytes::copy_of(bytes.data(), bytes.size()));
    ASSERT_FALSE(decoded);
    EXPECT_NE(std::string(decoded.error().what()).find(message), std::string::npos)
        << decoded.error().what();
  }
  // "F32" with a NUL after it is four bytes, not F32.
  const auto padded = from_hex(
      "94"
      "9107"
      "91920203"
      "a8526561644f6e6c79"
      "a446333200");
  EXPECT_FALSE(scan(padded).taken);
  EXPECT_FALSE(decode<TensorIr>(Bytes::copy_of(padded.data(), padded.size())));
}

// A tensor cut anywhere is never scanned past its end; the checked path reports the cut.
TEST(CodecTensor, EveryPrefixIsRefusedWithoutReadingPastIt) {
  const auto bytes =
      encode(tensor(0xffffffffULL, {500, 70000}, DTypeKind::F32, TensorStatus::ReadWrite));
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    // A copy of exactly n bytes, so that the sanitizers catch a read past it.
    const std::vector<std::uint8_t> prefix(bytes.begin(), bytes.begin() + n);
    EXPECT_FALSE(scan(prefix).taken) << n;
    EXPECT_FALSE(decode<TensorIr>(Bytes::copy_of(prefix.data(), prefix.size()))) << n;
  }
}

}  // namespace
}  // namespace tb::ir
