// The kernels' thread pool. Workers wait on a condition variable between calls after spinning
// briefly: a training step calls hundreds of kernels back to back, and waking a sleeping thread
// costs tens of microseconds, about the time a 64k-element kernel takes.
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/kernel.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace shardc::runtime {

namespace cpu {

namespace {

int defaultThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

std::atomic<int> requestedThreads{defaultThreads()};

class KernelPool {
public:
  ~KernelPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      ++generation_;
    }
    wake_.notify_all();
    for (std::thread &t : workers_)
      t.join();
  }

  // Runs body over `parts` ranges of [0, count) on the workers and this thread; false (nothing
  // run) when another caller holds the pool.
  bool run(int64_t count, int parts, const std::function<void(int64_t, int64_t)> &body) {
    std::unique_lock<std::mutex> busy(callMutex_, std::try_to_lock);
    if (!busy.owns_lock())
      return false;
    grow(parts - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      count_ = count;
      parts_ = parts;
      pending_.store(parts - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    runPart(0);
    while (pending_.load(std::memory_order_acquire) > 0)
      std::this_thread::yield();
    return true;
  }

private:
  void runPart(int part) {
    const int64_t begin = count_ * part / parts_, end = count_ * (part + 1) / parts_;
    if (begin < end)
      (*body_)(begin, end);
  }

  void grow(int workers) {
    while (static_cast<int>(workers_.size()) < workers) {
      const int index = static_cast<int>(workers_.size()) + 1; // part 0 is the caller's
      // The generation before the call that starts it: the worker must take that call.
      const uint64_t seen = generation_.load(std::memory_order_acquire);
      workers_.emplace_back([this, index, seen] { work(index, seen); });
    }
  }

  void work(int index, uint64_t seen) {
    for (;;) {
      // Spin a little (yielding) for the next call, then sleep until it comes.
      const auto spinUntil = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (generation_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < spinUntil)
        std::this_thread::yield();
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stopping_)
        return;
      if (index < parts_) {
        runPart(index);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
      }
    }
  }

  std::mutex callMutex_; // held by the call the pool is running
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  const std::function<void(int64_t, int64_t)> *body_ = nullptr;
  int64_t count_ = 0;
  int parts_ = 1;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

KernelPool &pool() {
  static KernelPool instance;
  return instance;
}

} // namespace

int cpuKernelThreads() { return requestedThreads.load(std::memory_order_relaxed); }

void parallelFor(int64_t count, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &body) {
  grain = std::max<int64_t>(grain, 1);
  const int64_t parts = std::min<int64_t>(cpuKernelThreads(), count / grain);
  if (parts < 2 || !pool().run(count, static_cast<int>(parts), body))
    body(0, count);
}

} // namespace cpu

void setCpuKernelThreads(int threads) {
  threads = std::max(threads, 1);
  cpu::requestedThreads.store(threads, std::memory_order_relaxed);
  // The GEMMs thread on this pool (blas.cpp): each OpenBLAS call runs on its caller's thread.
  openblas_set_num_threads(1);
}

} // namespace shardc::runtime
