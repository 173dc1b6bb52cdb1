//===- TensorDecoding.h - ONNX tensors and types -> MLIR --------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_TENSORDECODING_H
#define SHARDC_FRONTENDS_ONNX_TENSORDECODING_H

#include "onnx/onnx_pb.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LogicalResult.h"

#include <string>
#include <vector>

namespace shardc::onnx_import {

// f32, i64, i32 or i1 for the ONNX element types shardc supports; a null Type otherwise.
mlir::Type elementTypeFor(mlir::MLIRContext &ctx, int64_t onnxDataType);
// Bytes per element in the little-endian layout of raw_data and the WeightStore (bool: 1).
int64_t elementByteSize(mlir::Type elementType);
// "element type float16 is not supported (...)".
std::string unsupportedElementType(int64_t onnxDataType);
// "tensor<2x3xf32>", for messages.
std::string describeType(mlir::RankedTensorType type);

// The static tensor type of a TensorProto's dims and data_type; failure() with `why` (a phrase
// without prefix) for an unsupported element type or an invalid shape.
mlir::FailureOr<mlir::RankedTensorType>
tensorTypeOf(mlir::MLIRContext &ctx, const onnx::TensorProto &tensor, std::string &why);

// A tensor's values in the WeightStore layout.
struct DecodedTensor {
  mlir::RankedTensorType type;
  bool present = false;    // false: its external-data file does not exist
  std::string missingFile; // the location that was not found (when !present)
  std::vector<char> bytes; // little-endian, row-major; bool as one 0/1 byte per element
};

// Decodes `tensor` (raw_data, the typed repeated fields, or external data resolved relative to
// `baseDir`, "" meaning the current directory). A missing external-data file is not an error
// here: the result has present == false and the caller decides. Other problems (wrong data
// size, bad external-data entries, unsupported types) fail with `why`.
mlir::LogicalResult decodeTensor(mlir::MLIRContext &ctx, const onnx::TensorProto &tensor,
                                 llvm::StringRef baseDir, DecodedTensor &out, std::string &why);

// The values of a present DecodedTensor as an attribute (bool as i1).
mlir::DenseElementsAttr toElementsAttr(const DecodedTensor &tensor);
// The same from a type and its little-endian, row-major bytes (a WeightStore tensor's).
mlir::DenseElementsAttr toElementsAttr(mlir::RankedTensorType type, llvm::ArrayRef<char> bytes);

} // namespace shardc::onnx_import

#endif
