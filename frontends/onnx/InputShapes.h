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
mlir::LogicalResult applyInputShapes(onnx::GraphProto &graph,
                                     const std::set<std::string> &initializerNames,
                                     const std::map<std::string, std::vector<int64_t>> &overrides,
                                     ErrorReporter &errors);

} // namespace shardc::onnx_import

#endif
