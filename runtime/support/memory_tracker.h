// The measured side of "planned peak memory == measured peak memory": a per-rank counter of
// the bytes the runtime holds for running one program, and of their high-water mark.
//
// What is counted is decided where memory is obtained, not by summing up sizes afterwards:
// AlignedBuffer (arena, weights, workspace) and the storage of HostTensor (the step's input
// and output tensors, through TrackedAllocator) report each allocation and release to the
// tracker of the MemoryScope that is active on the allocating thread. Code that allocates
// outside any scope (data sources, checkpoints, .npy file images, tests) is not counted: those
// bytes are not part of the program's plan (docs/plan-format.md, "Peak memory").
//
// A scope names the tracker and what the memory is for, so the peak can be broken down the
// same way as the plan: MemoryScope scope(&tracker, MemoryUse::Arena). Scopes nest; the
// innermost one wins, and a scope with a null tracker turns counting off inside it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace shardc::runtime {

// What an allocation is for; the categories of the planned peak (docs/plan-format.md).
enum class MemoryUse {
  Arena,       // the ARENA region
  Weights,     // the WEIGHTS region (the bundle's weights file)
  Workspace,   // the kernels' scratch memory
  StepInputs,  // host tensors fed to the program (batch, parameters, optimizer state, ...)
  StepOutputs, // host tensors the program's outputs are copied into
};
inline constexpr size_t kMemoryUseCount = 5;
// "arena", "weights", "workspace", "step inputs", "step outputs".
const char *memoryUseName(MemoryUse use);

using MemoryByUse = std::array<uint64_t, kMemoryUseCount>;

// Thread-safe: a tensor may be released on another thread than the one that allocated it.
// Must outlive every allocation it counted (declare it before the objects that hold them).
class MemoryTracker {
public:
  MemoryTracker() = default;
  MemoryTracker(const MemoryTracker &) = delete;
  MemoryTracker &operator=(const MemoryTracker &) = delete;

  void allocated(MemoryUse use, uint64_t bytes);
  void released(MemoryUse use, uint64_t bytes);

  // Bytes held now, in total and per use.
  uint64_t liveBytes() const;
  MemoryByUse liveByUse() const;
  // The highest liveBytes() so far, and what was held per use at the moment it was reached.
  uint64_t peakBytes() const;
  MemoryByUse peakByUse() const;
  // Number of allocations counted so far (releases do not decrease it): a training step that
  // allocates nothing leaves it unchanged.
  uint64_t allocationCount() const;

private:
  mutable std::mutex mutex_;
  MemoryByUse live_{};
  MemoryByUse atPeak_{};
  uint64_t liveTotal_ = 0;
  uint64_t peakTotal_ = 0;
  uint64_t allocations_ = 0;
};

// Where the current thread's allocations are charged: a tracker (null = not counted) and a use.
struct MemoryCharge {
  MemoryTracker *tracker = nullptr;
  MemoryUse use = MemoryUse::Arena;

  void allocated(uint64_t bytes) const {
    if (tracker)
      tracker->allocated(use, bytes);
  }
  void released(uint64_t bytes) const {
    if (tracker)
      tracker->released(use, bytes);
  }
};

// The charge of the innermost active MemoryScope on this thread (no tracker outside scopes).
MemoryCharge currentMemoryCharge();

// Charges the current thread's allocations to (tracker, use) until it goes out of scope. The
// charge is a thread-local because allocation sites such as std::vector's allocator cannot be
// handed parameters.
class MemoryScope {
public:
  MemoryScope(MemoryTracker *tracker, MemoryUse use);
  ~MemoryScope();
  MemoryScope(const MemoryScope &) = delete;
  MemoryScope &operator=(const MemoryScope &) = delete;

private:
  MemoryCharge previous_;
};

} // namespace shardc::runtime
