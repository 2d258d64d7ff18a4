# One Rust interop crate (one per served Burn version) as CTest tests: `<prefix>_build` builds it
# (fixture <prefix>), then one test per suite of <crate>/tests/suites.rs runs that suite. Sets
# TB_CARGO (cargo, or empty where it is missing) and TB_CARGO_ENV (the environment every cargo
# command of these tests runs in) in the caller's scope.

# The crates' release opt-level, as scripts/cargo-env sets it (1 unless TB_CARGO_OPT_LEVEL says):
# ctest's cargo runs then share scripts/test's build.
if(DEFINED ENV{TB_CARGO_OPT_LEVEL})
  set(_tb_opt_default "$ENV{TB_CARGO_OPT_LEVEL}")
else()
  set(_tb_opt_default 1)
endif()
set(TB_CARGO_OPT_LEVEL "${_tb_opt_default}" CACHE STRING "opt-level of the interop crates' builds")

# scripts/cargo-env's target dir, also when CMake re-runs from a bare `ninja` without it: one Burn
# build per version for every cargo command, never a second one under build/.
function(tb_cargo_target_dir out)
  set(dir "$ENV{CARGO_TARGET_DIR}")
  if(NOT dir AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(dir "$ENV{XDG_CACHE_HOME}/torchbridge/cargo-target")
  elseif(NOT dir AND NOT "$ENV{HOME}" STREQUAL "")
    set(dir "$ENV{HOME}/.cache/torchbridge/cargo-target")
  elseif(NOT dir)
    set(dir "${CMAKE_BINARY_DIR}/cargo-target")
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

# Every crate builds into one target dir, where cargo holds a lock while it builds: the builds take
# turns (RESOURCE_LOCK), and every suite waits for all of them (FIXTURES_REQUIRED TB_INTEROP_FIXTURES):
# a `cargo test` started during another crate's build would spend its timeout waiting on that lock.
set(TB_INTEROP_FIXTURES "interop;interop023")

function(tb_interop_crate prefix crate_dir)
  find_program(TB_CARGO cargo HINTS $ENV{HOME}/.cargo/bin)
  if(NOT TB_CARGO)
    message(WARNING "cargo not found: the ${prefix} tests are not registered")
    set(TB_CARGO "" PARENT_SCOPE)
    return()
  endif()
  tb_cargo_target_dir(target_dir)
  set(env "TORCHBRIDGE_BIN=$<TARGET_FILE:torchbridge>"
          "TB_MAKE_TEST_MODULES=$<TARGET_FILE:tb_make_test_modules>"
          "CARGO_TARGET_DIR=${target_dir}" "RUST_BACKTRACE=1"
          "CARGO_PROFILE_RELEASE_OPT_LEVEL=${TB_CARGO_OPT_LEVEL}")
  if(TB_AOTI_MODELS_DIR)
    list(APPEND env "TB_AOTI_MODELS=${TB_AOTI_MODELS_DIR}")
  endif()
  if(NOT TB_C10D_GLOO)
    # This build has no federation (bridge/federation/CMakeLists.txt): its suite has nothing to run.
    list(APPEND env "TB_NO_FEDERATION=1")
  endif()
  set(cargo_test ${CMAKE_COMMAND} -E env ${env} ${TB_CARGO} test --release --locked
                 --manifest-path ${crate_dir}/Cargo.toml)

  add_test(NAME ${prefix}_build COMMAND ${cargo_test} --no-run)
  set_tests_properties(${prefix}_build PROPERTIES LABELS interop FIXTURES_SETUP ${prefix}
                                                  RESOURCE_LOCK cargo_target TIMEOUT 3000)
  # One test binary (<crate>/tests/suites.rs) holds every suite as a module; each suite is its own
  # CTest test, filtered to `<suite>::`. The `mod` lines of suites.rs are the list.
  set(suites_rs ${crate_dir}/tests/suites.rs)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${suites_rs})
  file(STRINGS ${suites_rs} mods REGEX "^mod [a-z0-9_]+;$")
  foreach(line ${mods})
    string(REGEX REPLACE "^mod ([a-z0-9_]+);$" "\\1" name "${line}")
    add_test(NAME ${prefix}_${name} COMMAND ${cargo_test} --test suites -- ${name}::)
    set(fixtures ${TB_INTEROP_FIXTURES})
    if(TB_AOTI_MODELS_DIR AND name STREQUAL "aoti_models")
      list(APPEND fixtures aoti_models)
    endif()
    set_tests_properties(${prefix}_${name} PROPERTIES LABELS interop
                         FIXTURES_REQUIRED "${fixtures}" TIMEOUT 1200)
  endforeach()
  set(TB_CARGO "${TB_CARGO}" PARENT_SCOPE)
  set(TB_CARGO_ENV "${env}" PARENT_SCOPE)
endfunction()
