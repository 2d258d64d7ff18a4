# LibTorch from a PyTorch wheel's torch/ directory (TB_TORCH_ROOT), without the wheel's own
# TorchConfig.cmake: on a machine without the CUDA toolkit, that config's Caffe2 part resolves
# `torch` and `c10` to whatever LibTorch the system has (Debian's 1.13 here) and mixes the two.
#
# Linked: libtorch_cpu (ATen, autograd, TorchScript, AOTInductor's package loader, c10d with Gloo)
# and libc10, and where the wheel is a CUDA build, libtorch_cuda and libc10_cuda: they register
# ATen's CUDA kernels and allocator, so one binary serves --device cpu anywhere and --device cuda:N
# wherever an NVIDIA driver and GPU are present. Without a driver they still load (CUDA is opened
# lazily), and every CUDA library they need comes from the nvidia wheels beside torch/ through the
# wheel's own RPATHs. TB_TORCH_CUDA=OFF links the CPU libraries alone.
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

option(TB_TORCH_CUDA "Link the wheel's CUDA libraries (libtorch_cuda) where it has them" ON)
set(_tb_torch_libs "${_tb_root}/lib/libtorch_cpu.so" "${_tb_root}/lib/libc10.so")
set(TB_TORCH_HAS_CUDA OFF)
if(TB_TORCH_CUDA AND EXISTS "${_tb_root}/lib/libtorch_cuda.so")
  list(APPEND _tb_torch_libs "${_tb_root}/lib/libtorch_cuda.so" "${_tb_root}/lib/libc10_cuda.so")
  set(TB_TORCH_HAS_CUDA ON)
endif()

add_library(tb_torch INTERFACE)
target_include_directories(tb_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
# --no-as-needed: operator registration lives in static initialisers of libtorch_cpu (and the CUDA
# kernels' in libtorch_cuda) that nothing references by symbol; an as-needed link would drop them.
target_link_libraries(tb_torch INTERFACE "-Wl,--no-as-needed" ${_tb_torch_libs} "-Wl,--as-needed")
# An RPATH (not RUNPATH) to the wheel, so the binaries run without LD_LIBRARY_PATH and the wheel's
# libraries win over Debian's LibTorch in /usr/lib. Our own wheel's executable (TB_WHEEL) is
# installed with a relative one instead (bridge/cli/CMakeLists.txt).
target_link_options(tb_torch INTERFACE "-Wl,--disable-new-dtags")
if(NOT TB_WHEEL)
  target_link_options(tb_torch INTERFACE "-Wl,-rpath,${_tb_root}/lib")
endif()
if(TB_TORCH_HAS_CUDA)
  message(STATUS "LibTorch ${Torch_VERSION} from the wheel at ${_tb_root} (CPU and CUDA)")
else()
  message(STATUS "LibTorch ${Torch_VERSION} from the wheel at ${_tb_root} (CPU only)")
endif()
