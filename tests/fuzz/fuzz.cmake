# libFuzzer targets for every reader of outside input (docs/fuzzing.md).
# -DPERFSIFT_FUZZ=ON (clang only) compiles the whole project with libFuzzer's coverage,
# AddressSanitizer and UndefinedBehaviorSanitizer, and adds one fuzz_<reader> program
# per reader (target fuzzers builds them all). tests/fuzz/run_fuzzers.sh does it all.
option(PERFSIFT_FUZZ "Build the libFuzzer targets (clang; sanitizes the whole build)" OFF)
if(PERFSIFT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "PERFSIFT_FUZZ needs clang: -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(PERFSIFT_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                          -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${PERFSIFT_FUZZ_FLAGS}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=address,undefined>")
  # Added once the project's libraries exist.
  # (EVAL: the path is expanded now; a deferred call's arguments are expanded when it runs.)
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${CMAKE_SOURCE_DIR}]]
                                               CALL include [[${CMAKE_CURRENT_LIST_DIR}/fuzzers.cmake]])")
endif()
