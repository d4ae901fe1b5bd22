# Sanitizer and fuzzing builds (see docs/reliability.md):
#   -DASCENDGRAD_SANITIZE=address,undefined  every target under ASan + UBSan (UB is fatal)
#   -DASCENDGRAD_SANITIZE=thread             every target under TSan
#   -DASCENDGRAD_BUILD_FUZZ=ON               the libFuzzer target fuzz_aclnn (clang only); the
#                                            library objects get coverage instrumentation
#                                            (fuzzer-no-link), so one build serves ctest and fuzzing
set(ASCENDGRAD_SANITIZE "" CACHE STRING "Sanitizers for every target (-fsanitize=...), e.g. address,undefined")
option(ASCENDGRAD_BUILD_FUZZ "Build the libFuzzer target over the C API (clang)" OFF)

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND (ASCENDGRAD_SANITIZE OR ASCENDGRAD_BUILD_FUZZ))
  # GNU libgomp, the runtime the wheel ships with, rather than LLVM's libomp (whose thread
  # state LeakSanitizer reports as leaked when the kernels' thread count changes)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libgomp.so
                  OUTPUT_VARIABLE _gomp OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(OpenMP_CXX_FLAGS "-fopenmp=libgomp" CACHE STRING "")
  set(OpenMP_CXX_LIB_NAMES "gomp" CACHE STRING "")
  set(OpenMP_gomp_LIBRARY "${_gomp}" CACHE FILEPATH "")
endif()

# Options for the test programs' own code (tests_cpp): their float64 reference loops dominate the
# sanitized suite's time at -O0, and need no coverage feedback.
set(ASCENDGRAD_TEST_OPTIONS "")
if(ASCENDGRAD_SANITIZE)
  list(APPEND ASCENDGRAD_TEST_OPTIONS -O1)
endif()
if(ASCENDGRAD_BUILD_FUZZ)
  list(APPEND ASCENDGRAD_TEST_OPTIONS -fno-sanitize=fuzzer-no-link)
endif()

if(ASCENDGRAD_SANITIZE)
  add_compile_options(-fsanitize=${ASCENDGRAD_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${ASCENDGRAD_SANITIZE})
  if(ASCENDGRAD_SANITIZE MATCHES "undefined")
    # a UB report fails the test instead of scrolling by
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()

if(ASCENDGRAD_BUILD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ASCENDGRAD_BUILD_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
