// Index blocks: when tensor parallelism splits a dimension that a kernel addresses by index
// values read at run time (gather's rows, a loss's classes), each device holds one contiguous
// block of it while the indices stay global. The optional attributes `index_offset` (the block's
// first global index) and `index_size` (the whole dimension's size) say which block
// (docs/kernels.md, "Index blocks").
#pragma once

#include "runtime/kernels/kernel.h"

#include <cstdint>

namespace shardc::runtime::cpu {

struct IndexBlock {
  int64_t offset = 0; // global index of the block's first entry
  int64_t whole = 0;  // size of the whole dimension (the local size when not split)
  int64_t local = 0;  // size of the block
  bool split = false; // whether the attributes were given

  // Whether global index `i` (in [0, whole)) is one of this block's.
  bool holds(int64_t i) const { return i >= offset && i - offset < local; }
};

// Whether either attribute is present (for kernels that must refuse a split).
bool hasIndexBlockAttrs(const KernelArgs &args);

// Reads the block of a dimension whose local size is `localSize`: the whole dimension when
// neither attribute is present; an error naming `kernel` when only one is, or when they do not
// describe a block of `localSize` inside [0, index_size).
Status readIndexBlock(const char *kernel, const KernelArgs &args, int64_t localSize,
                      IndexBlock *block);

} // namespace shardc::runtime::cpu
