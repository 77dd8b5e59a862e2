// hpipe's parallel loops: every Halide `parallel` loop of the CPU kernels runs here (device.cpp
// installs it as Halide's do_par_for).
//
// Why not Halide 14's own pool: its workers sleep on a condition variable as soon as a loop has no
// task left, and the calling thread sleeps until the last worker has finished. Each wake-up is a
// system call and, on a virtual machine, the wait for a halted virtual CPU: a W1 500 x 500 dot from
// Python took 28-35 us on two threads when the calls were 20-1000 us apart, more than the 23 us of
// one thread (13.5 us back to back). Here workers wait for the next loop by spinning for
// spin_time() before they sleep, and the caller waits for its loop's last tasks without sleeping:
// 13.2 / 13.8 / 21.7 us with calls 20 / 100 / 1000 us apart (docs/performance-notes.md).
//
// A pool runs one loop at a time; a loop started meanwhile by another thread takes another pool
// (Pools), a nested one runs serially. A loop takes at most the threads it is given: the caller
// and that many less one workers of its pool, which take its tasks in turn from one counter.
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>

#include "thread_pool.h"

#include "environment.h"

namespace hpipe {
namespace {

// How long an idle worker spins for the next loop before it sleeps: longer than the gap between
// back-to-back calls from Python (a few us) and than short PyTorch operations between them (as
// OpenMP's workers do, for longer). HPIPE_SPIN_US at start-up sets it (0: sleep at once, for
// processes that share their cores). It only pauses: a worker that also yielded the core was often
// left on its caller's CPU by Linux, both on one core, for tens of ms (docs/performance-notes.md).
constexpr int kDefaultSpinMicros = 1000;

std::chrono::microseconds spin_time() {
  static const std::chrono::microseconds spin(detail::environment().spin_us.value_or(kDefaultSpinMicros));
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

// Moves the calling thread to another of its allowed CPUs, then allows them all again (it stays
// where it went). A worker woken on its caller's CPU does so: Linux often woke it there, and
// left the two threads sharing one core for hundreds of calls (docs/performance-notes.md).
void move_off_cpu(int cpu) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2 || !CPU_ISSET(cpu, &allowed))
    return;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (sched_setaffinity(0, sizeof others, &others) == 0) sched_setaffinity(0, sizeof allowed, &allowed);
}

// How the caller waits for its workers: a short pause, then a yield to any other runnable thread
// of this CPU (a worker running the last task may share it).
void pause_briefly() {
  pause();
  sched_yield();
}

class ThreadPool {
 public:
  // The pool runs one loop at a time: the caller of run() holds it, from try_acquire() to release().
  bool try_acquire() { return submit_.try_lock(); }
  void release() { submit_.unlock(); }

  int run(detail::RunTask run_task, void *user_context, halide_task_t task, int min, int size, std::uint8_t *closure,
          int threads) {
    in_loop = true;  // a parallel loop inside a task runs serially
    const int workers = ensure_workers(threads - 1);
    // Close the previous loop to latecomers, wait until every worker has left it, then publish.
    const std::uint64_t generation = (state_.load() >> 32) + 1;
    state_.store(generation << 32 | kClosed);
    while (joined_.load() != 0) pause_briefly();
    loop_ = Loop{run_task, user_context, task, closure, min, static_cast<std::uint32_t>(size), workers, sched_getcpu()};
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

  static int run_serially(detail::RunTask run_task, void *user_context, halide_task_t task, int min, int size,
                          std::uint8_t *closure) {
    for (int i = min; i < min + size; i++)
      if (const int status = run_task(user_context, task, i, closure)) return status;
    return 0;
  }

  static thread_local bool in_loop;  // this thread runs a parallel loop's tasks (a worker always)

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
    int caller_cpu = -1;
  };

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

  // Signals sent to the process go to the application's own threads, never to these: a handler
  // run here races the thread it was written for (the hpipe tool's removal of its temporaries ran
  // on a worker while the main thread renamed them). Held in the starting thread while a worker
  // starts, so that the worker is born with them held (set in the worker, one could arrive first).
  // Faults, and the profilers' timer signals, stay.
  class ProcessSignalsHeld {
   public:
    ProcessSignalsHeld() {
      sigset_t process_signals;
      sigemptyset(&process_signals);
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGWINCH})
        sigaddset(&process_signals, sig);
      pthread_sigmask(SIG_BLOCK, &process_signals, &before_);
    }
    ~ProcessSignalsHeld() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }

   private:
    sigset_t before_;
  };

  // Starts workers up to `count`; returns how many there are (fewer where the system refuses a
  // thread: the loop then runs on those, never an exception through Halide's code).
  int ensure_workers(int count) {
    if (started_ >= count) return count;  // every loop asks: no system call then
    const ProcessSignalsHeld held;
    while (started_ < count) {
      try {
        std::thread([this, id = started_] { work(id); }).detach();
      } catch (...) {  // std::system_error, or std::bad_alloc for the thread's state
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
        if (sched_getcpu() == loop_.caller_cpu) move_off_cpu(loop_.caller_cpu);
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

// One pool per loop running at the same time: a caller takes a free pool, or starts one while
// the pools' threads fit the cores, so that threads calling hpipe concurrently each get their
// share (as hpipe.dask sizes them for a worker's Dask threads), not one pool and the rest serial;
// callers beyond the cores run their loops serially, without workers spinning beside them.
class Pools {
 public:
  // A pool the caller now holds (ThreadPool::try_acquire), or nullptr: run the loop serially.
  ThreadPool *acquire(int threads) {
    const int known = count_.load();
    for (int i = 0; i < known; i++)
      if (pools_[i]->try_acquire()) return pools_[i];
    std::lock_guard<std::mutex> lock(grow_);
    const int now = count_.load();
    for (int i = known; i < now; i++)
      if (pools_[i]->try_acquire()) return pools_[i];
    if (now == kMaxPools || (now + 1) * threads > std::max(cores_, threads)) return nullptr;
    auto *pool = new ThreadPool;
    pool->try_acquire();
    pools_[now] = pool;
    count_.store(now + 1);
    return pool;
  }

  // After fork() the child has none of the workers: fresh pools (the old ones are left as they are).
  static Pools *&instance() {
    static Pools *pools = [] {
      pthread_atfork(nullptr, nullptr, [] { instance() = new Pools; });
      return new Pools;
    }();
    return pools;
  }

 private:
  static constexpr int kMaxPools = 64;
  const int cores_ = static_cast<int>(std::thread::hardware_concurrency());
  std::array<ThreadPool *, kMaxPools> pools_{};  // the first count_ are started
  std::atomic<int> count_{0};
  std::mutex grow_;
};

}  // namespace

namespace detail {
int run_parallel_loop(RunTask run_task, void *user_context, halide_task_t task, int min, int size,
                      std::uint8_t *closure, int threads) {
  if (threads < 2 || size < 2 || ThreadPool::in_loop) {
    return ThreadPool::run_serially(run_task, user_context, task, min, size, closure);
  }
  ThreadPool *pool = Pools::instance()->acquire(threads);
  if (!pool) return ThreadPool::run_serially(run_task, user_context, task, min, size, closure);
  const int status = pool->run(run_task, user_context, task, min, size, closure, threads);
  pool->release();
  return status;
}
int run_tasks(halide_task_t task, int count, void *closure, int threads) {
  const RunTask direct = [](void *user_context, halide_task_t f, int index, std::uint8_t *c) {
    return f(user_context, index, c);
  };
  return run_parallel_loop(direct, nullptr, task, 0, count, static_cast<std::uint8_t *>(closure), threads);
}
}  // namespace detail
}  // namespace hpipe
