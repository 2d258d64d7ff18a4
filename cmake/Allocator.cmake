# The torchbridge executable's malloc. ATen allocates and frees at least one tensor per op, and a
# host running Burn's op-heavy programs (LU, QR, CTC: thousands of ops on small tensors) spent
# 10-25% more CPU under glibc's malloc than under gperftools' tcmalloc (docs/benchmarks.md, Dec 7).
# PyTorch's own CPU performance guide preloads tcmalloc or jemalloc for the same reason; we link it.
#
# TB_ALLOCATOR: auto (tcmalloc where the system has it: Debian's libtcmalloc-minimal4, which
# scripts/setup installs), tcmalloc (an error without it) or system. Sanitizer builds keep the
# system's: ASan replaces malloc itself.
set(TB_ALLOCATOR "auto" CACHE STRING "malloc of the torchbridge executable: auto, tcmalloc, system")
set_property(CACHE TB_ALLOCATOR PROPERTY STRINGS auto tcmalloc system)
if(NOT TB_ALLOCATOR MATCHES "^(auto|tcmalloc|system)$")
  message(FATAL_ERROR "TB_ALLOCATOR must be auto, tcmalloc or system, not '${TB_ALLOCATOR}'")
endif()

set(TB_MALLOC "glibc")
if(NOT TB_ALLOCATOR STREQUAL "system" AND NOT TB_SANITIZE)
  # The minimal build: no heap profiler, no libunwind (nothing we use needs them).
  find_library(TB_TCMALLOC_LIBRARY NAMES tcmalloc_minimal libtcmalloc_minimal.so.4)
  if(TB_TCMALLOC_LIBRARY)
    # The file itself, not the soname's symlink: the wheel copies it (bridge/cli/CMakeLists.txt),
    # and a copied symlink would dangle there.
    file(REAL_PATH "${TB_TCMALLOC_LIBRARY}" _tb_tcmalloc_file)
    add_library(tb_tcmalloc SHARED IMPORTED)
    set_target_properties(tb_tcmalloc PROPERTIES IMPORTED_LOCATION "${_tb_tcmalloc_file}"
                                                 IMPORTED_SONAME "libtcmalloc_minimal.so.4")
    set(TB_MALLOC "tcmalloc")
  elseif(TB_ALLOCATOR STREQUAL "tcmalloc")
    message(FATAL_ERROR "TB_ALLOCATOR=tcmalloc: libtcmalloc_minimal not found "
                        "(Debian: apt-get install libtcmalloc-minimal4)")
  endif()
endif()
message(STATUS "torchbridge executable's malloc: ${TB_MALLOC}")

# Links the allocator into an executable. --no-as-needed: the executable references no tcmalloc
# symbol of its own (malloc is called from libstdc++ and LibTorch), so an as-needed link, the
# default of some distributions, would drop it.
function(tb_link_allocator target)
  if(TARGET tb_tcmalloc)
    target_link_libraries(${target} PRIVATE "-Wl,--push-state,--no-as-needed" tb_tcmalloc
                                            "-Wl,--pop-state")
  endif()
endfunction()
