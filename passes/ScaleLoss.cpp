//===- ScaleLoss.cpp - keep the loss a mean over the global batch ------------------------===//
//
// Each data-parallel rank runs @forward on its own rows of the global batch, so its loss is a
// mean over those rows only. This pass turns it into the rank's share of the global mean, so
// that the ranks' losses sum to the global batch's loss and, through the backward pass, their
// gradients to its gradient, also when the batch does not split evenly: a plain mean is
// scaled by rows/global-rows; a mean over the labels that are not ignored (ignore_index)
// becomes the rank's sum divided by the count of such labels over all ranks.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <numeric>

namespace shardc {
#define GEN_PASS_DEF_SCALELOSS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

bool isConstant(Value v) { return v.getDefiningOp<graph::ConstantOp>() != nullptr; }

// Follows the loss back through multiplications and divisions by constants to the op that
// reduces over the batch.
Value reductionRoot(Value loss) {
  while (Operation *def = loss.getDefiningOp()) {
    if (isa<graph::MulOp>(def) && isConstant(def->getOperand(1)))
      loss = def->getOperand(0);
    else if (isa<graph::MulOp>(def) && isConstant(def->getOperand(0)))
      loss = def->getOperand(1);
    else if (isa<graph::DivOp>(def) && isConstant(def->getOperand(1)))
      loss = def->getOperand(0);
    else if (isa<graph::IdentityOp>(def))
      loss = def->getOperand(0);
    else
      break;
  }
  return loss;
}

struct ScaleLossPass : impl::ScaleLossBase<ScaleLossPass> {
  using ScaleLossBase::ScaleLossBase;

  // Replaces every use of `v` (but the new op's) by v * (localRows / globalRows).
  void scaleByRows(OpBuilder &b, Value v) {
    if (localRows == globalRows)
      return;
    Location loc = NameLoc::get(b.getStringAttr("loss/scale_to_global_batch"), v.getLoc());
    b.setInsertionPointAfterValue(v);
    auto type = cast<RankedTensorType>(v.getType());
    float fraction = static_cast<float>(static_cast<double>(localRows) / globalRows);
    Value factor =
        b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(type, llvm::ArrayRef(fraction)));
    auto scaled = b.create<graph::MulOp>(loc, type, v, factor);
    v.replaceAllUsesExcept(scaled, scaled);
  }

  // A mean over the labels that are not ignored: sum them on each rank and divide by the
  // number of such labels in the whole batch, summed over the ranks.
  template <typename LossOp>
  LogicalResult divideByGlobalCount(OpBuilder &b, LossOp op, Value labels, mesh::MeshOp meshOp) {
    Location loc = NameLoc::get(b.getStringAttr("loss/global_label_count"), op.getLoc());
    b.setInsertionPointAfter(op);
    auto labelType = cast<RankedTensorType>(labels.getType());
    auto f32 = b.getF32Type();
    auto scalar = RankedTensorType::get({}, f32);
    auto labelScalar = RankedTensorType::get({}, labelType.getElementType());
    Value ignored = b.create<graph::ConstantOp>(
        loc, DenseElementsAttr::get(labelScalar, b.getIntegerAttr(labelType.getElementType(),
                                                                  *op.getIgnoreIndex())));
    auto boolType = RankedTensorType::get(labelType.getShape(), b.getI1Type());
    Value isIgnored = b.create<graph::EqualOp>(loc, boolType, labels, ignored);
    Value counted = b.create<graph::NotOp>(loc, boolType, isIgnored);
    Value ones = b.create<graph::CastOp>(loc, RankedTensorType::get(labelType.getShape(), f32),
                                         counted, TypeAttr::get(f32));
    SmallVector<int64_t> axes(labelType.getRank());
    std::iota(axes.begin(), axes.end(), 0);
    Value count = b.create<graph::ReduceSumOp>(loc, scalar, ones, b.getDenseI64ArrayAttr(axes),
                                               b.getBoolAttr(false));
    if (meshOp)
      count = b.create<mesh::AllReduceOp>(loc, scalar, meshOp.getSymName(),
                                          ArrayRef<int16_t>{0}, count);
    op.setReduction("sum");
    Value sum = op->getResult(0);
    auto share = b.create<graph::DivOp>(loc, scalar, sum, count);
    sum.replaceAllUsesExcept(share, share);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("no @forward function whose loss to scale");
      return signalPassFailure();
    }
    if (localRows <= 0 || globalRows <= 0 || localRows > globalRows || ranks < 1) {
      forward.emitError("scale-loss needs 0 < local-rows <= global-rows and ranks >= 1, got ")
          << localRows << ", " << globalRows << " and " << ranks;
      return signalPassFailure();
    }
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
    OpBuilder b(&getContext());
    // The mesh the label count is summed over (shardc-place-on-mesh reuses it).
    mesh::MeshOp meshOp;
    if (ranks > 1) {
      meshOp = module.lookupSymbol<mesh::MeshOp>(meshName);
      if (!meshOp) {
        b.setInsertionPointToStart(module.getBody());
        meshOp = b.create<mesh::MeshOp>(module.getLoc(), meshName.getValue(),
                                        ArrayRef<int64_t>{ranks});
      }
    }

    Value root = reductionRoot(ret->getOperand(*lossIndex));
    Operation *def = root.getDefiningOp();
    auto unsupported = [&](StringRef why) {
      (def ? def->emitError() : forward.emitError()) << why;
      signalPassFailure();
    };
    auto handleLoss = [&](auto op, Value labels, bool hasWeights) {
      if (op.getReduction() == "sum")
        return;
      if (op.getReduction() != "mean")
        return unsupported("the loss must be a scalar mean or sum over the batch");
      if (hasWeights)
        return unsupported("a mean loss with class weights divides by a weight sum that "
                           "depends on every rank's labels; data parallelism does not support "
                           "it yet");
      if (!op.getIgnoreIndex())
        return scaleByRows(b, root);
      (void)divideByGlobalCount(b, op, labels, meshOp);
    };
    if (auto l = dyn_cast_or_null<graph::SoftmaxCrossEntropyLossOp>(def))
      handleLoss(l, l.getLabels(), l.getWeights() != nullptr);
    else if (auto l = dyn_cast_or_null<graph::NegativeLogLikelihoodLossOp>(def))
      handleLoss(l, l.getTarget(), l.getWeight() != nullptr);
    else if (isa_and_nonnull<graph::ReduceMeanOp>(def))
      scaleByRows(b, root);
    else if (!isa_and_nonnull<graph::ReduceSumOp>(def))
      unsupported("data parallelism needs the loss to be a mean or sum over the batch (a loss "
                  "op, ReduceMean or ReduceSum, optionally scaled by constants), so that each "
                  "rank's share can be summed; this loss is computed by another op");
  }
};

} // namespace
} // namespace shardc
