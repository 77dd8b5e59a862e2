// Control of the fake driver library (fake_cuda.cpp), for tests/test_fake_cuda.cpp.
#pragma once

// Every byte of a new device allocation.
constexpr unsigned char kFakeCudaFreshByte = 0x7f;

extern "C" {
// Calls of a driver entry point so far (the copies counted under their names without _v2).
long long hpipe_fake_cuda_calls(const char *function);
// When `function` was last called: a number that grows with every call of any entry point (0: never).
long long hpipe_fake_cuda_last_call(const char *function);
// The stream of the last kernel launch.
void *hpipe_fake_cuda_launch_stream();
// Device allocations not freed.
long long hpipe_fake_cuda_live_allocations();
// The first misuse seen (a device range outside the live allocations, an unknown kernel, ...), or "".
const char *hpipe_fake_cuda_misuse();
void hpipe_fake_cuda_clear_misuse();
// The calls of `function` after `after_calls` more successful ones fail, `times` of them.
void hpipe_fake_cuda_fail(const char *function, long long after_calls, long long times);
}
