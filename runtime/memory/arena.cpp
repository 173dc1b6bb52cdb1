#include "runtime/memory/arena.h"

#include <string>
#include <utility>

namespace shardc::runtime {

Status Arena::create(uint64_t arenaBytes, std::shared_ptr<const AlignedBuffer> weights,
                     uint64_t weightsBytes, Arena *out) {
  if (!weights) {
    // A program without parameters still gets a non-null (empty) weights base; it stands for
    // the weights file, and is counted as one.
    MemoryScope scope(currentMemoryCharge().tracker, MemoryUse::Weights);
    auto empty = std::make_shared<AlignedBuffer>();
    SHARDC_RETURN_IF_ERROR(AlignedBuffer::allocate(0, "weights region", empty.get()));
    weights = std::move(empty);
  }
  if (weights->size() < weightsBytes)
    return Status::error("the weights region needs " + std::to_string(weightsBytes) +
                         " bytes but only " + std::to_string(weights->size()) + " were loaded");
  if (arenaBytes > SIZE_MAX)
    return Status::error("arena of " + std::to_string(arenaBytes) +
                         " bytes does not fit in memory");
  Arena arena;
  SHARDC_RETURN_IF_ERROR(
      AlignedBuffer::allocate(static_cast<size_t>(arenaBytes), "arena", &arena.scratch_));
  arena.weights_ = std::move(weights);
  arena.arenaBytes_ = arenaBytes;
  arena.weightsBytes_ = weightsBytes;
  *out = std::move(arena);
  return Status::ok();
}

uint8_t *Arena::base(program::Region region) {
  if (region == program::WEIGHTS)
    return const_cast<uint8_t *>(weights_->data());
  return scratch_.data();
}

uint64_t Arena::regionBytes(program::Region region) const {
  return region == program::WEIGHTS ? weightsBytes_ : arenaBytes_;
}

} // namespace shardc::runtime
