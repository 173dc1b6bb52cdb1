#include "runtime/common/comm_cost.h"

namespace shardc::runtime {

const char *collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::SendRecv:
    return "send_recv";
  }
  return "unknown_collective";
}

bool collectiveOfKernel(std::string_view kernel, CollectiveKind *kind) {
  for (int k = 0; k < kCollectiveKinds; ++k)
    if (kernel == collectiveName(static_cast<CollectiveKind>(k))) {
      *kind = static_cast<CollectiveKind>(k);
      return true;
    }
  return false;
}

uint64_t paddedToRanks(uint64_t elements, int ranks) {
  uint64_t n = ranks > 0 ? static_cast<uint64_t>(ranks) : 1;
  return (elements + n - 1) / n * n;
}

uint64_t collectiveBytesSent(CollectiveKind kind, uint64_t paddedElements, int ranks,
                             uint64_t elementBytes) {
  if (ranks <= 1)
    return 0;
  if (kind == CollectiveKind::SendRecv)
    return paddedElements * elementBytes;
  uint64_t chunkBytes = paddedElements / static_cast<uint64_t>(ranks) * elementBytes;
  uint64_t steps = static_cast<uint64_t>(ranks - 1);
  return kind == CollectiveKind::AllReduce ? 2 * steps * chunkBytes : steps * chunkBytes;
}

} // namespace shardc::runtime
