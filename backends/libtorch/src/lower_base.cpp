#include "lowering.hpp"

namespace tb::backend::libtorch {

void register_base_ops(LoweringTable& t) {}

}  // namespace tb::backend::libtorch
