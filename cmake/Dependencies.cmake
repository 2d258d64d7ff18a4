find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(msgpack REQUIRED CONFIG)  # msgpack-cxx: target msgpackc-cxx
find_package(CLI11 REQUIRED)

# LibTorch: Debian's libtorch-dev, or PyTorch's bundled one (set Torch_DIR / CMAKE_PREFIX_PATH).
find_package(Torch REQUIRED)
if(NOT TARGET tb_torch)
  add_library(tb_torch INTERFACE)
  target_include_directories(tb_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  target_link_libraries(tb_torch INTERFACE ${TORCH_LIBRARIES})
endif()
# TORCH_CXX_FLAGS carries -D_GLIBCXX_USE_CXX11_ABI for PyTorch's pre-built wheels: every target
# must agree on it, or std::string crosses library boundaries with two layouts.
separate_arguments(_tb_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
add_compile_options(${_tb_torch_flags})

if(TB_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(TB_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
