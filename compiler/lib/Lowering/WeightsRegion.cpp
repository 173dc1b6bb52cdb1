//===- WeightsRegion.cpp ----------------------------------------------------------------===//
#include "shardc/Lowering/WeightsRegion.h"

#include "shardc/Lowering/MemoryPlanner.h"

#include <cstring>
#include <xxhash.h>

namespace shardc {

uint64_t WeightsRegion::nextOffset() {
  size_ = alignUp(size_);
  // While nothing is reserved the stored bytes are the region itself, padding included.
  if (complete())
    bytes_.resize(size_, 0);
  return size_;
}

uint64_t WeightsRegion::append(llvm::ArrayRef<char> data) {
  const uint64_t offset = nextOffset();
  if (complete())
    bytes_.insert(bytes_.end(), data.begin(), data.end());
  else
    stored_.emplace(offset, std::vector<char>(data.begin(), data.end()));
  size_ += data.size();
  return offset;
}

uint64_t WeightsRegion::reserve(uint64_t size, const std::string &name) {
  const uint64_t offset = nextOffset();
  reserved_.emplace(offset, name);
  size_ += size;
  return offset;
}

const char *WeightsRegion::data(uint64_t offset) const {
  if (reserved_.count(offset) != 0)
    return nullptr;
  if (auto it = stored_.find(offset); it != stored_.end())
    return it->second.data();
  return bytes_.data() + offset;
}

const std::string *WeightsRegion::absentName(uint64_t offset) const {
  auto it = reserved_.find(offset);
  return it == reserved_.end() ? nullptr : &it->second;
}

uint64_t WeightsRegion::contentHash(uint64_t offset, uint64_t size) const {
  if (const std::string *name = absentName(offset)) {
    const std::string key = "absent:" + *name;
    return XXH3_64bits(key.data(), key.size());
  }
  return XXH3_64bits(data(offset), size);
}

bool WeightsRegion::sameContent(uint64_t offset, const WeightsRegion &other, uint64_t otherOffset,
                                uint64_t size) const {
  const std::string *name = absentName(offset), *otherName = other.absentName(otherOffset);
  if (name != nullptr || otherName != nullptr)
    return name != nullptr && otherName != nullptr && *name == *otherName;
  return std::memcmp(data(offset), other.data(otherOffset), size) == 0;
}

} // namespace shardc
