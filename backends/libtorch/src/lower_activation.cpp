#include "lowering.hpp"

namespace tb::backend::libtorch {

void register_activation_ops(LoweringTable& t) {}

}  // namespace tb::backend::libtorch
