// The memory one rank's program runs in: the ARENA region (scratch for inputs and activations,
// one allocation of the planned arena_bytes, rounded up to 64) and the WEIGHTS region (the bundle's
// weights file, shared read-only between ranks). Every buffer of the program is a fixed
// offset into one of the two; nothing is allocated while the program runs.
#pragma once

#include "runtime/program/program.pb.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <memory>

namespace shardc::runtime {

class Arena {
public:
  Arena() = default;
  Arena(Arena &&) = default;
  Arena &operator=(Arena &&) = default;

  // Allocates the arena region. `weights` (may be null when `weightsBytes` is 0) must hold at
  // least `weightsBytes` bytes.
  static Status create(uint64_t arenaBytes, std::shared_ptr<const AlignedBuffer> weights,
                       uint64_t weightsBytes, Arena *out);

  // Base address of a region (64-aligned, never null). Weights are handed out writable only
  // because Tensor::data is `void *`: validation guarantees no op writes them.
  uint8_t *base(program::Region region);
  // The planned size of a region.
  uint64_t regionBytes(program::Region region) const;

  // Bytes this arena obtained from the system for its scratch region (the MemoryTracker of
  // the scope it was created in counted them as MemoryUse::Arena).
  uint64_t bytesAllocated() const { return scratch_.allocatedBytes(); }

private:
  AlignedBuffer scratch_;
  std::shared_ptr<const AlignedBuffer> weights_;
  uint64_t arenaBytes_ = 0;
  uint64_t weightsBytes_ = 0;
};

} // namespace shardc::runtime
