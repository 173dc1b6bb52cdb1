//===- TensorBytes.h - constants to and from the runtime's byte layout ------------------===//
//
// The runtime stores tensors dense, row-major, little-endian, bool as one byte per element.
// MLIR's DenseElementsAttr packs bools into bits and may be a splat, so conversions go
// element by element through these two functions.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_TENSORBYTES_H
#define SHARDC_LOWERING_TENSORBYTES_H

#include "mlir/IR/BuiltinAttributes.h"

#include <vector>

namespace shardc {

// Bytes of `value` in the runtime layout.
std::vector<char> toRuntimeBytes(mlir::DenseElementsAttr value);
// A constant of `type` from runtime-layout bytes (size must match).
mlir::DenseElementsAttr fromRuntimeBytes(mlir::RankedTensorType type, llvm::ArrayRef<char> bytes);
// Size in bytes of one element in the runtime layout (bool: 1).
size_t runtimeElementSize(mlir::Type elementType);

} // namespace shardc

#endif
