// The threads of the CPU kernels: one process-wide pool that elementwise, reduction and
// data-movement kernels split large tensors over, and the GEMMs their bands of rows (blas.cpp),
// sized by setCpuKernelThreads (kernel.h). A kernel calls parallelFor with the number of independent
// items it has and the fewest items worth a thread; small tensors run on the calling thread.
// Every item is computed by the same code whichever thread runs it, so results do not depend on
// the thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace shardc::runtime::cpu {

// The fewest elements of an elementwise pass worth a thread of their own: below, waking a
// thread costs about what it saves.
constexpr int64_t kElementsPerThread = int64_t{1} << 16;

// How many threads a kernel call may use now (>= 1).
int cpuKernelThreads();

// Calls body(begin, end) on disjoint ranges that cover [0, count), each at least `grain` items
// long (but the last), concurrently on up to cpuKernelThreads() threads, and returns when all
// have finished. The calling thread runs one range. When another call holds the pool (ranks
// of one process training side by side), or count < 2 * grain, body(0, count) runs here.
void parallelFor(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)> &body);

} // namespace shardc::runtime::cpu
