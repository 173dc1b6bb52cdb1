//===- TrainableRecord.h - the model's record of what PyTorch trains --------------------===//
//
// ONNX initializers do not say which tensors are trained parameters and which are buffers
// (masks, running statistics). The project's export helper (tools/export/shardc_export.py)
// records the names of PyTorch's named_parameters() that require a gradient in the model's
// metadata_props, key "shardc.trainable", as a JSON list of strings.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_TRAINABLERECORD_H
#define SHARDC_FRONTENDS_ONNX_TRAINABLERECORD_H

#include "onnx/onnx_pb.h"

#include "mlir/Support/LogicalResult.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace shardc::onnx_import {

class ErrorReporter;

inline constexpr const char *kTrainableMetadataKey = "shardc.trainable";

// The recorded names, nullopt when the model has no record; an error when the record is not
// a JSON list of strings or appears twice.
mlir::FailureOr<std::optional<std::set<std::string>>>
readTrainableRecord(const onnx::ModelProto &model, ErrorReporter &errors);

// The same helper records, under "shardc.padding_idx", each nn.Embedding's padding row as a
// JSON object {initializer name: row}: PyTorch never sends that row a gradient from the
// lookup, and ONNX's Gather cannot say so. Empty without a record; an error when it is not
// such an object (rows are integers >= 0) or appears twice.
inline constexpr const char *kPaddingIdxMetadataKey = "shardc.padding_idx";
mlir::FailureOr<std::map<std::string, int64_t>>
readPaddingIdxRecord(const onnx::ModelProto &model, ErrorReporter &errors);

} // namespace shardc::onnx_import

#endif
