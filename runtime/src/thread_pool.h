// hpipe's pool for the CPU kernels' parallel loops (thread_pool.cpp).
#pragma once

namespace hpipe::detail {

// Makes Halide run every parallel loop in hpipe's pool, with num_threads() threads.
void install_thread_pool();

}  // namespace hpipe::detail
