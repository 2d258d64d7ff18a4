// libFuzzer target for the frame decoder: every byte string the host can receive, decoded as what
// the host decodes it as (a `/session` frame, a `/data` message) and as what the client side of a
// transfer or a test decodes (a response). Decoding must never crash, read out of bounds or hit
// undefined behaviour; a value that decodes must re-encode to bytes that decode to the same
// encoding (the codec has one canonical form).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "torchbridge/ir/codec.hpp"

namespace {

template <class T>
void check(const tb::ir::Bytes& input, const char* what) {
  auto value = tb::ir::decode<T>(input);
  if (!value) return;
  const std::vector<std::uint8_t> once = tb::ir::encode(value.value());
  auto again = tb::ir::decode<T>(tb::ir::Bytes::from_vector(once));
  if (!again) {
    std::fprintf(stderr, "%s: the re-encoding of a decoded value does not decode: %s\n", what,
                 again.error().what().c_str());
    std::abort();
  }
  if (tb::ir::encode(again.value()) != once) {
    std::fprintf(stderr, "%s: encode(decode(encode(x))) differs from encode(x)\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A private copy, so reads past `size` hit ASan's redzone instead of libFuzzer's buffer slack.
  const auto input = tb::ir::Bytes::copy_of(data, size);
  check<tb::ir::ClientFrame>(input, "ClientFrame");
  check<tb::ir::DataMessage>(input, "DataMessage");
  check<tb::ir::TaskResponse>(input, "TaskResponse");
  return 0;
}
