//===- SourceModel.h - the bundle's source.onnx -----------------------------------------===//
//
// `shardrun --export-onnx` writes the input model with its trained weights. The runtime has no
// ONNX importer and the bundle's program no longer knows the ONNX graph, so the compiler hands
// it the model itself as a template: the input ModelProto in which
//  - every trained parameter's initializer keeps name, data_type and dims but loses its values
//    (they are in weights.bin already, and the runtime replaces them by the trained ones), and
//  - every other tensor (frozen parameters, constants, Constant nodes) keeps its values, with
//    external data read in as raw_data, so the bundle stays self-contained when it is moved
//    away from the model's directory.
// Everything else (graph, opset imports, metadata, value_info) is the input's, unchanged.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_DRIVER_SOURCEMODEL_H
#define SHARDC_DRIVER_SOURCEMODEL_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"

#include <set>
#include <string>

namespace shardc {

// Builds source.onnx from the model file at `modelPath` (already imported successfully) for
// the trained parameters `trained` (Program.state_init names, which are initializer names).
// On success `out` holds the serialized model, or stays empty with `tooLarge` set when the
// model without the trained values still reaches protobuf's 2 GiB message limit. failure()
// with a one-line `error` naming the model otherwise.
mlir::LogicalResult buildSourceModel(mlir::MLIRContext &ctx, const std::string &modelPath,
                                     const std::set<std::string> &trained, std::string &out,
                                     bool &tooLarge, std::string &error);

} // namespace shardc

#endif
