# LibTorch from a PyTorch wheel's torch/ directory (TB_TORCH_ROOT), without the wheel's own
# TorchConfig.cmake: on a machine without the CUDA toolkit, that config's Caffe2 part resolves
# `torch` and `c10` to whatever LibTorch the system has (Debian's 1.13 here) and mixes the two.
#
# Only the CPU libraries are linked: libtorch_cpu (ATen, autograd, TorchScript, AOTInductor's
# package loader) and libc10. libtorch_cpu still needs libcudart and libcupti at load time; its
# RPATH looks for them in ../../nvidia/cu13/lib, where pip (or scripts/torch2-env) puts the two
# small nvidia wheels beside torch/.
set(_tb_root "${TB_TORCH_ROOT}")
set(_tb_version_h "${_tb_root}/include/torch/headeronly/version.h")
if(NOT EXISTS "${_tb_version_h}")
  set(_tb_version_h "${_tb_root}/include/torch/csrc/api/include/torch/version.h")
endif()
if(NOT EXISTS "${_tb_version_h}" OR NOT EXISTS "${_tb_root}/lib/libtorch_cpu.so")
  message(FATAL_ERROR "TB_TORCH_ROOT=${_tb_root} is not a torch/ directory of a PyTorch wheel "
                      "(no include/torch/.../version.h or lib/libtorch_cpu.so)")
endif()
file(STRINGS "${_tb_version_h}" _tb_version_lines REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
set(Torch_VERSION "")
foreach(_part MAJOR MINOR PATCH)
  string(REGEX MATCH "TORCH_VERSION_${_part} ([0-9]+)" _ "${_tb_version_lines}")
  list(APPEND Torch_VERSION "${CMAKE_MATCH_1}")
endforeach()
list(JOIN Torch_VERSION "." Torch_VERSION)

set(TORCH_INCLUDE_DIRS "${_tb_root}/include" "${_tb_root}/include/torch/csrc/api/include")
# Wheels since 2.7 are built with the C++11 string ABI, the compiler's default; older ones are not.
set(TORCH_CXX_FLAGS "")
if(Torch_VERSION VERSION_LESS 2.7)
  set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")
endif()

add_library(tb_torch INTERFACE)
target_include_directories(tb_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
# --no-as-needed: operator registration lives in static initialisers of libtorch_cpu that nothing
# references by symbol; an as-needed link could drop the library from a test binary.
target_link_libraries(tb_torch INTERFACE "-Wl,--no-as-needed" "${_tb_root}/lib/libtorch_cpu.so"
                                         "${_tb_root}/lib/libc10.so" "-Wl,--as-needed")
# An RPATH (not RUNPATH) to the wheel, so the binaries run without LD_LIBRARY_PATH and the wheel's
# libraries win over Debian's LibTorch in /usr/lib.
target_link_options(tb_torch INTERFACE "-Wl,--disable-new-dtags" "-Wl,-rpath,${_tb_root}/lib")
message(STATUS "LibTorch ${Torch_VERSION} from the wheel at ${_tb_root} (CPU libraries only)")
