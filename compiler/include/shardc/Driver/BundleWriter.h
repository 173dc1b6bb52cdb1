//===- BundleWriter.h - write a compiled bundle directory -------------------------------===//
//
// A bundle is a directory: program.pb (the Bundle message), weights.bin (the WEIGHTS region
// of every rank, absent for planning-only bundles), plan.txt (the human-readable plan),
// plan.json (the same plan, machine-readable; docs/plan-format.md) and, for training
// bundles, source.onnx (the input model without its trained parameters' values,
// the template of `shardrun --export-onnx`).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DRIVER_BUNDLEWRITER_H
#define SHARDC_DRIVER_BUNDLEWRITER_H

#include "shardc/Plan/PlanNotes.h"

#include "runtime/program/program.pb.h"

#include <string>
#include <vector>

namespace shardc {

inline constexpr const char *kProgramFileName = "program.pb";
inline constexpr const char *kWeightsFileName = "weights.bin";
inline constexpr const char *kPlanFileName = "plan.txt";
inline constexpr const char *kPlanJsonFileName = "plan.json";
// With pipeline stages: the schedule's predicted timeline of one step (Chrome trace JSON).
inline constexpr const char *kPredictedTraceFileName = "predicted_trace.json";
inline constexpr const char *kSourceOnnxFileName = "source.onnx";

// Writes the bundle into `dir` (created if needed); `weights` may be null for a planning-only
// bundle, `sourceOnnx` (the serialized source.onnx) null for a bundle without one; `notes`
// go into plan.txt and plan.json. Each file is written to a temporary name and renamed, so an
// interrupted run never leaves a half-written file behind. On failure returns false with a
// one-line `error`.
bool writeBundle(const std::string &dir, program::Bundle bundle, const std::vector<char> *weights,
                 const std::string *sourceOnnx, std::string &error,
                 const PlanNotes &notes = PlanNotes());

} // namespace shardc

#endif
