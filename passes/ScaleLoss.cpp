//===- ScaleLoss.cpp - keep the loss a mean over the global batch ------------------------===//
//
// Each data-parallel rank runs @forward on its own rows of the global batch, so its loss is a
// mean over those rows only. Scaling it by rows/global-rows makes the ranks' losses sum to the
// mean over the global batch, and, through the backward pass, makes their gradients sum to
// the global batch's gradient, also when the batch does not split evenly.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace shardc {
#define GEN_PASS_DEF_SCALELOSS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// A mean whose denominator depends on the labels (ignored entries, class weights) is not a
// plain mean over rows: each rank would divide by its own count.
template <typename LossOp> LogicalResult checkRowMean(LossOp op) {
  if (op.getReduction() != "mean")
    return success();
  if (op.getIgnoreIndex() || op->getNumOperands() > 2)
    return op.emitError("a mean loss with ignore_index or class weights divides by a count "
                        "that depends on every rank's labels; data parallelism supports "
                        "plain means over the batch only");
  return success();
}

struct ScaleLossPass : impl::ScaleLossBase<ScaleLossPass> {
  using ScaleLossBase::ScaleLossBase;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function whose loss to scale");
      return signalPassFailure();
    }
    if (localRows <= 0 || globalRows <= 0 || localRows > globalRows) {
      forward.emitError("scale-loss needs 0 < local-rows <= global-rows, got ")
          << localRows << " and " << globalRows;
      return signalPassFailure();
    }
    WalkResult walk = forward.walk([](Operation *op) {
      LogicalResult ok = success();
      if (auto l = dyn_cast<graph::SoftmaxCrossEntropyLossOp>(op))
        ok = checkRowMean(l);
      else if (auto l = dyn_cast<graph::NegativeLogLikelihoodLossOp>(op))
        ok = checkRowMean(l);
      return failed(ok) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    Operation *ret = forward.getBody().front().getTerminator();
    std::optional<unsigned> lossIndex;
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (t && t.getRank() == 0 && t.getElementType().isF32()) {
        lossIndex = i;
        break;
      }
    }
    if (!lossIndex) {
      forward.emitError("no scalar f32 output (the loss) to scale");
      return signalPassFailure();
    }
    if (localRows == globalRows)
      return;
    Value loss = ret->getOperand(*lossIndex);
    OpBuilder b(ret);
    Location loc = NameLoc::get(b.getStringAttr("loss/scale_to_global_batch"), loss.getLoc());
    auto type = cast<RankedTensorType>(loss.getType());
    float fraction = static_cast<float>(static_cast<double>(localRows) / globalRows);
    Value factor =
        b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(type, llvm::ArrayRef(fraction)));
    ret->setOperand(*lossIndex, b.create<graph::MulOp>(loc, type, loss, factor));
  }
};

} // namespace
} // namespace shardc
