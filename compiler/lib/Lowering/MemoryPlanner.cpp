//===- MemoryPlanner.cpp ----------------------------------------------------------------===//
#include "shardc/Lowering/MemoryPlanner.h"

#include <algorithm>
#include <numeric>

namespace shardc {

MemoryPlan planMemory(const std::vector<BufferLifetime> &buffers) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties in program order so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].sizeBytes > buffers[b].sizeBytes;
  });

  std::vector<size_t> placed;
  for (size_t idx : order) {
    const BufferLifetime &buf = buffers[idx];
    uint64_t size = alignUp(buf.sizeBytes);
    // Occupied ranges of already placed buffers alive at the same time, sorted by offset.
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t other : placed) {
      const BufferLifetime &o = buffers[other];
      if (o.last < buf.first || buf.last < o.first)
        continue;
      busy.emplace_back(plan.offsets[other], plan.offsets[other] + alignUp(o.sizeBytes));
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (size > 0 && offset + size <= begin)
        break;
      offset = std::max(offset, end);
    }
    plan.offsets[idx] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
    placed.push_back(idx);
  }
  return plan;
}

} // namespace shardc
