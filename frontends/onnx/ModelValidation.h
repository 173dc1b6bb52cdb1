//===- ModelValidation.h - libonnx's checker and shape inference ------------------------===//
//
// libonnx validates models whose opset it knows (Debian's libonnx 1.12: up to 17). For newer
// opsets it would check nodes against older schemas (e.g. ReduceMean-18's axes input against
// ReduceMean-13's attribute), so it is skipped: the importer's own per-op checks and the
// dialect verifiers are then the only validation.
//
// Shape inference runs *after* the importer has built and verified the IR, on a model whose
// every node the importer has accepted: libonnx 1.12's inference functions trust attributes
// they should check (LayerNormalization with an out-of-range axis reads out of bounds), so
// running it on unchecked input would let a malformed model crash the compiler.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_MODELVALIDATION_H
#define SHARDC_FRONTENDS_ONNX_MODELVALIDATION_H

#include "onnx/onnx_pb.h"

#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace shardc::onnx_import {

class ErrorReporter;

// ONNX's view of tensor types, by name.
using OnnxTypes = std::map<std::string, onnx::TypeProto>;

// Whether the linked libonnx knows `opset` of the default domain.
bool libonnxKnowsOpset(int64_t opset);

// The model libonnx checks: `model` with the parameters turned into graph inputs of the same
// type (their values matter to neither checking nor inference, the importer has already moved
// them out of the model, and they may even be absent while planning).
onnx::ModelProto validationCopy(const onnx::ModelProto &model,
                                const std::set<std::string> &parameterNames);

// onnx::checker::check_model; its first message line on failure.
mlir::LogicalResult runOnnxChecker(const onnx::ModelProto &copy, ErrorReporter &errors);

// Strict onnx::shape_inference::InferShapes with data propagation; fills `inferred` with the
// types of the graph's values and outputs.
mlir::LogicalResult runOnnxShapeInference(onnx::ModelProto &copy, OnnxTypes &inferred,
                                          ErrorReporter &errors);

// The types the model itself declares (value_info and graph outputs).
OnnxTypes declaredTypes(const onnx::GraphProto &graph);

} // namespace shardc::onnx_import

#endif
