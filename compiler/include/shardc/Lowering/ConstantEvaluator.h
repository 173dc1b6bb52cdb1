//===- ConstantEvaluator.h - evaluate graph ops on constant operands --------------------===//
//
// Compile-time evaluation reuses the runtime's CPU kernels through the same op-to-kernel
// mapping the lowering uses, so a folded value is bit-for-bit what the runtime would have
// computed. Ops without a kernel (shape, constant_of_shape, range, dropout, reshapes) fold
// through their dialect folders.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_CONSTANTEVALUATOR_H
#define SHARDC_LOWERING_CONSTANTEVALUATOR_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace shardc {

// Ops whose results or operands exceed this many bytes are not evaluated (a large result
// would bloat the weights file, a large splat operand would be expanded in memory); the op
// then runs at runtime instead. Dialect folders that only reuse an attribute still apply; a
// large one-value result of theirs (a ConstantOfShape) is computed at run time instead of
// stored (shardc-fill-large-splats).
inline constexpr int64_t kMaxFoldedConstantBytes = 16 << 20;

// If every operand of `op` is a constant and its results are statically shaped, evaluates it,
// replaces all its results with graph.constant ops (created at `op`) and erases `op`.
// Returns success() with `folded` telling whether it happened, or failure() after emitting
// an error at the op's location when evaluation itself failed (e.g. an index out of range).
mlir::LogicalResult tryFoldToConstants(mlir::Operation *op, bool &folded);

// The value of `v` when it is produced by a constant op.
std::optional<mlir::DenseElementsAttr> getConstantValue(mlir::Value v);

} // namespace shardc

#endif
