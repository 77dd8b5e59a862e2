// The AOT kernels, by op and element type: Kernel{cpu, cuda} (cuda is null without HPIPE_CUDA).
#pragma once

#include "call.h"
#include "hpipe_all_kernels.h"  // every hpipe_<op>_<type>_<backend>, generated

#define HPIPE_KERNEL_CPU(name) &name##_cpu
#ifdef HPIPE_HAVE_CUDA
#define HPIPE_KERNEL_CUDA(name) &name##_cuda
#else
#define HPIPE_KERNEL_CUDA(name) nullptr
#endif
// Kernel{hpipe_<op>_<type>_cpu, hpipe_<op>_<type>_cuda}
#define HPIPE_KERNEL(name) \
  ::hpipe::detail::Kernel<decltype(&name##_cpu)> { HPIPE_KERNEL_CPU(name), HPIPE_KERNEL_CUDA(name) }
// The same and hpipe_<op>_<type>_cpu_streaming, for a kernel its family lists as STREAMING.
#define HPIPE_STREAMING_KERNEL(name)                                       \
  ::hpipe::detail::Kernel<decltype(&name##_cpu)> {                         \
    HPIPE_KERNEL_CPU(name), HPIPE_KERNEL_CUDA(name), &name##_cpu_streaming \
  }
