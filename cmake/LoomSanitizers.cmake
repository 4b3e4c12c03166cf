# Instrumented builds (docs/FUZZING.md). Neither option changes the default
# build.
#
#   LOOM_SANITIZE  everything (libraries, tools, tests) with AddressSanitizer
#                  and UndefinedBehaviorSanitizer; `make test-sanitize` runs
#                  the tests on it.
#   LOOM_FUZZ      the libFuzzer targets of fuzz/ and the libraries they
#                  link, with ASan and UBSan, under clang; `make fuzz` runs
#                  them. The tools, tests and benchmarks are left out.
#
# A UB report stops the program (-fno-sanitize-recover) so that ctest and
# libFuzzer see it as a failure rather than a line on stderr.
option(LOOM_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(LOOM_FUZZ "Build the libFuzzer targets (fuzz/) only; needs clang" OFF)

if(LOOM_SANITIZE AND LOOM_FUZZ)
  message(FATAL_ERROR "LOOM_SANITIZE and LOOM_FUZZ are separate builds; pick one")
endif()

# C and C++ only: a CUDA compiler would not take these.
set(LOOM_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)

if(LOOM_SANITIZE)
  message(STATUS "Loom: building with AddressSanitizer and UBSan")
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${LOOM_SANITIZER_FLAGS}>")
  add_link_options(-fsanitize=address,undefined)
endif()

if(LOOM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "LOOM_FUZZ needs clang (libFuzzer); configure with "
                        "-DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_C_COMPILER=clang-19")
  endif()
  message(STATUS "Loom: building the fuzz targets (libFuzzer, ASan, UBSan)")
  # Coverage feedback for Loom's code; libFuzzer's main is linked into the
  # fuzz targets alone (fuzz/CMakeLists.txt).
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link;${LOOM_SANITIZER_FLAGS}>")
  add_link_options(-fsanitize=address,undefined)
endif()

# A module that is loaded apart from the program (the SentencePiece shim,
# text/Tokenizer.cpp) stays uninstrumented: it has no sanitizer runtime of
# its own to bind to.
function(loom_no_sanitize target)
  if(LOOM_SANITIZE OR LOOM_FUZZ)
    set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS "")
    set_property(TARGET ${target} PROPERTY LINK_OPTIONS "")
  endif()
endfunction()
