//===- MemoryPlanner.h - static offsets for buffers with known lifetimes ----------------===//
//
// Every activation of a step has a static size and a lifetime [first, last] in op indices,
// so all of them can share one arena at offsets fixed at compile time. Greedy by size
// (largest first, lowest free offset) is simple and close to optimal on these graphs.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_MEMORYPLANNER_H
#define SHARDC_LOWERING_MEMORYPLANNER_H

#include <cstdint>
#include <vector>

namespace shardc {

inline constexpr uint64_t kBufferAlignment = 64;

struct BufferLifetime {
  uint64_t sizeBytes = 0;
  int64_t first = 0; // index of the op that writes it (-1: before the first op)
  int64_t last = 0;  // index of the last op that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<uint64_t> offsets; // one per buffer, aligned to kBufferAlignment
  uint64_t arenaBytes = 0;       // peak: end of the highest buffer
};

// Buffers whose lifetimes overlap (share an op index) never overlap in memory.
MemoryPlan planMemory(const std::vector<BufferLifetime> &buffers);

inline uint64_t alignUp(uint64_t n, uint64_t a = kBufferAlignment) { return (n + a - 1) / a * a; }

} // namespace shardc

#endif
