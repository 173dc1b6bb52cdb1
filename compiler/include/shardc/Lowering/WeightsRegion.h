//===- WeightsRegion.h - the bytes of a bundle's WEIGHTS region -------------------------===//
//
// The WEIGHTS region as the emitter lays it out: 64-byte aligned ranges, one per frozen
// parameter or constant. A range whose data is absent (a parameter of a model planned with
// --no-weights, whose external data is not there) is reserved, not stored: planning a model
// costs memory in proportion to its graph, not to its parameters, and such a region is never
// written out (the bundle has no weights file), only measured.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_WEIGHTSREGION_H
#define SHARDC_LOWERING_WEIGHTSREGION_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardc {

class WeightsRegion {
public:
  // Bytes the region spans, reserved ranges included.
  uint64_t size() const { return size_; }
  // True when no range is reserved: bytes() is the whole region.
  bool complete() const { return reserved_.empty(); }
  // The whole region; only meaningful when complete().
  const std::vector<char> &bytes() const { return bytes_; }

  // Appends `data` at the next aligned offset and returns that offset.
  uint64_t append(llvm::ArrayRef<char> data);
  // Reserves `size` bytes at the next aligned offset for the absent data of `name` and returns
  // that offset.
  uint64_t reserve(uint64_t size, const std::string &name);

  // The stored bytes of the range at `offset`, or nullptr for a reserved one.
  const char *data(uint64_t offset) const;
  // The name a reserved range at `offset` was reserved for, or nullptr for a stored one.
  const std::string *absentName(uint64_t offset) const;
  // For finding equal ranges (RankPrograms' merging) without copying them: a hash of the
  // range's bytes, or of its name when reserved; and whether two ranges of `size` bytes are
  // equal: the same bytes, or reserved for the same name.
  uint64_t contentHash(uint64_t offset, uint64_t size) const;
  bool sameContent(uint64_t offset, const WeightsRegion &other, uint64_t otherOffset,
                   uint64_t size) const;

private:
  uint64_t nextOffset();

  uint64_t size_ = 0;
  std::vector<char> bytes_; // every stored range at its offset while complete(); else only
                            // up to the first reserved range, later ones in stored_
  std::map<uint64_t, std::string> reserved_; // offset -> name of the absent data
  std::map<uint64_t, std::vector<char>> stored_; // offset -> bytes stored after a reservation
};

} // namespace shardc

#endif
