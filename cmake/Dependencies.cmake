find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(OpenSSL REQUIRED)  # TLS: wss:// and https:// (bridge/net/tls.hpp)
find_package(msgpack REQUIRED CONFIG)  # msgpack-cxx: target msgpackc-cxx
find_package(CLI11 REQUIRED)

# LibTorch: Debian's libtorch-dev, or PyTorch's bundled one (set Torch_DIR / CMAKE_PREFIX_PATH),
# or a PyTorch wheel's torch/ directory (TB_TORCH_ROOT, cmake/TorchWheel.cmake; the default: scripts/torch-env).
set(TB_TORCH_ROOT "" CACHE PATH "A PyTorch wheel's torch/ directory to build against")
# Our own wheel (pyproject.toml) builds against the torch of the Python that builds it.
if(TB_WHEEL AND NOT TB_TORCH_ROOT)
  find_package(Python COMPONENTS Interpreter REQUIRED)
  execute_process(COMMAND ${Python_EXECUTABLE} -c
                          "import os, torch; print(os.path.dirname(torch.__file__))"
                  OUTPUT_VARIABLE _tb_py_torch OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _tb_rc)
  if(NOT _tb_rc EQUAL 0)
    message(FATAL_ERROR "the torchbridge wheel builds against the torch of ${Python_EXECUTABLE}, "
                        "which cannot import it: pip install torch==2.15.* first")
  endif()
  set(TB_TORCH_ROOT "${_tb_py_torch}" CACHE PATH "" FORCE)
endif()
if(TB_TORCH_ROOT)
  include(TorchWheel)
else()
  find_package(Torch REQUIRED)
endif()
# PyTorch 2.13 and later need C++20 in code built on their headers.
if(Torch_VERSION VERSION_GREATER_EQUAL 2.13)
  set(CMAKE_CXX_STANDARD 20)
  # Boost 1.74's asio/awaitable.hpp (pulled in by asio.hpp when the compiler has coroutines) uses
  # std::exchange without including <utility>. The host uses no coroutines.
  add_compile_definitions(BOOST_ASIO_DISABLE_CO_AWAIT)
endif()
# The wheel's metadata pins torch==2.15.* (pyproject.toml): it must be built on that torch.
if(TB_WHEEL AND NOT Torch_VERSION MATCHES "^2\\.15\\.")
  message(FATAL_ERROR "the torchbridge wheel pins torch 2.15 (pyproject.toml), not ${Torch_VERSION}")
endif()
if(NOT TARGET tb_torch)
  add_library(tb_torch INTERFACE)
  target_include_directories(tb_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  target_link_libraries(tb_torch INTERFACE ${TORCH_LIBRARIES})
endif()
# Under UBSan, its alignment and null checks on LibTorch's inline header code (every Tensor member
# access) double the compile time of each translation unit that includes LibTorch (61 s against
# 30 s for tests/bridge/collective_test.cpp with ASan, -O1). Those units keep AddressSanitizer and
# every other UBSan check; the byte-level code (ir/, bridge/, the client: codecs and framing) does
# not link tb_torch and keeps them all.
if(TB_SANITIZE MATCHES "undefined")
  target_compile_options(tb_torch INTERFACE -fno-sanitize=alignment,null)
endif()
# PyTorch's LibTorch 2.x ships fmt's headers (fmt 11/12) inside its include root, which is searched
# before /usr/include: our code and spdlog would compile against those headers yet link Debian's
# libfmt (another major version). A directory holding only a link to the fmt we found goes first.
foreach(_tb_dir ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${_tb_dir}/fmt/core.h" AND NOT TARGET tb_fmt_first)
    get_target_property(_tb_fmt_inc fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _tb_fmt_inc)
      set(_tb_fmt_inc /usr/include)
    endif()
    list(GET _tb_fmt_inc 0 _tb_fmt_inc)
    set(_tb_shadow "${CMAKE_BINARY_DIR}/tb-fmt-first")
    file(MAKE_DIRECTORY "${_tb_shadow}")
    file(CREATE_LINK "${_tb_fmt_inc}/fmt" "${_tb_shadow}/fmt" SYMBOLIC)
    include_directories(BEFORE SYSTEM "${_tb_shadow}")
    message(STATUS "LibTorch bundles fmt headers (${_tb_dir}/fmt); using ${_tb_fmt_inc}/fmt first")
    add_library(tb_fmt_first INTERFACE)
  endif()
endforeach()

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
