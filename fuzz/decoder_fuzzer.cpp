// libFuzzer target for the frame decoder: every byte string the host can receive, decoded as what
// the host decodes it as (a `/session` frame, a `/data` message) and as what the client side of a
// transfer or a test decodes (a response). Decoding must never crash, read out of bounds or hit
// undefined behaviour; a value that decodes must re-encode to bytes that decode to the same
// encoding (the codec has one canonical form).
#include <cstddef>
#include <cstdint>

#include "canonical.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A private copy, so reads past `size` hit ASan's redzone instead of libFuzzer's buffer slack.
  const auto input = tb::ir::Bytes::copy_of(data, size);
  tb::fuzz::decodes_canonically<tb::ir::ClientFrame>(input, "ClientFrame");
  tb::fuzz::decodes_canonically<tb::ir::DataMessage>(input, "DataMessage");
  tb::fuzz::decodes_canonically<tb::ir::TaskResponse>(input, "TaskResponse");
  return 0;
}
