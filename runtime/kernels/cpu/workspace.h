// The temporaries of one kernel call, carved out of the workspace the executor passes in
// KernelArgs (one per rank, sized by the compiler; see docs/kernels.md, "Workspace").
//
// A kernel that needs data-sized scratch memory takes it piece by piece with take(), in a fixed
// order, from a function it shares with its workspace-size function: the kernel runs it on a
// Workspace over KernelArgs::workspace, the size function on Workspace::sizing(), which hands
// out nothing and only adds the sizes up. So the size the compiler plans and the memory the
// kernel uses agree by construction.
#pragma once

#include "runtime/kernels/kernel.h"

#include <cstddef>
#include <cstdint>

namespace shardc::runtime::cpu {

// Every piece starts at a multiple of this offset from the (64-byte aligned) base.
inline constexpr uint64_t kWorkspaceAlignment = 64;

class Workspace {
public:
  // Hands out the workspace of this call.
  explicit Workspace(const KernelArgs &args);
  // Hands out nothing (every pointer is null) and counts the bytes the takes would need.
  static Workspace sizing() { return Workspace(); }

  // The next `count` elements of T. An error naming `kernel` when the workspace is too small
  // (or `count` is negative); the contents are garbage, the kernel initialises them.
  template <typename T> Status take(const char *kernel, int64_t count, T **out) {
    void *piece = nullptr;
    SHARDC_RETURN_IF_ERROR(takeBytes(kernel, count, sizeof(T), &piece));
    *out = static_cast<T *>(piece);
    return Status::ok();
  }

  // Bytes from the base to the end of the last piece taken.
  uint64_t bytesUsed() const { return used_; }

private:
  Workspace() : sizing_(true) {}
  Status takeBytes(const char *kernel, int64_t count, size_t elementSize, void **out);

  uint8_t *base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t used_ = 0;
  bool sizing_ = false;
};

// A workspace-size function's body: runs `takes(workspace)` (the kernel's take sequence) on a
// sizing workspace and stores the bytes it took.
template <typename Fn> Status measureWorkspace(uint64_t *bytes, Fn takes) {
  Workspace workspace = Workspace::sizing();
  SHARDC_RETURN_IF_ERROR(takes(workspace));
  *bytes = workspace.bytesUsed();
  return Status::ok();
}

} // namespace shardc::runtime::cpu
