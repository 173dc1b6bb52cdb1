//===- ReverseMode.h - gradients of a scalar with respect to chosen values --------------===//
#ifndef SHARDC_AUTODIFF_REVERSEMODE_H
#define SHARDC_AUTODIFF_REVERSEMODE_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Builders.h"

namespace shardc {

// Emits, before `block`'s terminator, the gradient of the scalar f32 `loss` with respect to
// each value of `wrt`, by walking the block's ops in reverse and calling each op's
// DifferentiableOpInterface rule. Gradients reaching a value along several uses are summed
// (tied weights, residual connections). Only paths from `wrt` to `loss` are differentiated.
// The result has one entry per `wrt` value: null when the loss does not depend on it
// (e.g. a causal-mask buffer that only feeds a comparison). Ops on a differentiable path
// without a gradient rule are errors, emitted at the op. `seed` is the loss's own gradient
// (an f32 scalar defined before the block's terminator; dynamic loss scaling's scale), 1 when
// not given.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildGradients(mlir::Block &block, mlir::Value loss, llvm::ArrayRef<mlir::Value> wrt,
               mlir::Value seed = {});

} // namespace shardc

#endif
