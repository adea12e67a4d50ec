# The libFuzzer programs (PERFSIFT_FUZZ=ON; tests/fuzz/fuzz.cmake includes this file once
# the project's libraries exist).
# Each links the project's libraries, built with the same fuzzer+ASan+UBSan flags.
add_custom_target(fuzzers)
function(perfsift_fuzzer name)
  add_executable(fuzz_${name} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/fuzz_${name}.cpp)
  target_include_directories(fuzz_${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(fuzz_${name} PRIVATE ${ARGN})
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(fuzzers fuzz_${name})
endfunction()
perfsift_fuzzer(spill perfsift::io)
perfsift_fuzzer(trace_store perfsift::io)
perfsift_fuzzer(results_store perfsift::io)
perfsift_fuzzer(pipeline perfsift::stages perfsift::config)
perfsift_fuzzer(questions perfsift::products)
perfsift_fuzzer(knowledge perfsift::products)
perfsift_fuzzer(classifier perfsift::products)
perfsift_fuzzer(loggps perfsift::products)
