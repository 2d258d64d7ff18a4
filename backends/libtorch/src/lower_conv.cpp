#include "lowering.hpp"

namespace tb::backend::libtorch {

void register_conv_ops(LoweringTable& t) {}

}  // namespace tb::backend::libtorch
