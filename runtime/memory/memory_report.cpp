#include "runtime/memory/memory_report.h"

#include "runtime/common/planned_memory.h"

namespace shardc::runtime {

namespace {

std::string breakdown(const MemoryByUse &bytes) {
  std::string text;
  for (size_t i = 0; i < kMemoryUseCount; ++i)
    text += (i ? ", " : "") + std::string(memoryUseName(static_cast<MemoryUse>(i))) + " " +
            std::to_string(bytes[i]);
  return text;
}

// The plan's totals in the tracker's categories.
MemoryByUse plannedByUse(const PlannedMemory &plan) {
  MemoryByUse bytes{};
  bytes[static_cast<size_t>(MemoryUse::Arena)] = plan.arena;
  bytes[static_cast<size_t>(MemoryUse::Weights)] = plan.weights;
  bytes[static_cast<size_t>(MemoryUse::Workspace)] = plan.workspace + plan.commWorkspace;
  bytes[static_cast<size_t>(MemoryUse::StepInputs)] = plan.stepInputs;
  bytes[static_cast<size_t>(MemoryUse::StepOutputs)] = plan.stepOutputs;
  return bytes;
}

} // namespace

PeakMemoryReport comparePeakMemory(const program::Program &program, const MemoryTracker &tracker) {
  PeakMemoryReport report;
  const uint64_t planned = program.planned_peak_bytes();
  const uint64_t measured = tracker.peakBytes();
  const std::string measuredText = breakdown(tracker.peakByUse());
  report.planned = planned != 0;
  report.agrees = planned == measured;
  if (!report.planned) {
    report.text = "memory: measured peak " + std::to_string(measured) + " bytes (" + measuredText +
                  "); the bundle records no planned peak (compiled by an " +
                  "older shardc: recompile it to compare)";
  } else if (report.agrees) {
    report.text = "memory: planned peak " + std::to_string(planned) + " bytes, measured peak " +
                  std::to_string(measured) + " bytes (" + measuredText + ")";
  } else {
    report.text = "memory: measured peak " + std::to_string(measured) +
                  " bytes differs from the planned peak " + std::to_string(planned) +
                  " bytes (measured: " + measuredText +
                  "; planned: " + breakdown(plannedByUse(planPeakMemory(program))) + ")";
  }
  return report;
}

PeakMemoryReport compareDevicePeakMemory(const program::Program &program,
                                         const MemoryTracker &hostTracker, const char *deviceName,
                                         uint64_t deviceMeasuredPeak, uint64_t workspaceBytes) {
  PeakMemoryReport report;
  const PlannedMemory plan = planPeakMemory(program);
  // workspaceBytes is already the allocation's size (rounded as the plan's).
  const uint64_t planned = plan.arena + plan.weights + workspaceBytes;
  report.planned = true;
  report.agrees = planned == deviceMeasuredPeak;
  const MemoryByUse host = hostTracker.peakByUse();
  const std::string hostText =
      "; host: step inputs " + std::to_string(host[static_cast<size_t>(MemoryUse::StepInputs)]) +
      ", step outputs " + std::to_string(host[static_cast<size_t>(MemoryUse::StepOutputs)]) +
      " bytes at the host's peak";
  report.text = std::string("memory: on ") + deviceName + ": " +
                (report.agrees ? "planned peak " + std::to_string(planned) +
                                     " bytes, measured peak " + std::to_string(deviceMeasuredPeak)
                               : "measured peak " + std::to_string(deviceMeasuredPeak) +
                                     " bytes differs from the planned peak " +
                                     std::to_string(planned)) +
                " bytes (arena " + std::to_string(plan.arena) + ", weights " +
                std::to_string(plan.weights) + ", workspace " + std::to_string(workspaceBytes) +
                ": the plan's " + std::to_string(plan.workspace) + " for the CPU kernels, " +
                "the device's kernels need more)" + hostText;
  return report;
}

} // namespace shardc::runtime
