if(TB_SANITIZE)
  add_compile_options(-fsanitize=${TB_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TB_SANITIZE})
endif()
if(TB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TB_FUZZ needs clang (libFuzzer); scripts/fuzz configures it")
  endif()
  # Coverage instrumentation for libFuzzer in every library a fuzzer links; only the fuzzer
  # executables link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
