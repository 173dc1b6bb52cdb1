#include "runtime/memory/memory_report.h"

#include "runtime/memory/planned_memory.h"

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
  bytes[static_cast<size_t>(MemoryUse::Workspace)] = plan.workspace;
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

} // namespace shardc::runtime
