# `torchbridge serve`'s first line of output names its address: supervisors (the interop harness,
# remote_bench) read it, so no log line may come before it. Run with as many --threads as the
# machine has CPUs, which logs a warning at start-up; stdin at EOF stops the host at once
# (--exit-on-stdin-eof). Arguments: -DTORCHBRIDGE=<binary> -DTHREADS=<n>.
execute_process(
  COMMAND ${TORCHBRIDGE} serve --port 0 --host 127.0.0.1 --exit-on-stdin-eof --log-level warn
          --threads ${THREADS}
  INPUT_FILE /dev/null
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  RESULT_VARIABLE rc
  TIMEOUT 60)
string(REGEX MATCH "^[^\n]*" first "${out}")
if(NOT first MATCHES "serving .* on ws://127\\.0\\.0\\.1:[0-9]+ ")
  message(FATAL_ERROR "the first line of serve's output is not its start-up line:\n${first}\n"
                      "(exit ${rc}; stderr: ${err})")
endif()
if(NOT "${out}${err}" MATCHES "--threads ${THREADS} on a machine with")
  message(STATUS "no thread warning at --threads ${THREADS} on this machine (more CPUs than that)")
endif()
