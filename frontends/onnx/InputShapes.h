//===- InputShapes.h - --input-shape overrides and static input shapes ------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_INPUTSHAPES_H
#define SHARDC_FRONTENDS_ONNX_INPUTSHAPES_H

#include "onnx/onnx_pb.h"

#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace shardc::onnx_import {

class ErrorReporter;

// Writes the --input-shape sizes into the graph inputs' declared shapes (so that libonnx's
// shape inference sees them too), then checks that every graph input that is not an
// initializer has a fully static shape. An override must name such an input, have its rank
// and agree with its fixed dimensions.
// Data parallelism: sets dim 0 of every graph input that is not an initializer to `rows` (one
// rank's rows of the global batch, after applyInputShapes fixed the global shapes), and drops
// the shapes the model records for intermediate values and outputs, which describe the
// global batch. Scalar inputs are an error.
mlir::LogicalResult setBatchRows(onnx::GraphProto &graph,
                                 const std::set<std::string> &initializerNames, int64_t rows,
                                 ErrorReporter &errors);

mlir::LogicalResult applyInputShapes(onnx::GraphProto &graph,
                                     const std::set<std::string> &initializerNames,
                                     const std::map<std::string, std::vector<int64_t>> &overrides,
                                     ErrorReporter &errors);

} // namespace shardc::onnx_import

#endif
