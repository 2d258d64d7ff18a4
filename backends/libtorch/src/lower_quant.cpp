#include "lowering.hpp"

namespace tb::backend::libtorch {

void register_quant_ops(LoweringTable& t) {}

}  // namespace tb::backend::libtorch
