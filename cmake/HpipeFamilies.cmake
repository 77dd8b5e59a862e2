# Op families: one hpipe_add_family() line registers a family (the list is in the top-level
# CMakeLists.txt); its files are found by name (docs/adding-an-op.md lists them) and every directory
# that builds one of them iterates over the registered families.
#
# hpipe_add_family(<family> KERNELS <kernel>... [VARIANT <kernel> OF <kernel> TYPES <type>...]...
#                  [STREAMING <kernel>:<output>...])
#   KERNELS    kernels built for float32 and float64 (types f32 f64), each from the generators
#              <kernel>_f32 and <kernel>_f64 that pipelines/<family>_generators.cpp registers
#   VARIANT    a kernel scheduled with the knobs of one of the KERNELS (a variant of it, tuned with
#              it), built for the types listed after TYPES (default f32 f64)
#   STREAMING  a kernel that also gets a CPU library writing that output with streaming stores,
#              for outputs larger than the caches (cmake/HpipeKernels.cmake); <output> is the name
#              of the Func the generator returns as that output (its stores carry it in the IR)

set_property(GLOBAL PROPERTY HPIPE_FAMILIES "")

function(_hpipe_check_variant variant usage)
  get_property(knobs_of GLOBAL PROPERTY HPIPE_KERNEL_KNOBS_OF_${variant})
  if (variant AND knobs_of STREQUAL variant)
    message(FATAL_ERROR "${usage}: VARIANT ${variant} needs OF <the kernel whose knobs it takes>")
  endif ()
endfunction()

function(hpipe_add_family family)
  set(usage "hpipe_add_family(${family} KERNELS <kernel>... [VARIANT <kernel> OF <kernel> TYPES <type>...]... "
            "[STREAMING <kernel>:<output>...])")
  set(kernels "")
  set(base_kernels "")  # the KERNELS, which a VARIANT can be OF
  set(keyword "")
  set(variant "")  # the VARIANT whose OF and TYPES come next
  foreach (arg IN LISTS ARGN)
    if (arg MATCHES "^(KERNELS|VARIANT|OF|TYPES|STREAMING)$")
      if (arg MATCHES "^(OF|TYPES)$" AND NOT variant)
        message(FATAL_ERROR "${usage}: ${arg} belongs to a VARIANT")
      endif ()
      if (arg MATCHES "^(KERNELS|VARIANT|STREAMING)$")
        _hpipe_check_variant("${variant}" "${usage}")
        set(variant "")
      endif ()
      if (arg STREQUAL "TYPES")
        set_property(GLOBAL PROPERTY HPIPE_KERNEL_TYPES_${variant} "")
      endif ()
      set(keyword ${arg})
    elseif (keyword STREQUAL "KERNELS" OR (keyword STREQUAL "VARIANT" AND NOT variant))
      list(APPEND kernels ${arg})
      if (keyword STREQUAL "KERNELS")
        list(APPEND base_kernels ${arg})
      endif ()
      set_property(GLOBAL PROPERTY HPIPE_KERNEL_TYPES_${arg} f32 f64)
      set_property(GLOBAL PROPERTY HPIPE_KERNEL_KNOBS_OF_${arg} ${arg})
      if (keyword STREQUAL "VARIANT")
        set(variant ${arg})
      endif ()
    elseif (keyword STREQUAL "OF" AND arg IN_LIST base_kernels)
      set_property(GLOBAL PROPERTY HPIPE_KERNEL_KNOBS_OF_${variant} ${arg})
      set(keyword "OF ${arg}")  # OF names one kernel
    elseif (keyword STREQUAL "TYPES" AND arg MATCHES "^f(32|64)$")
      set_property(GLOBAL APPEND PROPERTY HPIPE_KERNEL_TYPES_${variant} ${arg})
    elseif (keyword STREQUAL "STREAMING" AND arg MATCHES "^([a-z0-9_]+):([A-Za-z0-9_]+)$"
            AND CMAKE_MATCH_1 IN_LIST kernels)
      set_property(GLOBAL APPEND PROPERTY HPIPE_KERNEL_STREAMING_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    else ()
      message(FATAL_ERROR "${usage}: unexpected '${arg}' after ${keyword} (OF names one of the family's "
                          "KERNELS, TYPES are f32 or f64, STREAMING names <kernel>:<output> of the family)")
    endif ()
  endforeach ()
  _hpipe_check_variant("${variant}" "${usage}")
  if (NOT kernels)
    message(FATAL_ERROR "${usage}: no kernels")
  endif ()
  set_property(GLOBAL APPEND PROPERTY HPIPE_FAMILIES ${family})
  set_property(GLOBAL PROPERTY HPIPE_FAMILY_KERNELS_${family} ${kernels})
endfunction()

# hpipe_family_files(<variable> <pattern>...): the files every pattern names for every family, in
# the order of registration, as absolute paths; "<family>" in a pattern (a path from the source
# root) stands for the family's name. A missing file is a configure error that names it.
function(hpipe_family_files variable)
  get_property(families GLOBAL PROPERTY HPIPE_FAMILIES)
  set(files "")
  foreach (family IN LISTS families)
    foreach (pattern IN LISTS ARGN)
      string(REPLACE "<family>" "${family}" file "${PROJECT_SOURCE_DIR}/${pattern}")
      if (NOT EXISTS "${file}")
        message(FATAL_ERROR "hpipe_add_family(${family}): ${file} is missing (see docs/adding-an-op.md)")
      endif ()
      list(APPEND files "${file}")
    endforeach ()
  endforeach ()
  set(${variable} ${files} PARENT_SCOPE)
endfunction()

# hpipe_add_family_kernels(): hpipe_add_kernel() for every kernel of every family.
function(hpipe_add_family_kernels)
  get_property(families GLOBAL PROPERTY HPIPE_FAMILIES)
  foreach (family IN LISTS families)
    get_property(kernels GLOBAL PROPERTY HPIPE_FAMILY_KERNELS_${family})
    foreach (kernel IN LISTS kernels)
      get_property(types GLOBAL PROPERTY HPIPE_KERNEL_TYPES_${kernel})
      get_property(knobs_of GLOBAL PROPERTY HPIPE_KERNEL_KNOBS_OF_${kernel})
      get_property(streaming GLOBAL PROPERTY HPIPE_KERNEL_STREAMING_${kernel})
      hpipe_add_kernel(${kernel} TYPES ${types} KNOBS_OF ${knobs_of} STREAMING ${streaming})
    endforeach ()
  endforeach ()
endfunction()
