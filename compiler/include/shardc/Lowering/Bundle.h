//===- Bundle.h - write a compiled bundle directory -------------------------------------===//
//
// A bundle is a directory: program.pb (the Bundle message), weights.bin (the WEIGHTS region
// of every rank, absent for planning-only bundles) and plan.txt (the human-readable plan).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_BUNDLE_H
#define SHARDC_LOWERING_BUNDLE_H

#include "runtime/program/program.pb.h"

#include <string>
#include <vector>

namespace shardc {

inline constexpr const char *kProgramFileName = "program.pb";
inline constexpr const char *kWeightsFileName = "weights.bin";
inline constexpr const char *kPlanFileName = "plan.txt";

// Readable description of the program(s): inputs, outputs, memory, the op list with the
// buffers each op reads and writes.
std::string formatPlan(const program::Bundle &bundle);

// Writes the bundle into `dir` (created if needed); `weights` may be null for a planning-only
// bundle. Each file is written to a temporary name and renamed, so an interrupted run never
// leaves a half-written file behind. On failure returns false with a one-line `error`.
bool writeBundle(const std::string &dir, program::Bundle bundle,
                 const std::vector<char> *weights, std::string &error);

} // namespace shardc

#endif
