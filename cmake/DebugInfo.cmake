# Compressed debug sections (-gz, zlib). Debug information dominates the build's disk use: a
# Beast or Outcome translation unit carries ~120 MB of DWARF (mostly .debug_str: template names)
# even at -g1, and a full build plus the sanitizer build outgrew a CI machine's free disk. -gz
# makes those objects 5.5x smaller (126 MB -> 23 MB for bridge/client/session.cpp) at no measurable
# compile time (73.9 s against 73.2 s); gdb, addr2line, perf and the sanitizers read it directly.
option(TB_COMPRESS_DEBUG_INFO "Compress debug sections in objects and binaries (-gz)" ON)
if(TB_COMPRESS_DEBUG_INFO)
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-gz")
  set(CMAKE_REQUIRED_LINK_OPTIONS "-gz")
  check_cxx_source_compiles("int main() { return 0; }" TB_HAVE_GZ)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(TB_HAVE_GZ)
    add_compile_options(-gz)
    add_link_options(-gz)
  endif()
endif()
