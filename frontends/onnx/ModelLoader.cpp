//===- ModelLoader.cpp ------------------------------------------------------------------===//
#include "frontends/onnx/ModelLoader.h"

#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/ImportLimits.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <climits>

namespace shardc::onnx_import {

mlir::FailureOr<std::unique_ptr<llvm::MemoryBuffer>> readModelFile(llvm::StringRef path,
                                                                   ErrorReporter &errors) {
  // Looked at before opening: opening a named pipe blocks until a writer comes, and a device
  // (/dev/zero) reads without end. A model is a regular file of less than 2 GiB (protobuf's
  // limit; larger weights live in external data).
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return errors.fail("cannot open: " + ec.message());
  if (status.type() == llvm::sys::fs::file_type::directory_file)
    return errors.fail("is a directory, expected an ONNX model file");
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return errors.fail("not a regular file (a pipe, device or socket); give the model as a "
                       "file");
  if (status.getSize() >= static_cast<uint64_t>(INT_MAX))
    return errors.fail("not a valid ONNX model (the file is 2 GiB or larger; protobuf cannot "
                       "parse it, store the weights as external data)");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return errors.fail("cannot open: " + buffer.getError().message());
  return std::move(*buffer);
}

mlir::LogicalResult parseModel(llvm::StringRef bytes, onnx::ModelProto &model,
                               ErrorReporter &errors) {
  // protobuf cannot parse a message of 2 GiB or more; ONNX keeps such weights external.
  if (bytes.size() >= static_cast<size_t>(INT_MAX))
    return errors.fail("not a valid ONNX model (the file is 2 GiB or larger; protobuf cannot "
                       "parse it, store the weights as external data)");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return errors.fail(
        "not a valid ONNX model (failed to parse protobuf; truncated or not an ONNX file)");
  // Almost any byte string parses as *some* message; a model without a graph is not one.
  if (!model.has_graph())
    return errors.fail("not a valid ONNX model (it has no graph; truncated or not an ONNX file)");
  return mlir::success();
}

mlir::FailureOr<int64_t> supportedOpset(const onnx::ModelProto &model, ErrorReporter &errors) {
  std::string range = "(shardc supports ONNX opset " + std::to_string(kMinOpset) + " to " +
                      std::to_string(kMaxOpset) + ")";
  std::optional<int64_t> opset;
  for (const onnx::OperatorSetIdProto &entry : model.opset_import()) {
    if (!entry.domain().empty() && entry.domain() != "ai.onnx")
      continue;
    if (opset && *opset != entry.version())
      return errors.fail("the model imports the default ONNX domain twice, as opset " +
                         std::to_string(*opset) + " and " + std::to_string(entry.version()));
    opset = entry.version();
  }
  if (!opset)
    return errors.fail("the model imports no default-domain ONNX opset " + range);
  if (*opset < kMinOpset || *opset > kMaxOpset)
    return errors.fail("opset " + std::to_string(*opset) + " is not supported " + range);
  return *opset;
}

std::string modelDirectory(llvm::StringRef modelPath) {
  return llvm::sys::path::parent_path(modelPath).str();
}

} // namespace shardc::onnx_import
