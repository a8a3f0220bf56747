# Runs the conformance suite SUITE against the driver library DRIVER, which
# refuses every call, and checks that the suite reports the refusals as test
# failures (exit status 1, the driver's detail in the output) without crashing.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env AXON_DRIVER=${DRIVER} ${SUITE} --gtest_brief=1
  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
if(NOT status STREQUAL "1")
  message(FATAL_ERROR "expected the suite to fail its tests cleanly (exit status 1), got: ${status}\n${output}${errors}")
endif()
string(FIND "${output}${errors}" "not supported by the null driver" found)
if(found EQUAL -1)
  message(FATAL_ERROR "expected the null driver's NOT_SUPPORTED details in the suite's output\n${output}${errors}")
endif()
string(REGEX MATCH "[0-9]+ tests from [0-9]+ test suites ran" summary "${output}")
message(STATUS "null driver: ${summary}; every refusal reported, no crash")
