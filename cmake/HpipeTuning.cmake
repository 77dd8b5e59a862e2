# Tuned knobs: reads a file written by `hpipe-tune export` (or cmake/default_knobs.json, the C++
# defaults written by `hpipe-tune defaults`) and checks it against the default-knobs file:
#   {"format": "hpipe-knobs/1", "kernels": {"<op>": {"cpu"|"cuda": {"<knob>": <integer>, ...}}}}
# An op, backend or knob the defaults do not list, or a non-integer value, is a configure error.
# Whether the values form a legal combination is checked by the generator (knob struct valid()),
# which stops the build with the reason.
#
# hpipe_read_tuning_file(<file> <defaults>) sets the global properties HPIPE_TUNED_<op>_<backend>
# to "knob=value,..." and HPIPE_TUNED_KERNELS to the ops it names.
#
# Script mode (tests): cmake -D FILE=<tuned.json> -D DEFAULTS=<default_knobs.json> -P HpipeTuning.cmake
# prints the knobs or fails with the configure-time message.

if (CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  cmake_minimum_required(VERSION 3.22)
endif ()

# Fails with `message` about `file` when string(JSON)'s ERROR_VARIABLE `err` is set, so that no
# error is CMake's own (which names neither the file nor the member).
function(_hpipe_tuning_check err file message)
  if (err)
    message(FATAL_ERROR "HPIPE_TUNING_FILE ${file}: ${message} (${err})")
  endif ()
endfunction()

# Fails unless the value at <path...> (ARGN) of `json`, described by `what`, is a JSON object:
# string(JSON LENGTH/MEMBER) on another type fails with CMake's words, which name no file.
macro(_hpipe_tuning_expect_object json what)
  string(JSON _hpipe_type ERROR_VARIABLE _hpipe_err TYPE "${json}" ${ARGN})
  _hpipe_tuning_check("${_hpipe_err}" "${file}" "reading ${what}")
  if (NOT _hpipe_type STREQUAL "OBJECT")
    string(TOLOWER "${_hpipe_type}" _hpipe_type)
    message(FATAL_ERROR "HPIPE_TUNING_FILE ${file}: ${what} must be a JSON object, got the JSON type ${_hpipe_type}")
  endif ()
endmacro()

function(hpipe_read_tuning_file file defaults)
  if (NOT EXISTS "${file}")
    message(FATAL_ERROR "HPIPE_TUNING_FILE: ${file} does not exist")
  endif ()
  file(READ "${file}" tuned)
  file(READ "${defaults}" known)
  string(JSON type ERROR_VARIABLE err TYPE "${tuned}")
  _hpipe_tuning_check("${err}" "${file}" "expected a JSON object {\"format\": \"hpipe-knobs/1\", \"kernels\": {...}}")
  string(JSON format ERROR_VARIABLE err GET "${tuned}" format)
  if (err OR NOT format STREQUAL "hpipe-knobs/1")
    message(FATAL_ERROR "HPIPE_TUNING_FILE ${file}: expected \"format\": \"hpipe-knobs/1\", got '${format}' ${err}")
  endif ()
  string(JSON n_ops ERROR_VARIABLE err LENGTH "${tuned}" kernels)
  _hpipe_tuning_check("${err}" "${file}" "expected a \"kernels\" object")
  _hpipe_tuning_expect_object("${tuned}" "\"kernels\"" kernels)
  string(JSON n_known ERROR_VARIABLE err LENGTH "${known}" kernels)
  if (err)
    message(FATAL_ERROR "the default-knobs file ${defaults}: expected a \"kernels\" object (${err})")
  endif ()
  set(known_ops "")
  foreach (i RANGE 1 ${n_known})
    math(EXPR at "${i} - 1")
    string(JSON op MEMBER "${known}" kernels ${at})
    list(APPEND known_ops ${op})
  endforeach ()
  set(ops "")
  foreach (i RANGE 1 ${n_ops})
    if (n_ops EQUAL 0)
      break()
    endif ()
    math(EXPR at "${i} - 1")
    string(JSON op MEMBER "${tuned}" kernels ${at})
    # Names become list items and JSON paths: a ';' or blank would split them.
    if (NOT op MATCHES "^[A-Za-z0-9_]+$" OR NOT op IN_LIST known_ops)
      list(JOIN known_ops ", " list)
      message(FATAL_ERROR "HPIPE_TUNING_FILE ${file}: unknown op '${op}' (tunable ops: ${list})")
    endif ()
    list(APPEND ops ${op})
    _hpipe_tuning_expect_object("${tuned}" "op '${op}'" kernels ${op})
    string(JSON n_backends LENGTH "${tuned}" kernels ${op})
    foreach (j RANGE 1 ${n_backends})
      if (n_backends EQUAL 0)
        break()
      endif ()
      math(EXPR bat "${j} - 1")
      string(JSON backend MEMBER "${tuned}" kernels ${op} ${bat})
      if (NOT backend MATCHES "^(cpu|cuda)$")
        message(FATAL_ERROR "HPIPE_TUNING_FILE ${file}: op '${op}' has backend '${backend}', expected cpu or cuda")
      endif ()
      _hpipe_tuning_expect_object("${tuned}" "the ${backend} knobs of ${op}" kernels ${op} ${backend})
      string(JSON n_knobs LENGTH "${tuned}" kernels ${op} ${backend})
      set(knobs "")
      foreach (k RANGE 1 ${n_knobs})
        if (n_knobs EQUAL 0)
          break()
        endif ()
        math(EXPR kat "${k} - 1")
        string(JSON knob MEMBER "${tuned}" kernels ${op} ${backend} ${kat})
        set(err "")
        if (knob MATCHES "^[A-Za-z0-9_]+$")
          string(JSON unused ERROR_VARIABLE err GET "${known}" kernels ${op} ${backend} ${knob})
        endif ()
        if (err OR NOT knob MATCHES "^[A-Za-z0-9_]+$")
          string(JSON known_knobs GET "${known}" kernels ${op} ${backend})
          message(FATAL_ERROR "HPIPE_TUNING_FILE ${file}: unknown knob '${knob}' of ${op} on ${backend} "
                              "(its knobs and defaults: ${known_knobs})")
        endif ()
        string(JSON value GET "${tuned}" kernels ${op} ${backend} ${knob})
        string(JSON value_type TYPE "${tuned}" kernels ${op} ${backend} ${knob})
        if (NOT value_type STREQUAL "NUMBER" OR NOT value MATCHES "^-?[0-9]+$")  # "64", a string, is not
          string(TOLOWER "${value_type}" value_type)
          message(FATAL_ERROR "HPIPE_TUNING_FILE ${file}: knob '${knob}' of ${op} on ${backend} needs an integer, "
                              "got the ${value_type} '${value}'")
        endif ()
        # The knob structs hold int: a longer number would wrap in the generator.
        string(REGEX REPLACE "^-" "" digits "${value}")
        string(LENGTH "${digits}" length)
        if (length GREATER 10 OR (length EQUAL 10 AND digits STRGREATER "2147483647"))
          message(FATAL_ERROR "HPIPE_TUNING_FILE ${file}: knob '${knob}' of ${op} on ${backend} needs a 32-bit "
                              "integer, got '${value}'")
        endif ()
        list(APPEND knobs "${knob}=${value}")
      endforeach ()
      list(JOIN knobs "," knobs)
      set_property(GLOBAL PROPERTY HPIPE_TUNED_${op}_${backend} "${knobs}")
    endforeach ()
  endforeach ()
  set_property(GLOBAL PROPERTY HPIPE_TUNED_KERNELS "${ops}")
endfunction()

if (CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  hpipe_read_tuning_file("${FILE}" "${DEFAULTS}")
  get_property(ops GLOBAL PROPERTY HPIPE_TUNED_KERNELS)
  foreach (op IN LISTS ops)
    foreach (backend cpu cuda)
      get_property(knobs GLOBAL PROPERTY HPIPE_TUNED_${op}_${backend})
      if (knobs)
        message(STATUS "HPIPE_KNOBS_${op}_${backend}=${knobs}")
      endif ()
    endforeach ()
  endforeach ()
endif ()
