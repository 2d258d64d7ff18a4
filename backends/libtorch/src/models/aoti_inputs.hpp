// What AOTInductor's generated input checks test, read from a package's wrapper source.
//
// The host needs each input's rank before a call: the generated checks compare sizes()[k] and
// strides()[k] for every dimension k the package was compiled for without testing the tensor's
// own rank, so a tensor of lower rank would have its sizes read past their end and could pass.
// No runtime API of AOTInductor gives input shapes; the wrapper source, which
// aoti_compile_and_package puts in every package, states them in the checks it generates.
#pragma once

#include <string>
#include <vector>

#include "torchbridge/libtorch/aoti.hpp"
#include "torchbridge/result.hpp"

namespace tb::backend::libtorch::detail {

// Per input, in order: its name (`inputs_info_[i].name = "arg2_1";`), its rank (one more than the
// highest k in `arg2_1_size[k]`), its dtype (`arg2_1_expected_dtype = aoti_torch_dtype_float32()`)
// and its dims (`if (4 != arg2_1_size[1])`, or `arg2_1_size[0] < 2` and `> 64` for a dynamic one).
// An error when the source does not name `inputs` inputs.
Result<std::vector<AotiInput>> parse_input_checks(const std::string& source, int inputs);

}  // namespace tb::backend::libtorch::detail
