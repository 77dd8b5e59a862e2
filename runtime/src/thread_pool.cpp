// hpipe's parallel loops: every Halide `parallel` loop of the CPU kernels runs here (device.cpp
// installs it as Halide's do_par_for).
//
// Why not Halide 14's own pool: its workers sleep on a condition variable as soon as a loop has no
// task left, and the calling thread sleeps until the last worker has finished. Each wake-up is a
// system call and, on a virtual machine, the wait for a halted virtual CPU: a W1 500 x 500 dot from
// Python took 28-35 us on two threads when the calls were 20-1000 us apart, more than the 23 us of
// one thread (13.5 us back to back). Here workers wait for the next loop by spinning for
// spin_time() before they sleep, and the caller waits for its loop's last tasks without sleeping:
// 13.5 / 15.8 / 24.6 us with calls 20 / 100 / 1000 us apart (docs/performance-notes.md).
//
// One loop runs in the pool at a time; a loop started meanwhile by another thread (or a nested
// one) runs in its own thread, serially. A loop takes at most the threads it is given: the caller
// and that many less one workers, which take its tasks in turn from one counter.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>

#include "thread_pool.h"

namespace hpipe {
namespace {

// How long an idle worker spins for the next loop before it sleeps: longer than the gap between
// back-to-back calls from Python (a few us) and than short PyTorch operations between them (as
// OpenMP's workers do, for longer). HPIPE_SPIN_US at start-up sets it (0: sleep at once, for
// processes that share their cores). It only pauses: a worker that also yielded the core was often
// left on its caller's CPU by Linux, both on one core, for tens of ms (docs/performance-notes.md).
constexpr int kDefaultSpinMicros = 1000;

std::chrono::microseconds spin_time() {
  static const std::chrono::microseconds spin = [] {
    const char *env = std::getenv("HPIPE_SPIN_US");
    char *end = nullptr;
    const long us = env ? std::strtol(env, &end, 10) : -1;
    return std::chrono::microseconds(env && *env && !*end && us >= 0 ? us : kDefaultSpinMicros);
  }();
  return spin;
}

// A spin-wait hint to the core, 16 times.
void pause() {
  for (int i = 0; i < 16; i++) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
}

// How the caller waits for its workers: a short pause, then a yield to any other runnable thread
// of this CPU (a worker running the last task may share it).
void pause_briefly() {
  pause();
  sched_yield();
}

class ThreadPool {
 public:
  int run(detail::RunTask run_task, void *user_context, halide_task_t task, int min, int size,
          std::uint8_t *closure, int threads) {
    if (threads < 2 || size < 2 || in_loop) return run_serially(run_task, user_context, task, min, size, closure);
    std::unique_lock<std::mutex> busy(submit_, std::try_to_lock);
    if (!busy.owns_lock()) return run_serially(run_task, user_context, task, min, size, closure);
    in_loop = true;  // a parallel loop inside a task runs serially
    const int workers = ensure_workers(threads - 1);
    // Close the previous loop to latecomers, wait until every worker has left it, then publish.
    const std::uint64_t generation = (state_.load() >> 32) + 1;
    state_.store(generation << 32 | kClosed);
    while (joined_.load() != 0) pause_briefly();
    loop_ = Loop{run_task, user_context, task, closure, min, static_cast<std::uint32_t>(size), workers};
    status_.store(0);
    state_.store(generation << 32);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
    take_tasks(generation);
    while (joined_.load() != 0) pause_briefly();  // the workers' last tasks
    in_loop = false;
    return status_.load();
  }

  // After fork() the child has none of the workers: a fresh pool (the old one is left as it is).
  static ThreadPool *&instance() {
    static ThreadPool *pool = [] {
      pthread_atfork(nullptr, nullptr, [] { instance() = new ThreadPool; });
      return new ThreadPool;
    }();
    return pool;
  }

 private:
  static constexpr std::uint32_t kClosed = 0xffffffffu;  // a loop's counter while it is being replaced

  struct Loop {
    detail::RunTask run_task = nullptr;
    void *user_context = nullptr;
    halide_task_t task = nullptr;
    std::uint8_t *closure = nullptr;
    int min = 0;
    std::uint32_t size = 0;
    int workers = 0;  // workers that may take tasks: the first `workers` of the pool
  };

  static int run_serially(detail::RunTask run_task, void *user_context, halide_task_t task, int min, int size,
                          std::uint8_t *closure) {
    for (int i = min; i < min + size; i++)
      if (const int status = run_task(user_context, task, i, closure)) return status;
    return 0;
  }

  // Claims and runs tasks of loop `generation` until none is left (or one failed).
  void take_tasks(std::uint64_t generation) {
    const Loop loop = loop_;
    std::uint64_t state = state_.load();
    while (status_.load() == 0) {
      const std::uint32_t next = static_cast<std::uint32_t>(state);
      if (state >> 32 != generation || next >= loop.size) return;
      if (!state_.compare_exchange_weak(state, state + 1)) continue;
      if (const int status =
              loop.run_task(loop.user_context, loop.task, loop.min + static_cast<int>(next), loop.closure)) {
        int none = 0;
        status_.compare_exchange_strong(none, status);
        return;
      }
      state = state_.load();
    }
  }

  // Starts workers up to `count`; returns how many there are (fewer where the system refuses a
  // thread: the loop then runs on those, never an exception through Halide's code).
  int ensure_workers(int count) {
    while (started_ < count) {
      try {
        std::thread([this, id = started_] { work(id); }).detach();
      } catch (const std::system_error &) {
        break;
      }
      started_++;
    }
    return std::min(started_, count);
  }

  void work(int id) {
    in_loop = true;
    std::uint64_t seen = 0;  // the last generation this worker waited past
    for (;;) {
      const std::uint64_t generation = wait_for_loop_after(seen);
      seen = generation;
      // Join, then check the loop is still the one seen and open: the caller replaces a loop only
      // once no worker has joined it, so while joined its fields stay put.
      joined_.fetch_add(1);
      const std::uint64_t state = state_.load();
      if (state >> 32 == generation && static_cast<std::uint32_t>(state) != kClosed && id < loop_.workers) {
        take_tasks(generation);
      }
      joined_.fetch_sub(1);
    }
  }

  // The generation of the next loop after `seen`: spinning for spin_time(), then asleep.
  std::uint64_t wait_for_loop_after(std::uint64_t seen) {
    std::uint64_t generation = seen;
    const auto published = [&] {
      const std::uint64_t state = state_.load();
      generation = state >> 32;
      return generation != seen && static_cast<std::uint32_t>(state) != kClosed;
    };
    const auto until = std::chrono::steady_clock::now() + spin_time();
    while (!published()) {
      if (std::chrono::steady_clock::now() < until) {
        pause();
        continue;
      }
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, published);
      sleepers_.fetch_sub(1);
      break;
    }
    return generation;  // the one `published` saw open
  }

  static thread_local bool in_loop;  // this thread runs a parallel loop's tasks (a worker always)

  std::mutex submit_;  // held by the thread whose loop the pool runs
  int started_ = 0;    // workers started (guarded by submit_)
  Loop loop_;          // written only while no worker has joined (below)
  // The current loop: its generation (high 32 bits) and its next task (low 32 bits, or kClosed).
  std::atomic<std::uint64_t> state_{0};
  std::atomic<int> joined_{0};  // workers inside the current loop
  std::atomic<int> status_{0};  // the first failed task's status
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
};

thread_local bool ThreadPool::in_loop = false;

}  // namespace

namespace detail {
int run_parallel_loop(RunTask run_task, void *user_context, halide_task_t task, int min, int size,
                      std::uint8_t *closure, int threads) {
  return ThreadPool::instance()->run(run_task, user_context, task, min, size, closure, threads);
}
}  // namespace detail
}  // namespace hpipe
