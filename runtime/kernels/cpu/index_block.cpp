// Reading and checking the index-block attributes (index_block.h).
#include "runtime/kernels/cpu/index_block.h"

#include <string>

namespace shardc::runtime::cpu {

namespace {

constexpr const char *kOffsetAttr = "index_offset";
constexpr const char *kSizeAttr = "index_size";

// getIntAttr, with the kernel named in the error.
Status readInt(const char *kernel, const KernelArgs &args, const char *name, int64_t *out) {
  Status s = getIntAttr(args, name, out);
  if (!s.isOk())
    return Status::error(std::string(kernel) + ": " + s.message());
  return Status::ok();
}

} // namespace

bool hasIndexBlockAttrs(const KernelArgs &args) {
  return hasAttr(args, kOffsetAttr) || hasAttr(args, kSizeAttr);
}

Status readIndexBlock(const char *kernel, const KernelArgs &args, int64_t localSize,
                      IndexBlock *block) {
  *block = IndexBlock{0, localSize, localSize, false};
  const bool hasOffset = hasAttr(args, kOffsetAttr), hasSize = hasAttr(args, kSizeAttr);
  if (!hasOffset && !hasSize)
    return Status::ok();
  if (!hasOffset || !hasSize)
    return Status::error(std::string(kernel) + ": attribute '" +
                         (hasOffset ? kOffsetAttr : kSizeAttr) + "' needs '" +
                         (hasOffset ? kSizeAttr : kOffsetAttr) +
                         "' too (an index block takes both)");
  int64_t offset = 0, whole = 0;
  SHARDC_RETURN_IF_ERROR(readInt(kernel, args, kOffsetAttr, &offset));
  SHARDC_RETURN_IF_ERROR(readInt(kernel, args, kSizeAttr, &whole));
  // Written so that nothing overflows: offset <= whole - localSize once localSize <= whole.
  if (whole < localSize || offset < 0 || offset > whole - localSize)
    return Status::error(std::string(kernel) + ": index_offset " + std::to_string(offset) +
                         " and index_size " + std::to_string(whole) +
                         " do not hold a block of the local size " + std::to_string(localSize) +
                         " (need 0 <= index_offset and index_offset + " +
                         std::to_string(localSize) + " <= index_size)");
  *block = IndexBlock{offset, whole, localSize, true};
  return Status::ok();
}

} // namespace shardc::runtime::cpu
