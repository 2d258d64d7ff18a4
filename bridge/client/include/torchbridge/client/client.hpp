// The torchbridge C++ client: Burn's remote protocol from C++ (link torchbridge::client).
#pragma once

#include "torchbridge/client/device.hpp"
#include "torchbridge/client/tensor.hpp"
