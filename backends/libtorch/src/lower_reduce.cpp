#include "lowering.hpp"

namespace tb::backend::libtorch {

void register_reduce_ops(LoweringTable& t) {}

}  // namespace tb::backend::libtorch
