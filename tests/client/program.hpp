// One C++ tensor program, run unchanged against any Burn remote host: our host in the unit tests,
// our host and Burn's reference server side by side in the interop test. Each case is one result
// read back, with the value Burn's definitions give (worked out by hand).
#pragma once

#include <string>
#include <vector>

#include "torchbridge/client/client.hpp"

namespace tb::test {

struct CaseResult {
  std::string name;
  Result<std::vector<double>> values;
  std::vector<double> expected;
  double tolerance = 1e-4;
};

// Runs every case on `device` (and, for the transfer cases, `other` when it is valid: another
// device of the same host or of another host).
std::vector<CaseResult> run_program(const client::Device& device, const client::Device& other = {});

// Empty when `values` match `expected` within `tolerance` (absolute, plus relative to the size).
std::string mismatch(const std::vector<double>& values, const std::vector<double>& expected,
                     double tolerance);

}  // namespace tb::test
