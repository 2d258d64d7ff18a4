#include "lowering.hpp"

namespace tb::backend::libtorch {

void register_int_bool_ops(LoweringTable& t) {}

}  // namespace tb::backend::libtorch
