#include "lowering.hpp"

namespace tb::backend::libtorch {

void register_float_ops(LoweringTable& t) {}

}  // namespace tb::backend::libtorch
