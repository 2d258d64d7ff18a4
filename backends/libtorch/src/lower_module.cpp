#include "lowering.hpp"

namespace tb::backend::libtorch {

void register_module_ops(LoweringTable& t) {}

}  // namespace tb::backend::libtorch
