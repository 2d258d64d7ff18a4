// Golden vectors: real Burn values serialised by Burn's own serde code, one file per served Burn
// version (tests/interop and tests/interop-0.23, their `golden` generators). Every vector must
// decode and re-encode, in its version's layouts, to the identical bytes, and every leaf, task and
// response of a version must have at least one in that version's file.
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

// The vector file of each served wire version.
struct VersionFile {
  std::uint16_t protocol;
  const char* path;
};
constexpr VersionFile kFiles[] = {{2, TB_GOLDEN_VECTORS}, {6, TB_GOLDEN_VECTORS_023}};

std::vector<Vector> load(const char* path) {
  std::vector<Vector> out;
  std::ifstream in(path);
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
}

const std::vector<Vector>& vectors(std::uint16_t protocol = 2) {
  static const std::vector<Vector> v2 = load(kFiles[0].path);
  static const std::vector<Vector> v6 = load(kFiles[1].path);
  return protocol == 2 ? v2 : v6;
}

using Recode = std::function<Result<std::vector<std::uint8_t>>(const Bytes&, std::uint16_t)>;

template <class T>
Recode recode() {
  return [](const Bytes& bytes, std::uint16_t protocol) -> Result<std::vector<std::uint8_t>> {
    TB_TRY_ASSIGN(auto value, decode<T>(bytes));
    Writer writer;
    writer.set_protocol(protocol);
    encode(writer, value);
    return writer.take();
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
  ASSERT_GT(vectors(2).size(), 300u) << TB_GOLDEN_VECTORS;
  ASSERT_GT(vectors(6).size(), 300u) << TB_GOLDEN_VECTORS_023;
}

TEST(Golden, EveryVectorDecodesAndReencodesIdentically) {
  for (const auto& file : kFiles) {
    std::size_t checked = 0;
    for (const auto& v : vectors(file.protocol)) {
      const auto it = recoders().find(v.kind);
      ASSERT_NE(it, recoders().end()) << "no decoder for vector kind " << v.kind;
      const auto bytes = test::from_hex(v.hex);
      auto out = it->second(Bytes::copy_of(bytes.data(), bytes.size()), file.protocol);
      ASSERT_TRUE(out) << file.path << ": " << v.kind << " " << v.name << ": "
                       << out.error().what();
      EXPECT_EQ(test::to_hex(out.value()), v.hex) << file.path << ": " << v.kind << " " << v.name;
      ++checked;
    }
    EXPECT_EQ(checked, vectors(file.protocol).size());
  }
}

TEST(Golden, EveryOperationLeafOfEachVersionHasAVector) {
  for (const auto& file : kFiles) {
    std::set<std::string> seen;
    for (const auto& v : vectors(file.protocol))
      if (v.kind == "op") seen.insert(base_name(v.name));
    for (std::size_t k = 0; k < kOpKindCount; ++k) {
      const auto kind = static_cast<OpKind>(k);
      const std::string name(op_name(kind));
      if (op_on_wire(kind, file.protocol)) {
        EXPECT_TRUE(seen.count(name)) << file.path << ": no golden vector for op " << name;
      } else {
        EXPECT_FALSE(seen.count(name)) << file.path << ": " << name << " is not of this version";
      }
    }
  }
}

// The leaf count Burn's generator counted in the crate (`# leaves: N`) is the tables' count for
// that version: a leaf the tables lack, or one they hold beyond the crate's, fails here without a
// number written in any test.
TEST(Golden, EachVersionHasTheCratesLeafCount) {
  for (const auto& file : kFiles) {
    std::ifstream in(file.path);
    std::size_t crate = 0;
    for (std::string line; std::getline(in, line) && line.rfind('#', 0) == 0;) {
      if (line.rfind("# leaves: ", 0) == 0) crate = std::stoul(line.substr(10));
    }
    ASSERT_GT(crate, 0u) << file.path << " names no `# leaves: N`";
    std::size_t tables = 0;
    for (std::size_t k = 0; k < kOpKindCount; ++k) {
      tables += op_on_wire(static_cast<OpKind>(k), file.protocol);
    }
    EXPECT_EQ(tables, crate) << file.path;
  }
}

TEST(Golden, EveryTaskAndResponseOfEachVersionHasAVector) {
  for (const auto& file : kFiles) {
    std::set<std::string> frames, responses;
    for (const auto& v : vectors(file.protocol)) {
      if (v.kind == "frame") frames.insert(base_name(v.name));
      if (v.kind == "response") responses.insert(base_name(v.name));
    }
#define TB_EXPECT_TASK(V, P, W)                                                           \
  if (TB_WIRE_##W.has(file.protocol)) {                                                   \
    EXPECT_TRUE(frames.count("Task." #V)) << file.path << ": no vector for Task::" #V;    \
  } else {                                                                                \
    EXPECT_FALSE(frames.count("Task." #V)) << file.path << ": Task::" #V " is not of it"; \
  }
    TB_TASKS(TB_EXPECT_TASK)
#undef TB_EXPECT_TASK
    // ReadTensor answers exist in protocol 2 only, ReadTensors answers in 6 only.
    const std::set<std::string> v2_only{"ReadTensor"}, v6_only{"ReadTensors"};
#define TB_EXPECT_RESPONSE(V, P)                                                     \
  if (!(file.protocol == 2 ? v6_only : v2_only).count(#V)) {                         \
    EXPECT_TRUE(responses.count(#V)) << file.path << ": no vector for response " #V; \
  }
    TB_RESPONSES(TB_EXPECT_RESPONSE)
#undef TB_EXPECT_RESPONSE
    EXPECT_TRUE(frames.count("Init")) << file.path;
    EXPECT_TRUE(frames.count("Close")) << file.path;
  }
}

TEST(Golden, EveryDTypeHasAVector) {
  for (const auto& file : kFiles) {
    std::set<std::string> seen;
    for (const auto& v : vectors(file.protocol))
      if (v.kind == "dtype") seen.insert(v.name.substr(0, v.name.find_first_of("./")));
    for (auto name : EnumNames<DTypeKind>::kNames)
      EXPECT_TRUE(seen.count(std::string(name))) << file.path << ": no vector for DType::" << name;
  }
}

// Decoding must survive any corruption of real frames: flip each byte of each vector in turn.
TEST(Golden, CorruptedVectorsNeverCrash) {
  std::size_t failures = 0;
  std::vector<Vector> all = vectors(2);
  all.insert(all.end(), vectors(6).begin(), vectors(6).end());
  for (const auto& v : all) {
    const auto it = recoders().find(v.kind);
    if (it == recoders().end()) continue;
    auto bytes = test::from_hex(v.hex);
    const std::size_t step = bytes.size() > 512 ? bytes.size() / 256 : 1;
    for (std::size_t i = 0; i < bytes.size(); i += step) {
      auto corrupted = bytes;
      corrupted[i] ^= 0xa5;
      auto out = it->second(Bytes::copy_of(corrupted.data(), corrupted.size()), 2);
      if (!out) ++failures;
    }
  }
  EXPECT_GT(failures, 0u);
}

}  // namespace
}  // namespace tb::ir
