#include "runtime/support/memory_tracker.h"

namespace shardc::runtime {

namespace {
thread_local MemoryCharge currentCharge;
} // namespace

const char *memoryUseName(MemoryUse use) {
  switch (use) {
  case MemoryUse::Arena:
    return "arena";
  case MemoryUse::Weights:
    return "weights";
  case MemoryUse::Workspace:
    return "workspace";
  case MemoryUse::StepInputs:
    return "step inputs";
  case MemoryUse::StepOutputs:
    return "step outputs";
  }
  return "unknown";
}

void MemoryTracker::allocated(MemoryUse use, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_[static_cast<size_t>(use)] += bytes;
  liveTotal_ += bytes;
  ++allocations_;
  // ">=" keeps the breakdown of the latest moment at the peak, which is the state a run ends in
  // when nothing is released afterwards: the easiest one to compare with the plan.
  if (liveTotal_ >= peakTotal_) {
    peakTotal_ = liveTotal_;
    atPeak_ = live_;
  }
}

void MemoryTracker::released(MemoryUse use, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_[static_cast<size_t>(use)] -= bytes;
  liveTotal_ -= bytes;
}

uint64_t MemoryTracker::liveBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return liveTotal_;
}

MemoryByUse MemoryTracker::liveByUse() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

uint64_t MemoryTracker::peakBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peakTotal_;
}

MemoryByUse MemoryTracker::peakByUse() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return atPeak_;
}

uint64_t MemoryTracker::allocationCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocations_;
}

MemoryCharge currentMemoryCharge() { return currentCharge; }

MemoryScope::MemoryScope(MemoryTracker *tracker, MemoryUse use) : previous_(currentCharge) {
  currentCharge = MemoryCharge{tracker, use};
}

MemoryScope::~MemoryScope() { currentCharge = previous_; }

} // namespace shardc::runtime
