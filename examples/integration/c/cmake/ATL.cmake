# ATL.cmake -- ATL kernels in a CMake project (docs/integration.md).
#
#   list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_SOURCE_DIR}/cmake")
#   include(ATL)
#   atl_add_kernel(TARGET FILE DEF [NAME symbol] [DTYPE f32|f64] [FP fast|strict])
#
# atl_add_kernel runs `atl emit FILE --def DEF` at build time (again whenever FILE
# changes) into SYMBOL.c and SYMBOL.h in the current binary directory, and adds the C
# to TARGET: a library (STATIC, unless BUILD_SHARED_LIBS) created by the first call
# for that name, to which later calls add their kernels. Link TARGET to your program;
# it carries the include directory of the headers, libm where the platform has a
# separate one (kernels calling sqrt, exp, log or fabs need it) and OpenMP when CMake
# finds it (the kernels' parallel loops then use threads; without it they are
# sequential and still vectorized). NAME is the C symbol (default: DEF); DTYPE the
# element type (default f32); FP the floating-point mode (default fast).
#
# The atl binary: the cache variable ATL (-DATL=/path/to/atl), else `atl` on PATH.

find_program(ATL_EXECUTABLE NAMES atl)
set(ATL "${ATL_EXECUTABLE}" CACHE FILEPATH "the atl binary")

function(atl_add_kernel target file def)
  cmake_parse_arguments(PARSE_ARGV 3 ARG "" "NAME;DTYPE;FP" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "atl_add_kernel: unexpected arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ATL)
    message(FATAL_ERROR "atl not found: put it on PATH or pass -DATL=/path/to/atl")
  endif()
  set(symbol "${def}")
  if(ARG_NAME)
    set(symbol "${ARG_NAME}")
  endif()
  set(options --def "${def}" --name "${symbol}")
  if(ARG_DTYPE)
    if(NOT ARG_DTYPE MATCHES "^(f32|f64)$")
      message(FATAL_ERROR "atl_add_kernel: DTYPE is f32 or f64, not ${ARG_DTYPE}")
    endif()
    list(APPEND options --dtype "${ARG_DTYPE}")
  endif()
  if(ARG_FP)
    if(NOT ARG_FP MATCHES "^(fast|strict)$")
      message(FATAL_ERROR "atl_add_kernel: FP is fast or strict, not ${ARG_FP}")
    endif()
    list(APPEND options --fp "${ARG_FP}")
  endif()
  get_filename_component(source "${file}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(c "${CMAKE_CURRENT_BINARY_DIR}/${symbol}.c")
  set(h "${CMAKE_CURRENT_BINARY_DIR}/${symbol}.h")
  add_custom_command(
    OUTPUT "${c}" "${h}"
    COMMAND "${ATL}" emit "${source}" ${options} -o "${c}" --header "${h}"
    DEPENDS "${source}" "${ATL}"
    COMMENT "atl emit ${file} --def ${def} --name ${symbol}"
    VERBATIM)

  if(NOT TARGET "${target}")
    add_library("${target}")
    set_target_properties("${target}" PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON
                                                 POSITION_INDEPENDENT_CODE ON)
    target_include_directories("${target}" PUBLIC "${CMAKE_CURRENT_BINARY_DIR}")
    if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
      # -ffp-contract=fast is GNU C's default, which -std=c99 turns off; a kernel
      # emitted with FP strict states -ffp-contract=off instead (set per source below).
      target_compile_options("${target}" PRIVATE -O3 -ffp-contract=fast)
    endif()
    # The C math library, where it is separate from libc (not on Windows or macOS).
    find_library(ATL_LIBM m)
    if(ATL_LIBM)
      target_link_libraries("${target}" PUBLIC "${ATL_LIBM}")
    endif()
    find_package(OpenMP COMPONENTS C QUIET)
    if(OpenMP_C_FOUND)
      target_link_libraries("${target}" PUBLIC OpenMP::OpenMP_C)
    endif()
  endif()
  target_sources("${target}" PRIVATE "${c}")
  if(ARG_FP STREQUAL "strict" AND CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    set_source_files_properties("${c}" PROPERTIES COMPILE_OPTIONS -ffp-contract=off)
  endif()
endfunction()
