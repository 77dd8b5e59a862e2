# How a kernel is built: hpipe_add_kernel(), called for every kernel that an hpipe_add_family()
# line lists (cmake/HpipeFamilies.cmake).
#
# Every kernel comes from a generator registered per element type as <kernel>_<type>
# (pipelines/<family>_generators.cpp). For each type it produces
#   hpipe_<NAME>_<type>_cpu   x86-64 multitarget: AVX-512 (Skylake), AVX2+FMA, SSE4.1 (baseline, last)
#   hpipe_<NAME>_<type>_cuda  CUDA, sm_80 PTX (the driver JITs it for newer GPUs); only with HPIPE_CUDA
#   hpipe_<NAME>_<type>_cpu_streaming  the CPU library again, writing its STREAMING outputs with
#                             streaming stores; only for kernels whose family line lists them
# Each is a static library whose C function has the same name as the library. All kernels share one
# Halide runtime (hpipe_halide_runtime) so a program links CPU and CUDA kernels side by side.
#
# Knobs: a schedule's knobs come from the C++ defaults next to the schedule (listed in
# cmake/default_knobs.json), overridden by a tuned-knobs file -DHPIPE_TUNING_FILE=<file> from
# `hpipe-tune export` (checked at configure time: cmake/HpipeTuning.cmake), overridden per kernel
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

include(HpipeTuning)
set(HPIPE_TUNING_FILE "" CACHE FILEPATH
    "Tuned-knobs file written by `hpipe-tune export`; empty: the C++ defaults (cmake/default_knobs.json)")
if (HPIPE_TUNING_FILE)
  hpipe_read_tuning_file("${HPIPE_TUNING_FILE}" "${CMAKE_CURRENT_LIST_DIR}/default_knobs.json")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${HPIPE_TUNING_FILE}")
  # After every hpipe_add_kernel(): each op the file tunes must be a kernel of this build.
  function(_hpipe_check_tuned_kernels)
    get_property(tuned GLOBAL PROPERTY HPIPE_TUNED_KERNELS)
    get_property(built GLOBAL PROPERTY HPIPE_KERNEL_NAMES)
    foreach (op IN LISTS tuned)
      if (NOT op IN_LIST built)
        message(FATAL_ERROR "HPIPE_TUNING_FILE ${HPIPE_TUNING_FILE}: op '${op}' is not a kernel of this build")
      endif ()
    endforeach ()
  endfunction()
  cmake_language(DEFER CALL _hpipe_check_tuned_kernels)
endif ()

# The generator executable is made once, from every family's generator source (pipelines/). The
# algorithms and schedules it instantiates come from the library hpipe_schedules (made first).
function(hpipe_add_generators)
  target_include_directories(hpipe_schedules PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(hpipe_schedules PUBLIC Halide::Halide)
  target_compile_options(hpipe_schedules PRIVATE -O1)
  add_halide_generator(hpipe_generators SOURCES ${ARGN})
  target_link_libraries(hpipe_generators PRIVATE hpipe_schedules)
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

# LLVM's code generator, to compile the streaming libraries' IR (package llvm-14, which Halide 14's
# -dev package depends on). The script that marks their stores runs with the project's Python
# (Python3_EXECUTABLE, top-level CMakeLists.txt).
find_program(HPIPE_LLC NAMES llc-14 llc PATHS /usr/lib/llvm-14/bin NO_DEFAULT_PATH)
find_program(HPIPE_LLC NAMES llc-14 llc)

# hpipe_<lib> from the generator <generator> with streaming stores into <outputs> (the names of
# the Funcs the generator returns as outputs, which their stores carry in the IR): the generator
# writes its LLVM IR per CPU target beside its objects, and cmake/streaming_stores.py compiles each
# target's IR again with those stores marked. The multitarget wrapper object dispatches among them
# as in the plain library. The runtime calls it for outputs larger than the caches
# (runtime/src/call.cpp).
function(_hpipe_add_streaming_library lib generator params)
  if (NOT HPIPE_LLC)
    message(FATAL_ERROR "${lib}: LLVM 14's llc not found (Debian package llvm-14)")
  endif ()
  if (NOT Python3_Interpreter_FOUND)
    message(FATAL_ERROR "${lib}: no Python 3 interpreter for cmake/streaming_stores.py (package python3)")
  endif ()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${lib}")
  set(script "${PROJECT_SOURCE_DIR}/cmake/streaming_stores.py")
  set(buffers "")
  foreach (output IN LISTS ARGN)
    list(APPEND buffers --buffer ${output})
  endforeach ()
  # Halide names the files of a multitarget library by target, beside a wrapper object; those of a
  # single target by the library alone.
  set(targets "")
  set(objects "")
  set(recompile "")
  list(LENGTH HPIPE_CPU_TARGETS count)
  foreach (target IN LISTS HPIPE_CPU_TARGETS)
    set(base "${dir}/${lib}")
    if (count GREATER 1)
      set(base "${base}-${target}-no_runtime")
    endif ()
    list(APPEND targets "${target}-no_runtime")
    list(APPEND objects "${base}.o")
    list(APPEND recompile COMMAND "${Python3_EXECUTABLE}" "${script}" --llc "${HPIPE_LLC}" ${buffers} "${base}.ll"
                                  "${base}.o")
  endforeach ()
  list(JOIN targets "," targets)
  if (count GREATER 1)
    list(APPEND objects "${dir}/${lib}_wrapper.o")
  endif ()
  add_custom_command(OUTPUT ${objects} "${dir}/${lib}.h"
    COMMAND hpipe_generators -n ${lib} -d 0 -g ${generator} -f ${lib} -e c_header,object,llvm_assembly -o "${dir}"
            "target=${targets}" ${params} streaming_output=true
    ${recompile}
    DEPENDS hpipe_generators "${script}" VERBATIM)
  add_library(${lib} STATIC ${objects})
  set_target_properties(${lib} PROPERTIES LINKER_LANGUAGE CXX)
  target_include_directories(${lib} INTERFACE $<BUILD_INTERFACE:${dir}>)
  target_link_libraries(${lib} INTERFACE hpipe_halide_runtime)
endfunction()

# hpipe_add_kernel(<name> TYPES <f32|f64>... KNOBS_OF <name> [STREAMING <output>...])
# KNOBS_OF: the kernel whose knobs schedule this one (itself, or the kernel it is a variant of).
# STREAMING: its outputs that a second CPU library, hpipe_<name>_<type>_cpu_streaming, writes with
# streaming stores.
function(hpipe_add_kernel NAME)
  cmake_parse_arguments(ARG "" "KNOBS_OF" "TYPES;STREAMING" ${ARGN})
  if (NOT ARG_KNOBS_OF OR NOT ARG_TYPES)
    message(FATAL_ERROR "hpipe_add_kernel(${NAME}): TYPES and KNOBS_OF are required")
  endif ()
  set_property(GLOBAL APPEND PROPERTY HPIPE_KERNEL_NAMES ${NAME})
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
      set(HPIPE_KNOBS_${ARG_KNOBS_OF}_${backend} "" CACHE STRING "Schedule knobs of ${ARG_KNOBS_OF} on ${backend}")
      set(knobs "${HPIPE_KNOBS_${ARG_KNOBS_OF}_${backend}}")
      if (NOT knobs)
        get_property(knobs GLOBAL PROPERTY HPIPE_TUNED_${ARG_KNOBS_OF}_${backend})
      endif ()
      set(params "")
      if (knobs)  # empty: the schedule's defaults
        string(REPLACE "=" ":" knobs "${knobs}")  # the generator command line allows one '=' per argument
        set(params "knobs=${knobs}")
      endif ()
      add_halide_library(${lib} FROM hpipe_generators
        GENERATOR ${NAME}_${type}
        TARGETS ${targets}
        USE_RUNTIME hpipe_halide_runtime
        PARAMS ${params})
      set(libs ${lib})
      if (backend STREQUAL "cpu" AND ARG_STREAMING)
        _hpipe_add_streaming_library(${lib}_streaming ${NAME}_${type} "${params}" ${ARG_STREAMING})
        list(APPEND libs ${lib}_streaming)
      endif ()
      install(TARGETS ${libs} EXPORT hpipeTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
      set_property(GLOBAL APPEND PROPERTY HPIPE_KERNEL_LIBRARIES ${libs})
    endforeach ()
  endforeach ()
endfunction()
