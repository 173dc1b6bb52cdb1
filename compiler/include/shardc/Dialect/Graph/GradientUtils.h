//===- GradientUtils.h - building blocks shared by the gradient rules -------------------===//
#ifndef SHARDC_DIALECT_GRAPH_GRADIENTUTILS_H
#define SHARDC_DIALECT_GRAPH_GRADIENTUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace shardc::graph {

// Location for the backward ops of `op`: its node name with "/grad" appended.
mlir::Location gradLoc(mlir::Operation *op);

// A scalar f32 constant (broadcasts against any f32 tensor).
mlir::Value scalarF32(mlir::OpBuilder &b, mlir::Location loc, float value);
// Zeros of `type` (a broadcast scalar, so nothing large is materialised).
mlir::Value zerosOf(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type);
// `grad` has the broadcast shape of an op whose operand had type `target`: sums over the
// broadcast dimensions so the result has exactly `target`'s shape.
mlir::Value unbroadcast(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                        mlir::RankedTensorType target);
// Reshape (no-op when the shapes already agree).
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                      mlir::RankedTensorType type);
// Swaps the last two dimensions.
mlir::Value transposeLastTwo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);
// Whether a value can carry a gradient (f32 tensor).
bool isDifferentiable(mlir::Value v);

} // namespace shardc::graph

#endif
