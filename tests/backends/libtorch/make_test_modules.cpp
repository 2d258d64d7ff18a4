// tb_make_test_modules OUTDIR: writes the test TorchScript modules (test_modules.hpp) as
// OUTDIR/<name>.pt, for the interop suite and examples/torchscript. Prints one path per line.
#include <filesystem>
#include <iostream>

#include "backends/libtorch/test_modules.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tb_make_test_modules OUTDIR\n";
    return 2;
  }
  try {
    std::filesystem::create_directories(argv[1]);
    for (const auto& path : tb::test::write_test_modules(argv[1])) std::cout << path << "\n";
  } catch (const std::exception& e) {
    std::cerr << "tb_make_test_modules: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
