//===- Compile.h - ONNX model -> shardc bundle, as the shardc command runs it -----------===//
//
// import (frontends/onnx) -> pass pipelines (Pipelines/TrainPipelines.h) -> program emission
// (one program per distinct rank program; Parallel/) -> bundle directory (BundleOutput.h).
// With --strategy auto and --remat auto, the choice (Parallel/AutoStrategy.h, AutoRemat.h).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DRIVER_COMPILE_H
#define SHARDC_DRIVER_COMPILE_H

#include "shardc/Parallel/CompileOptions.h"

namespace shardc {

// Compiles opts.model as `opts` says (or prints its IR, with opts.emitMlir). The exit status:
// 0, or 1 with one "shardc: error: ..." line printed.
int compileModel(const CompileOptions &opts);

} // namespace shardc

#endif
