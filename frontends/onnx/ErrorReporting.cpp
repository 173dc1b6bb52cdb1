//===- ErrorReporting.cpp ---------------------------------------------------------------===//
#include "frontends/onnx/ErrorReporting.h"

#include "onnx/onnx_pb.h"

namespace shardc::onnx_import {

// The default length limit is long enough for any real tensor name and short enough to keep a
// fuzzed one readable.
std::string printable(llvm::StringRef text, size_t maxChars) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= maxChars) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string quote(llvm::StringRef name) { return "'" + printable(name) + "'"; }

std::string firstLine(llvm::StringRef text) {
  text = text.trim();
  return printable(text.substr(0, text.find('\n')).rtrim(), /*maxChars=*/400);
}

std::string onnxTypeName(int64_t dataType) {
  using onnx::TensorProto;
  switch (dataType) {
  case TensorProto::FLOAT:
    return "float32";
  case TensorProto::UINT8:
    return "uint8";
  case TensorProto::INT8:
    return "int8";
  case TensorProto::UINT16:
    return "uint16";
  case TensorProto::INT16:
    return "int16";
  case TensorProto::INT32:
    return "int32";
  case TensorProto::INT64:
    return "int64";
  case TensorProto::STRING:
    return "string";
  case TensorProto::BOOL:
    return "bool";
  case TensorProto::FLOAT16:
    return "float16";
  case TensorProto::DOUBLE:
    return "float64";
  case TensorProto::UINT32:
    return "uint32";
  case TensorProto::UINT64:
    return "uint64";
  case TensorProto::COMPLEX64:
    return "complex64";
  case TensorProto::COMPLEX128:
    return "complex128";
  case TensorProto::BFLOAT16:
    return "bfloat16";
  case TensorProto::UNDEFINED:
    return "undefined";
  // Added after ONNX 1.12 (IR 9/10), so not in Debian's enum.
  case 17:
  case 18:
  case 19:
  case 20:
    return "float8";
  case 21:
    return "uint4";
  case 22:
    return "int4";
  default:
    return "unknown type " + std::to_string(dataType);
  }
}

mlir::LogicalResult ErrorReporter::fail(const llvm::Twine &message) {
  if (!recorded_) {
    recorded_ = true;
    out_ = path_ + ": " + message.str();
    // One line, whatever the pieces contained.
    for (char &c : out_)
      if (c == '\n' || c == '\r')
        c = ' ';
  }
  return mlir::failure();
}

DiagnosticCapture::DiagnosticCapture(mlir::MLIRContext &ctx)
    : location_(mlir::UnknownLoc::get(&ctx)), handler_(&ctx, [this](mlir::Diagnostic &diag) {
        if (diag.getSeverity() == mlir::DiagnosticSeverity::Error && first_.empty()) {
          first_ = firstLine(diag.str());
          location_ = diag.getLocation();
        }
        return mlir::success();
      }) {}

std::string DiagnosticCapture::take() {
  std::string message = std::move(first_);
  first_.clear();
  return message;
}

} // namespace shardc::onnx_import
