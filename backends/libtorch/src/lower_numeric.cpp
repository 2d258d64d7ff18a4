#include "lowering.hpp"

namespace tb::backend::libtorch {

void register_numeric_ops(LoweringTable& t) {}

}  // namespace tb::backend::libtorch
