// Links torchbridge::client from an installed prefix and exercises it without a host: address
// parsing, a refused connection reported as an error, and an error tensor.
#include <cstdio>

#include <torchbridge/client/client.hpp>
#include <torchbridge/version.hpp>

int main() {
  auto address = tb::client::parse_address("127.0.0.1:1");
  if (!address) return 1;
  tb::client::SessionOptions options;
  options.connect_timeout = std::chrono::milliseconds(2000);
  auto device =
      tb::client::Device::connect(tb::client::format_address(address.value()), 0, options);
  if (device) return 2;  // nothing listens on port 1
  auto t = tb::client::Tensor::failed(device.error());
  auto read = (t * 2.0).exp().to_vector<float>();  // a member form, from the installed library
  if (read) return 3;
  std::printf("torchbridge %s client linked; connecting to port 1: %s\n",
              std::string(tb::kVersion).c_str(), read.error().what().c_str());
  return 0;
}
