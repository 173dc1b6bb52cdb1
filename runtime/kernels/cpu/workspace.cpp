#include "runtime/kernels/cpu/workspace.h"

#include <limits>
#include <string>

namespace shardc::runtime::cpu {

Workspace::Workspace(const KernelArgs &args)
    : base_(static_cast<uint8_t *>(args.workspace)),
      size_(args.workspace ? args.workspaceBytes : 0) {}

Status Workspace::takeBytes(const char *kernel, int64_t count, size_t elementSize, void **out) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() / 2;
  if (count < 0 || static_cast<uint64_t>(count) > limit / elementSize)
    return Status::error(std::string(kernel) + ": cannot take " + std::to_string(count) +
                         " elements of workspace");
  const uint64_t begin =
      (used_ + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  const uint64_t end = begin + static_cast<uint64_t>(count) * elementSize;
  if (sizing_) {
    *out = nullptr;
  } else {
    if (end > size_)
      return Status::error(std::string(kernel) + ": needs at least " + std::to_string(end) +
                           " bytes of workspace, but the program gives it " +
                           std::to_string(size_) + " (workspace_bytes too small)");
    *out = base_ + begin;
  }
  used_ = end;
  return Status::ok();
}

} // namespace shardc::runtime::cpu
