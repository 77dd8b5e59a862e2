// hpipe's pool for the CPU kernels' parallel loops (thread_pool.cpp): the library installs it as
// Halide's do_par_for (device.cpp), hpipe-tune in its JIT pipelines, so both time the same pool.
#pragma once

#include <cstdint>

#include "HalideRuntime.h"

namespace hpipe::detail {

// Runs one task of a loop: Halide's halide_do_task (which honours a custom do_task), or a call.
using RunTask = int (*)(void *user_context, halide_task_t task, int index, std::uint8_t *closure);

// Runs the tasks min .. min + size - 1 of a parallel loop on at most `threads` threads (the caller
// and the pool's workers); returns the first failed task's status, or 0.
int run_parallel_loop(RunTask run_task, void *user_context, halide_task_t task, int min, int size,
                      std::uint8_t *closure, int threads);

// task(nullptr, i, closure) for i in 0 .. count - 1 on at most `threads` threads (num_threads()):
// the runtime's own loops beside the kernels (a transpose, per-band quality). Returns the first
// failed task's status, or 0.
int run_tasks(halide_task_t task, int count, void *closure, int threads);

}  // namespace hpipe::detail
