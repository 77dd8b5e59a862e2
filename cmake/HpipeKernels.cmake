# One way to add a kernel: hpipe_add_kernel().
#
# Every kernel comes from a generator registered per element type as <GENERATOR>_<type>
# (see pipelines/). For each type it produces
#   hpipe_<NAME>_<type>_cpu   x86-64 multitarget: AVX-512 (Skylake), AVX2+FMA, SSE4.1 (baseline, last)
#   hpipe_<NAME>_<type>_cuda  CUDA, sm_80 PTX (the driver JITs it for newer GPUs); only with HPIPE_CUDA
# Each is a static library whose C function has the same name as the library. All kernels share one
# Halide runtime (hpipe_halide_runtime) so a program links CPU and CUDA kernels side by side.
#
# Knobs: a schedule's knobs come from the C++ defaults next to the schedule, overridden per kernel
# and backend by the cache variables HPIPE_KNOBS_<NAME>_cpu / HPIPE_KNOBS_<NAME>_cuda
# ("name:value,name:value"; set them from a tuned file with hpipe-tune).

# Every target carries user_context: the runtime passes a per-call context that collects errors.
set(HPIPE_CPU_TARGETS
    x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41-user_context
    x86-64-linux-avx-avx2-f16c-fma-sse41-user_context
    x86-64-linux-sse41-user_context
    CACHE STRING "Halide targets of the CPU multitarget libraries, most specific first, baseline last")
set(HPIPE_CUDA_TARGET x86-64-linux-sse41-cuda-cuda_capability_80-user_context
    CACHE STRING "Halide target of the CUDA libraries")

set_property(GLOBAL PROPERTY HPIPE_KERNEL_LIBRARIES "")

# The generator executable is made once, from every generator source; pipelines/ fills it.
function(hpipe_add_generators)
  add_halide_generator(hpipe_generators SOURCES ${ARGN})
  target_include_directories(hpipe_generators PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(hpipe_generators PRIVATE -O1)

  # The shared runtime: its target is the greatest common target of all kernel targets (CPU
  # features intersected, CUDA united), computed by the generator driver.
  set(rt_targets ${HPIPE_CPU_TARGETS})
  if (HPIPE_CUDA)
    list(APPEND rt_targets ${HPIPE_CUDA_TARGET})
  endif ()
  list(JOIN rt_targets "," rt_targets)
  set(rt_obj "${CMAKE_CURRENT_BINARY_DIR}/hpipe_halide_runtime.o")
  add_custom_command(OUTPUT "${rt_obj}"
    COMMAND hpipe_generators -r hpipe_halide_runtime -o "${CMAKE_CURRENT_BINARY_DIR}" -e object
            "target=${rt_targets}"
    DEPENDS hpipe_generators VERBATIM)
  add_library(hpipe_halide_runtime STATIC "${rt_obj}")
  set_target_properties(hpipe_halide_runtime PROPERTIES LINKER_LANGUAGE CXX)
  target_link_libraries(hpipe_halide_runtime INTERFACE Threads::Threads ${CMAKE_DL_LIBS})
  install(TARGETS hpipe_halide_runtime EXPORT hpipeTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# hpipe_add_kernel(<name> GENERATOR <generator> TYPES <f32|f64>...)
function(hpipe_add_kernel NAME)
  cmake_parse_arguments(ARG "" "GENERATOR" "TYPES" ${ARGN})
  if (NOT ARG_GENERATOR OR NOT ARG_TYPES)
    message(FATAL_ERROR "hpipe_add_kernel(${NAME}): GENERATOR and TYPES are required")
  endif ()
  set(backends cpu)
  if (HPIPE_CUDA)
    list(APPEND backends cuda)
  endif ()
  foreach (type IN LISTS ARG_TYPES)
    foreach (backend IN LISTS backends)
      set(lib hpipe_${NAME}_${type}_${backend})
      if (backend STREQUAL "cpu")
        set(targets ${HPIPE_CPU_TARGETS})
      else ()
        set(targets ${HPIPE_CUDA_TARGET})
      endif ()
      set(HPIPE_KNOBS_${NAME}_${backend} "" CACHE STRING "Schedule knobs of ${NAME} on ${backend}")
      set(params "")
      if (HPIPE_KNOBS_${NAME}_${backend})  # empty: the schedule's defaults
        set(params "knobs=${HPIPE_KNOBS_${NAME}_${backend}}")
      endif ()
      add_halide_library(${lib} FROM hpipe_generators
        GENERATOR ${ARG_GENERATOR}_${type}
        TARGETS ${targets}
        USE_RUNTIME hpipe_halide_runtime
        PARAMS ${params})
      install(TARGETS ${lib} EXPORT hpipeTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
      set_property(GLOBAL APPEND PROPERTY HPIPE_KERNEL_LIBRARIES ${lib})
    endforeach ()
  endforeach ()
endfunction()
