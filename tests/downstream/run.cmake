# CTest driver: install torchbridge into a prefix inside the build tree, then configure, build and
# run tests/downstream against it. -D BUILD_DIR, PREFIX, SOURCE_DIR, WORK_DIR, GENERATOR, CXX,
# LAUNCHER.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

file(REMOVE_RECURSE "${PREFIX}" "${WORK_DIR}")
step(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${PREFIX}")
set(launcher "")
if(LAUNCHER)
  set(launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
# The project sets no standard, and this compiler's default (C++17 for GCC 11 and later) would
# hide a package whose targets ask for none: it starts from C++14, as GCC 10 and Clang 15 do, and
# builds only if torchbridge::client carries its requirement.
step(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}" -G "${GENERATOR}"
     "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DCMAKE_CXX_FLAGS=-std=gnu++14"
     ${launcher})
step(${CMAKE_COMMAND} --build "${WORK_DIR}")
step("${WORK_DIR}/downstream")
