//===- DecomposeMeanLoss.cpp - a mean loss as a sum over a count the graph computes -----===//
//
// A split batch leaves no device with the count a mean loss divides by. Written as a sum and
// a division by a count computed in the graph, the count becomes an ordinary reduction over
// the batch, which the partitioner all-reduces like any other pending sum, and the gradient
// that autodiff derives divides by the same global count.
//
//===-------------------------------------------------------------------------------------===//
#include "passes/sharding/ShardingPasses.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <numeric>

namespace shardc {
#define GEN_PASS_DEF_DECOMPOSEMEANLOSS
#include "passes/sharding/ShardingPasses.h.inc"

namespace {

using namespace mlir;

// The number of labels a mean over `labels` counts: all of them, or those != ignore_index.
Value labelCount(OpBuilder &b, Location loc, Value labels, std::optional<int64_t> ignoreIndex) {
  auto labelType = cast<RankedTensorType>(labels.getType());
  auto f32 = b.getF32Type();
  auto scalar = RankedTensorType::get({}, f32);
  if (!ignoreIndex) {
    float n = static_cast<float>(labelType.getNumElements());
    return b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(scalar, llvm::ArrayRef(n)));
  }
  auto labelScalar = RankedTensorType::get({}, labelType.getElementType());
  Value ignored = b.create<graph::ConstantOp>(
      loc, DenseElementsAttr::get(labelScalar,
                                  b.getIntegerAttr(labelType.getElementType(), *ignoreIndex)));
  auto boolType = RankedTensorType::get(labelType.getShape(), b.getI1Type());
  Value isIgnored = b.create<graph::EqualOp>(loc, boolType, labels, ignored);
  Value counted = b.create<graph::NotOp>(loc, boolType, isIgnored);
  Value ones = b.create<graph::CastOp>(loc, RankedTensorType::get(labelType.getShape(), f32),
                                       counted, TypeAttr::get(f32));
  SmallVector<int64_t> axes(labelType.getRank());
  std::iota(axes.begin(), axes.end(), 0);
  if (axes.empty())
    return ones;
  return b.create<graph::ReduceSumOp>(loc, scalar, ones, b.getDenseI64ArrayAttr(axes),
                                      b.getBoolAttr(false));
}

template <typename LossOp> void decompose(LossOp op, Value labels, bool hasWeights) {
  // With class weights the count is a sum of weights; such losses keep their mean, and the
  // loss's sharding rule keeps their batch whole (the batch is then refused, naming it).
  if (op.getReduction() != "mean" || hasWeights)
    return;
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  Location loc = NameLoc::get(b.getStringAttr("loss/label_count"), op.getLoc());
  Value count = labelCount(b, loc, labels, op.getIgnoreIndex());
  op.setReduction("sum");
  Value sum = op->getResult(0);
  auto mean = b.create<graph::DivOp>(loc, sum.getType(), sum, count);
  sum.replaceAllUsesExcept(mean, mean);
}

struct DecomposeMeanLossPass : impl::DecomposeMeanLossBase<DecomposeMeanLossPass> {
  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function whose losses to decompose");
      return signalPassFailure();
    }
    forward.walk([](Operation *op) {
      if (auto l = dyn_cast<graph::SoftmaxCrossEntropyLossOp>(op))
        decompose(l, l.getLabels(), l.getWeights() != nullptr);
      else if (auto l = dyn_cast<graph::NegativeLogLikelihoodLossOp>(op))
        decompose(l, l.getTarget(), l.getWeight() != nullptr);
    });
  }
};

} // namespace
} // namespace shardc
