//===- BundleOutput.h - a compiled bundle, written with its source model ----------------===//
#ifndef SHARDC_DRIVER_BUNDLEOUTPUT_H
#define SHARDC_DRIVER_BUNDLEOUTPUT_H

#include "shardc/Driver/BundleWriter.h"
#include "shardc/Parallel/CompileOptions.h"

#include "runtime/program/program.pb.h"

#include "mlir/IR/MLIRContext.h"

#include <optional>
#include <vector>

namespace shardc {

// A compiled bundle before it is written.
struct CompiledBundle {
  program::Bundle bundle;
  // The weights file; none when some parameter's data was absent (planning only).
  std::optional<std::vector<char>> weights;
  PlanNotes notes;
};

// A bundle for `opts` without programs: format version, mode, source model's name.
program::Bundle newBundle(const CompileOptions &opts);

// Writes the bundle to opts.output (with source.onnx for training bundles), reports what was
// written on stderr (and the plan on stdout with --explain). 0, or 1 with the error printed.
int writeCompiledBundle(mlir::MLIRContext &ctx, const CompileOptions &opts,
                        const CompiledBundle &compiled);

} // namespace shardc

#endif
