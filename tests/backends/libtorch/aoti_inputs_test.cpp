// Reading the input checks AOTInductor generates into a package's wrapper source
// (aoti_inputs.hpp). The snippets below are cut from a package made by PyTorch 2.15
// (tests/models/make_aoti_models.py), so this runs in every build, whatever its LibTorch.
#include "models/aoti_inputs.hpp"

#include <gmock/gmock.h>

namespace tb::test {
namespace {

using backend::libtorch::detail::parse_input_checks;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two inputs: arg1_1 float32 [2..64, 3] (a dynamic batch), arg10_1 int64 [4]; names whose
// spellings overlap, as generated names do once there are ten inputs.
const char* const kWrapper = R"cpp(
  inputs_info_[0].name = "arg1_1";
  inputs_info_[1].name = "arg10_1";
  AOTI_NOINLINE static void check_input_0(AtenTensorHandle* input_handles) {
    ConstantHandle arg1_1 = ConstantHandle(input_handles[0]);
    int32_t arg1_1_dtype;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(arg1_1, &arg1_1_dtype));

    int32_t arg1_1_expected_dtype = aoti_torch_dtype_float32();
    auto arg1_1_size = arg1_1.sizes();

    if (arg1_1_size[0] < 2) {
      std::stringstream ss;
      ss << "input_handles[0]: dim value is too small at 0, "
         << "expected it to be >= 2, "
         << "but got: " << arg1_1_size[0] << "\n";
      throw std::runtime_error(std::move(ss).str());
    }
    if (arg1_1_size[0] > 64) {
      throw std::runtime_error(std::move(ss).str());
    }

    if (3 != arg1_1_size[1]) {
      throw std::runtime_error(std::move(ss).str());
    }
  }
  AOTI_NOINLINE static void check_input_1(AtenTensorHandle* input_handles) {
    ConstantHandle arg10_1 = ConstantHandle(input_handles[1]);
    int32_t arg10_1_expected_dtype = aoti_torch_dtype_int64();
    auto arg10_1_size = arg10_1.sizes();

    if (4 != arg10_1_size[0]) {
      throw std::runtime_error(std::move(ss).str());
    }
  }
  int64_t s77 = arg1_1_size[0];
)cpp";

TEST(AotiInputChecks, RankDtypeAndDimsOfEachInput) {
  auto inputs = parse_input_checks(kWrapper, 2);
  ASSERT_TRUE(inputs) << inputs.error().what();
  ASSERT_EQ(inputs.value().size(), 2u);
  EXPECT_EQ(inputs.value()[0].name, "arg1_1");
  EXPECT_EQ(inputs.value()[0].dtype, "float32");
  EXPECT_THAT(inputs.value()[0].dims, ElementsAre("2..64", "3"));
  EXPECT_EQ(inputs.value()[1].name, "arg10_1");
  EXPECT_EQ(inputs.value()[1].dtype, "int64");
  EXPECT_THAT(inputs.value()[1].dims, ElementsAre("4"));
}

TEST(AotiInputChecks, ASourceThatDisagreesWithTheCallSpecIsAnError) {
  auto more = parse_input_checks(kWrapper, 3);
  ASSERT_FALSE(more);
  EXPECT_THAT(more.error().what(), HasSubstr("names 2 input(s), its call spec 3"));
  auto none = parse_input_checks("int main() {}", 1);
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().what(), HasSubstr("names 0 input(s), its call spec 1"));
  auto unchecked = parse_input_checks(R"(inputs_info_[0].name = "arg0_1";)", 1);
  ASSERT_FALSE(unchecked);
  EXPECT_THAT(unchecked.error().what(), HasSubstr("no input check for input 0 (arg0_1)"));
}

// A number past int in the source was std::stoi's out_of_range, thrown through the loader.
TEST(AotiInputChecks, AnIndexPastIntIsAnErrorNotAThrow) {
  const std::string source = R"cpp(inputs_info_[99999999999].name = "arg0_1";)cpp";
  auto parsed = parse_input_checks(source, 1);
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().what(), HasSubstr("names input 99999999999"));
  const std::string sizes =
      std::string(R"cpp(inputs_info_[0].name = "arg0_1";)cpp") + " arg0_1_size[4294967296] ";
  auto ranked = parse_input_checks(sizes, 1);
  ASSERT_FALSE(ranked);
  EXPECT_THAT(ranked.error().what(), HasSubstr("size[4294967296]"));
}

}  // namespace
}  // namespace tb::test
