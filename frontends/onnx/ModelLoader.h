//===- ModelLoader.h - reading and parsing a model --------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_MODELLOADER_H
#define SHARDC_FRONTENDS_ONNX_MODELLOADER_H

#include "onnx/onnx_pb.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace shardc::onnx_import {

class ErrorReporter;

// Reads the whole file; "cannot open: <strerror>" on failure.
mlir::FailureOr<std::unique_ptr<llvm::MemoryBuffer>> readModelFile(llvm::StringRef path,
                                                                   ErrorReporter &errors);

// Parses a ModelProto that has a graph.
mlir::LogicalResult parseModel(llvm::StringRef bytes, onnx::ModelProto &model,
                               ErrorReporter &errors);

// The default-domain opset the model imports, if shardc supports it (13 to 20).
mlir::FailureOr<int64_t> supportedOpset(const onnx::ModelProto &model, ErrorReporter &errors);

// The directory external data of the model file at `modelPath` is relative to.
std::string modelDirectory(llvm::StringRef modelPath);

} // namespace shardc::onnx_import

#endif
