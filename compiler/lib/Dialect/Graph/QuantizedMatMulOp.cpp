//===- QuantizedMatMulOp.cpp - type and verifier of graph.quantized_matmul --------------===//
//
// The op's operand contract is the runtime kernel's of the same name (docs/kernels.md): x
// [..., K] times the dequantized W [rows, cols] (transposed unless `untransposed`), with the
// codes and scales each format stores (runtime/support/quantized_weights.h):
//   bf16  codes bf16 [rows, cols], no scales
//   int8  codes i8 [rows, cols], scales f32 [rows] (absmax per row)
//   nf4   codes ui8 [rows * cols / 2], scales f32 [rows * cols / 64] (absmax per block of 64)
//
//===-------------------------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/GraphOps.h"

using namespace mlir;
using namespace shardc::graph;

namespace {

// The contracted size and the produced size of the product: (cols, rows) for x · Wᵀ.
std::pair<int64_t, int64_t> productSizes(int64_t rows, int64_t cols, bool untransposed) {
  return untransposed ? std::pair{rows, cols} : std::pair{cols, rows};
}

} // namespace

LogicalResult QuantizedMatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &out) {
  auto x = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!x || x.getRank() < 1)
    return emitOptionalError(loc, "the input must be a ranked tensor of rank >= 1");
  auto [contracted, produced] =
      productSizes(adaptor.getRows(), adaptor.getCols(), adaptor.getUntransposed());
  if (x.getShape().back() != contracted)
    return emitOptionalError(loc, "the input's last dimension (", x.getShape().back(),
                             ") must be the weight's contracted size ", contracted);
  SmallVector<int64_t> shape(x.getShape());
  shape.back() = produced;
  out.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult QuantizedMatMulOp::verify() {
  const int64_t rows = getRows(), cols = getCols(), n = rows * cols;
  auto codes = cast<RankedTensorType>(getCodes().getType());
  auto scales = getScales() ? cast<RankedTensorType>(getScales().getType()) : RankedTensorType();
  auto expect = [&](Type element, ArrayRef<int64_t> codeShape,
                    std::optional<int64_t> scaleCount) -> LogicalResult {
    if (codes.getElementType() != element || codes.getShape() != codeShape)
      return emitOpError("format '") << getFormat() << "' stores its codes as "
                                     << RankedTensorType::get(codeShape, element) << ", not "
                                     << codes;
    if (!scaleCount && scales)
      return emitOpError("format '") << getFormat() << "' has no scales";
    if (scaleCount && (!scales || scales.getShape() != ArrayRef<int64_t>{*scaleCount}))
      return emitOpError("format '") << getFormat() << "' needs " << *scaleCount
                                     << " scales (f32, one dimension)";
    return success();
  };
  Builder b(getContext());
  if (getFormat() == "bf16")
    return expect(b.getBF16Type(), {rows, cols}, std::nullopt);
  if (getFormat() == "int8")
    return expect(b.getIntegerType(8), {rows, cols}, rows);
  if (getFormat() == "nf4") {
    if (n % 64 != 0)
      return emitOpError("nf4 needs a weight of a multiple of 64 elements, not ") << n;
    return expect(b.getIntegerType(8, /*isSigned=*/false), {n / 2}, n / 64);
  }
  return emitOpError("unknown format '") << getFormat() << "' (bf16, int8 or nf4)";
}
