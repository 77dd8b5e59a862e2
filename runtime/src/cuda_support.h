// The CUDA side of a call, kept apart so a build without CUDA has no CUDA symbols.
#pragma once

#include <cstddef>

#include "HalideRuntime.h"

namespace hpipe::detail {

// Makes `buffer` (host pointer null) refer to caller-owned device memory.
void wrap_device_pointer(void *context, halide_buffer_t *buffer, void *device_pointer);
// After a CUDA kernel: copy a host-memory output back (waiting for the kernels first); a
// device-memory output needs nothing, since calls on CUDA memory are stream-ordered.
int finish_device_output(void *context, halide_buffer_t *buffer, bool caller_device_memory);
// Copies a host-dirty `buffer`'s elements from its host pointer to its device memory, on the
// call's stream.
int copy_to_device(void *context, halide_buffer_t *buffer);
// Allocates device memory for `buffer` (host pointer null), uninitialised.
int allocate_device(void *context, halide_buffer_t *buffer);
// Copies a buffer of caller-owned device memory (wrapped) into a host buffer of the same extents.
int copy_device_to_host(void *context, halide_buffer_t *device, halide_buffer_t *host);
// Waits for the work queued on the call's stream (errors reported, not thrown: for destructors).
int sync_device(void *context, halide_buffer_t *buffer);
// Frees hpipe's device copy of a host-memory buffer, or detaches a caller's device memory.
void release_device(void *context, halide_buffer_t *buffer, bool caller_device_memory);

}  // namespace hpipe::detail
