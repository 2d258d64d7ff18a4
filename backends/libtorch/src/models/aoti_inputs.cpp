// Reading AOTInductor's generated input checks (aoti_inputs.hpp).
#include "models/aoti_inputs.hpp"

#include <limits>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "torchbridge/decimal.hpp"

namespace tb::backend::libtorch::detail {

namespace {

// The first number captured by `pattern` in `source`, or "" when it does not occur.
std::string first_match(const std::string& source, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(source, m, std::regex(pattern)) ? m[1].str() : std::string();
}

}  // namespace

Result<std::vector<AotiInput>> parse_input_checks(const std::string& source, int inputs) {
  std::map<int, std::string> names;
  static const std::regex name_line(R"re(inputs_info_\[(\d+)\]\.name = "(\w+)";)re");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), name_line);
       it != std::sregex_iterator(); ++it) {
    const auto index = parse_decimal<int>((*it)[1].str());
    if (!index) {
      return make_error(ErrorCode::kInvalidArgument, "its wrapper source names input {}",
                        (*it)[1].str());
    }
    names[*index] = (*it)[2].str();
  }
  if (static_cast<int>(names.size()) != inputs ||
      (inputs > 0 && names.rbegin()->first != inputs - 1)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "its wrapper source names {} input(s), its call spec {}", names.size(),
                      inputs);
  }
  std::vector<AotiInput> out;
  for (const auto& [index, name] : names) {
    AotiInput in;
    in.name = name;
    int rank = 0;
    const std::regex size_use(R"re(\b)re" + name + R"re(_size\[(\d+)\])re");
    for (auto it = std::sregex_iterator(source.begin(), source.end(), size_use);
         it != std::sregex_iterator(); ++it) {
      const auto dim = parse_decimal<int>((*it)[1].str(), std::numeric_limits<int>::max() - 1);
      if (!dim) {
        return make_error(ErrorCode::kInvalidArgument, "its wrapper source reads {}'s size[{}]",
                          name, (*it)[1].str());
      }
      rank = std::max(rank, *dim + 1);
    }
    in.dtype = first_match(
        source, R"re(\b)re" + name + R"re(_expected_dtype = aoti_torch_dtype_(\w+)\(\))re");
    if (in.dtype.empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "its wrapper source has no input check for input {} ({})", index, name);
    }
    for (int k = 0; k < rank; ++k) {
      const std::string at = fmt::format(R"re(\b{}_size\[{}\])re", name, k);
      const std::string fixed = first_match(source, fmt::format(R"re(\((\d+) != {}\))re", at));
      const std::string low = first_match(source, fmt::format(R"re(\({} < (\d+)\))re", at));
      const std::string high = first_match(source, fmt::format(R"re(\({} > (\d+)\))re", at));
      if (!fixed.empty()) {
        in.dims.push_back(fixed);
      } else {
        in.dims.push_back(fmt::format("{}..{}", low.empty() ? "0" : low, high.empty() ? "" : high));
      }
    }
    out.push_back(std::move(in));
  }
  return out;
}

}  // namespace tb::backend::libtorch::detail
