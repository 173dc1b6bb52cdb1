//===- OnnxImporter.h - ONNX ModelProto -> graph dialect --------------------------------===//
//
// Imports an ONNX model (default-domain opset 13 to 20) into one `func.func @forward` of the
// graph dialect, with every tensor statically shaped. Parameter values (floating-point
// initializers) go to a WeightStore beside the IR; the IR only names them.
//
// Errors are reported as ONE line without the "shardc: error: " prefix, starting with the
// model path, e.g. "model.onnx: node 'MatMul_12' (MatMul): ...". The importer never crashes
// on bad input (tests/fuzz runs it under libFuzzer).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_ONNXIMPORTER_H
#define SHARDC_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "shardc/Support/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardc::onnx_import {

struct ImportOptions {
  // Read from (importOnnxModel), and the prefix of every message and the file of every
  // location. External data is resolved relative to its directory.
  std::string modelPath;
  // --input-shape NAME=8x64: sizes for graph inputs, required for every symbolic dimension.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  // false: external-data files may be absent (planning only); such parameters are recorded
  // with present == false. Values needed at compile time (shape operands) are still required.
  bool requireWeights = true;
  // true when compiling a training step: a Dropout whose training_mode is true keeps its random
  // mask (graph.dropout {training}). false: every Dropout has inference semantics (identity).
  bool trainingDropout = false;
  // --padding-row: embeddings' padding rows, over the model's own record (TrainableRecord.h).
  std::map<std::string, int64_t> paddingRows;
  // Whether buffers the model updates as it runs (BatchNormalization's running statistics in
  // training mode) become graph.buffer results; a forward-only compile keeps none.
  bool updateBuffers = true;
};

struct ImportedModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  WeightStore weights;
  // What the import changed that the user should know, one line each (shardc prints them as
  // warnings): float64 regions computed in float32 (DoubleConstants.h).
  std::vector<std::string> warnings;
};

// Reads and imports the model file at opts.modelPath. Loads the graph and func dialects into
// `ctx`. On failure returns failure() with `error` set.
mlir::FailureOr<ImportedModel> importOnnxModel(mlir::MLIRContext &ctx, const ImportOptions &opts,
                                               std::string &error);

// Same, from bytes already in memory (the fuzzer uses it). External data then resolves
// relative to the current directory, and missing files are errors as usual.
mlir::FailureOr<ImportedModel> importOnnxModelFromBytes(mlir::MLIRContext &ctx,
                                                        llvm::StringRef bytes,
                                                        const ImportOptions &opts,
                                                        std::string &error);

} // namespace shardc::onnx_import

#endif // SHARDC_FRONTENDS_ONNX_ONNXIMPORTER_H
