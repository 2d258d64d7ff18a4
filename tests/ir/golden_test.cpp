// Golden vectors: real Burn values serialised by Burn's own serde code (tests/interop, the
// `golden` generator). Every vector must decode and re-encode to the identical bytes, and every
// leaf of the op tables, every task and every response must have at least one.
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/test_util.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::ir {
namespace {

struct Vector {
  std::string kind;
  std::string name;
  std::string hex;
};

const std::vector<Vector>& vectors() {
  static const std::vector<Vector> all = [] {
    std::vector<Vector> out;
    std::ifstream in(TB_GOLDEN_VECTORS);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      Vector v;
      std::getline(fields, v.kind, '\t');
      std::getline(fields, v.name, '\t');
      std::getline(fields, v.hex, '\t');
      out.push_back(std::move(v));
    }
    return out;
  }();
  return all;
}

using Recode = std::function<Result<std::vector<std::uint8_t>>(const Bytes&)>;

template <class T>
Recode recode() {
  return [](const Bytes& bytes) -> Result<std::vector<std::uint8_t>> {
    TB_TRY_ASSIGN(auto value, decode<T>(bytes));
    return encode(value);
  };
}

const std::map<std::string, Recode>& recoders() {
  static const std::map<std::string, Recode> m = {
      {"op", recode<OperationIr>()},         {"dtype", recode<DType>()},
      {"tensor_data", recode<TensorData>()}, {"settings", recode<DeviceSettings>()},
      {"frame", recode<ClientFrame>()},      {"response", recode<TaskResponse>()},
      {"data", recode<DataMessage>()},
  };
  return m;
}

std::string base_name(const std::string& name) {
  return name.substr(0, name.find('/'));
}

TEST(Golden, FixtureIsPresent) {
  ASSERT_GT(vectors().size(), 300u) << TB_GOLDEN_VECTORS;
}

TEST(Golden, EveryVectorDecodesAndReencodesIdentically) {
  std::size_t checked = 0;
  for (const auto& v : vectors()) {
    const auto it = recoders().find(v.kind);
    ASSERT_NE(it, recoders().end()) << "no decoder for vector kind " << v.kind;
    const auto bytes = test::from_hex(v.hex);
    auto out = it->second(Bytes::copy_of(bytes.data(), bytes.size()));
    ASSERT_TRUE(out) << v.kind << " " << v.name << ": " << out.error().what();
    EXPECT_EQ(test::to_hex(out.value()), v.hex) << v.kind << " " << v.name;
    ++checked;
  }
  EXPECT_EQ(checked, vectors().size());
}

TEST(Golden, EveryOperationLeafHasAVector) {
  std::set<std::string> seen;
  for (const auto& v : vectors())
    if (v.kind == "op") seen.insert(base_name(v.name));
  for (std::size_t k = 0; k < kOpKindCount; ++k) {
    const std::string name(op_name(static_cast<OpKind>(k)));
    EXPECT_TRUE(seen.count(name)) << "no golden vector for op " << name;
  }
}

TEST(Golden, EveryTaskAndResponseHasAVector) {
  std::set<std::string> frames, responses;
  for (const auto& v : vectors()) {
    if (v.kind == "frame") frames.insert(base_name(v.name));
    if (v.kind == "response") responses.insert(base_name(v.name));
  }
#define TB_EXPECT_TASK(V, P) EXPECT_TRUE(frames.count("Task." #V)) << "no vector for Task::" #V;
  TB_TASKS(TB_EXPECT_TASK)
#undef TB_EXPECT_TASK
#define TB_EXPECT_RESPONSE(V, P) EXPECT_TRUE(responses.count(#V)) << "no vector for response " #V;
  TB_RESPONSES(TB_EXPECT_RESPONSE)
#undef TB_EXPECT_RESPONSE
  EXPECT_TRUE(frames.count("Init"));
  EXPECT_TRUE(frames.count("Close"));
}

TEST(Golden, EveryDTypeHasAVector) {
  std::set<std::string> seen;
  for (const auto& v : vectors())
    if (v.kind == "dtype") seen.insert(v.name.substr(0, v.name.find_first_of("./")));
  for (auto name : EnumNames<DTypeKind>::kNames)
    EXPECT_TRUE(seen.count(std::string(name))) << "no vector for DType::" << name;
}

// Decoding must survive any corruption of real frames: flip each byte of each vector in turn.
TEST(Golden, CorruptedVectorsNeverCrash) {
  std::size_t failures = 0;
  for (const auto& v : vectors()) {
    const auto it = recoders().find(v.kind);
    if (it == recoders().end()) continue;
    auto bytes = test::from_hex(v.hex);
    const std::size_t step = bytes.size() > 512 ? bytes.size() / 256 : 1;
    for (std::size_t i = 0; i < bytes.size(); i += step) {
      auto corrupted = bytes;
      corrupted[i] ^= 0xa5;
      auto out = it->second(Bytes::copy_of(corrupted.data(), corrupted.size()));
      if (!out) ++failures;
    }
  }
  EXPECT_GT(failures, 0u);
}

}  // namespace
}  // namespace tb::ir
