//===- Initializers.h - parameters and constants from ONNX initializers ----------------===//
//
// An initializer becomes either
//  - a parameter: an argument of @forward (graph.param) whose bytes go to the WeightStore.
//    Floating-point initializers, and initializers that are also listed as graph inputs
//    (overridable defaults), are parameters;
//  - a constant: a graph.constant in the IR. Non-float initializers (shape and index
//    tensors) and every initializer consumed at a compile-time input position (Reshape's
//    shape, Slice's starts, ...), whose values the importer must read.
// A non-float initializer whose external-data file is absent while planning (requireWeights
// false) becomes a parameter without bytes instead, unless its values are needed at compile
// time.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_INITIALIZERS_H
#define SHARDC_FRONTENDS_ONNX_INITIALIZERS_H

#include "shardc/Support/WeightStore.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LogicalResult.h"

#include <set>
#include <string>
#include <vector>

namespace shardc::onnx_import {

class ErrorReporter;

struct ImportedInitializer {
  std::string name;
  bool isParameter = false;
  // For a parameter that cannot be trained, why (GraphDialect.h, kNotTrainableAttr).
  std::string notTrainable;
  mlir::RankedTensorType type;
  mlir::DenseElementsAttr value; // constants only
};

struct InitializerSet {
  std::vector<ImportedInitializer> entries; // in the graph's order
  std::set<std::string> names;
  std::set<std::string> parameterNames;
};

struct InitializerOptions {
  std::string baseDir;        // external data is relative to it ("" = current directory)
  bool requireWeights = true; // false: absent external-data files make absent parameters
  std::set<std::string> compileTimeNames; // see compileTimeInputNames()
  // The model's record of the parameters PyTorch trains (the shardc.trainable metadata the
  // project's export helper writes), when it has one: float initializers not in it are
  // buffers, never trained.
  std::optional<std::set<std::string>> recordedTrainable;
};

// Decodes every initializer of `graph` into `out` and the parameters' bytes into `weights`.
// Mutates `graph`: parameters' data is dropped (it now lives in `weights`) and constants'
// external data is inlined as raw_data, because libonnx's shape inference reads constant
// values but cannot follow external data.
mlir::LogicalResult loadInitializers(mlir::MLIRContext &ctx, onnx::GraphProto &graph,
                                     const InitializerOptions &options, InitializerSet &out,
                                     WeightStore &weights, ErrorReporter &errors);

// Inlines external data of Constant nodes' `value` tensors as raw_data, for the same reason.
mlir::LogicalResult inlineConstantNodeData(mlir::MLIRContext &ctx, onnx::GraphProto &graph,
                                           llvm::StringRef baseDir, ErrorReporter &errors);

} // namespace shardc::onnx_import

#endif
