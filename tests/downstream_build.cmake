# Installs hpipe into a scratch prefix, then configures, builds and runs examples/cassi_demo
# against it with find_package(hpipe): the way a downstream application uses the library.
# -D BUILD=<hpipe build dir> -D SOURCE=<hpipe source dir> -D WORK=<scratch dir>
file(REMOVE_RECURSE "${WORK}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if (NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif ()
endfunction()
run("${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${WORK}/prefix")
# hpipe's headers as a build without -isystem sees them (plain Makefiles, Bazel), under a strict
# application's warnings: -Wsign-conversion found int indices into std::array in view.h.
run("${CMAKE_COMMAND}" -S "${SOURCE}/examples/cassi_demo" -B "${WORK}/build" -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_PREFIX_PATH=${WORK}/prefix" -DCMAKE_NO_SYSTEM_FROM_IMPORTED=ON
    "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror")
run("${CMAKE_COMMAND}" --build "${WORK}/build")
run("${WORK}/build/cassi_demo")
# With -D PYTHON=<interpreter> -D PYTHON_DIR=<package dir under the prefix>: the Python package
# installed beside the library imports from the prefix alone and computes.
if (PYTHON)
  # (Lines, not semicolons: run() would split the code at them.)
  run("${CMAKE_COMMAND}" -E env "PYTHONPATH=${WORK}/prefix/${PYTHON_DIR}" "${PYTHON}" -c "
import numpy as np
import hpipe
assert hpipe.__file__.startswith('${WORK}/prefix'), hpipe.__file__
np.testing.assert_allclose(hpipe.exp(np.zeros(3)), np.ones(3))
print('installed hpipe imports from', hpipe.__file__)
")
endif ()
