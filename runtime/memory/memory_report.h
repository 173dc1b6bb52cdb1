// The comparison shardrun prints at the end of a run: the program's planned peak memory
// (Program.planned_peak_bytes, broken down as in runtime/common/planned_memory.h) next to the
// peak its MemoryTracker measured. The two must be equal; a difference is a bug in the plan or
// in the runtime, and the report says which part differs.
#pragma once

#include "runtime/program/program.pb.h"
#include "runtime/support/memory_tracker.h"

#include <string>

namespace shardc::runtime {

struct PeakMemoryReport {
  bool planned = false; // the program records a planned peak (0: compiled by an older shardc)
  bool agrees = false;  // planned and measured peaks are equal
  // "memory: planned peak N bytes, measured peak N bytes (arena A, weights W, ...)", or, when
  // they differ, both breakdowns side by side.
  std::string text;
};

PeakMemoryReport comparePeakMemory(const program::Program &program, const MemoryTracker &tracker);

// With the arena, weights and workspace on a device (shardrun --device cuda): the device's
// measured peak (Device::memoryCounters) against the plan's arena and weights plus
// `workspaceBytes`, the workspace that device's kernels need (at least the plan's: cuBLASLt's
// scratch is larger than the CPU kernels'). The host's step inputs and outputs are reported
// beside it, not compared: on a device they are staging copies.
PeakMemoryReport compareDevicePeakMemory(const program::Program &program,
                                         const MemoryTracker &hostTracker, const char *deviceName,
                                         uint64_t deviceMeasuredPeak, uint64_t workspaceBytes);

} // namespace shardc::runtime
