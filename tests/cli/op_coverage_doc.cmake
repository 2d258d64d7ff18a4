# Fails when docs/op-coverage.md differs from what `torchbridge ops --markdown` prints now.
execute_process(COMMAND ${TB_BIN} ops --markdown OUTPUT_FILE ${TB_OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "torchbridge ops --markdown failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${TB_OUT} ${TB_DOC} RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "docs/op-coverage.md is stale: regenerate it with\n"
                      "  build/bridge/cli/torchbridge ops --markdown > docs/op-coverage.md")
endif()
