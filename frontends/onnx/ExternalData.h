//===- ExternalData.h - tensors stored beside the model ---------------------------------===//
//
// ONNX stores large tensors outside the .onnx file: data_location = EXTERNAL and
// external_data entries "location" (a path relative to the model's directory), "offset" and
// "length" (bytes). Locations that are absolute or contain ".." are rejected, so a model can
// only make the compiler read files under its own directory.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_EXTERNALDATA_H
#define SHARDC_FRONTENDS_ONNX_EXTERNALDATA_H

#include "onnx/onnx_pb.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardc::onnx_import {

struct ExternalDataRef {
  std::string location;
  int64_t offset = 0;
  std::optional<int64_t> length;
};

// Reads and checks the external_data entries of `tensor`; failure() with `why`.
mlir::LogicalResult parseExternalDataRef(const onnx::TensorProto &tensor, ExternalDataRef &ref,
                                         std::string &why);

// Reads exactly `byteCount` bytes of `ref` into `out`. A file that does not exist sets
// `missing` and succeeds (the caller decides whether that is an error); every other problem
// (unreadable file, data outside the file, length disagreeing with the tensor's size) fails
// with `why`.
mlir::LogicalResult readExternalData(llvm::StringRef baseDir, const ExternalDataRef &ref,
                                     int64_t byteCount, std::vector<char> &out, bool &missing,
                                     std::string &why);

} // namespace shardc::onnx_import

#endif
