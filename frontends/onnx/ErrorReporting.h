//===- ErrorReporting.h - one-line import errors ----------------------------------------===//
//
// Every import error is one line that starts with the model path. Names and messages come
// from the model file (or from libonnx), so they are escaped to printable characters and
// shortened before they appear in a message.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_ERRORREPORTING_H
#define SHARDC_FRONTENDS_ONNX_ERRORREPORTING_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <string>

namespace shardc::onnx_import {

// `text` with control and non-ASCII bytes escaped (\xNN), cut to a readable length.
std::string printable(llvm::StringRef text, size_t maxChars = 160);
// 'name', escaped like printable().
std::string quote(llvm::StringRef name);
// The first line of `text`, escaped like quote() but without the quotes.
std::string firstLine(llvm::StringRef text);
// ONNX TensorProto.DataType as a name: "float32", "float16", "int8", ...
std::string onnxTypeName(int64_t dataType);

// Collects the first error of an import as "<model path>: <message>".
class ErrorReporter {
public:
  ErrorReporter(std::string modelPath, std::string &out) : path_(std::move(modelPath)), out_(out) {}

  const std::string &modelPath() const { return path_; }
  // Records "<path>: <message>" unless an error was recorded before; returns failure().
  mlir::LogicalResult fail(const llvm::Twine &message);
  bool hasError() const { return recorded_; }

private:
  std::string path_;
  std::string &out_;
  bool recorded_ = false;
};

// Captures the first error diagnostic MLIR emits (shape inference, verifiers, the constant
// evaluator) while it is alive, so that the importer can put it into its own one-line error
// with the node's name. Diagnostics do not reach the context's other handlers meanwhile.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext &ctx);
  // The first error since the last take(), or "" if none; clears it.
  std::string take();
  // Where that error was reported (unknown when there was none).
  mlir::Location location() const { return location_; }

private:
  std::string first_;
  mlir::Location location_;
  mlir::ScopedDiagnosticHandler handler_;
};

} // namespace shardc::onnx_import

#endif
