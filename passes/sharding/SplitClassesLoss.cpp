//===- SplitClassesLoss.cpp -------------------------------------------------------------===//
#include "passes/sharding/SplitClassesLoss.h"
#include "passes/sharding/ValueSharding.h"

#include "shardc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace shardc::sharding {

using namespace mlir;

void decomposeSplitClassesLosses(func::FuncOp func) {
  SmallVector<graph::SoftmaxCrossEntropyLossOp> losses;
  func.walk([&](graph::SoftmaxCrossEntropyLossOp op) {
    auto axes = splitAxes(op.getScores());
    if (axes.size() > 1 && !axes[1].empty())
      losses.push_back(op);
  });
  for (graph::SoftmaxCrossEntropyLossOp op : losses) {
    Value scores = op.getScores();
    mesh::MeshShardingAttr sharding = getSharding(scores);
    auto axes = splitAxes(scores);
    // The per-row values keep the rows' splits; their class dimension has size 1.
    SmallVector<SmallVector<mesh::MeshAxis>> rowAxes = axes;
    rowAxes[1].clear();
    mesh::MeshShardingAttr rowSharding = makeSharding(sharding.getMesh(), rowAxes);
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto perRow = [&](Value v) {
      setSharding(v, rowSharding);
      return v;
    };
    auto perClass = [&](Value v) {
      setSharding(v, sharding);
      return v;
    };
    auto classAxis = b.getDenseI64ArrayAttr({1});
    Type scoresType = scores.getType();
    Value max = perRow(b.create<graph::ReduceMaxOp>(loc, scores, classAxis, true));
    Type rowType = max.getType();
    Value shifted = perClass(b.create<graph::SubOp>(loc, scoresType, scores, max));
    Value exps = perClass(b.create<graph::ExpOp>(loc, scoresType, shifted));
    Value sum = perRow(b.create<graph::ReduceSumOp>(loc, exps, classAxis, true));
    Value logSum = perRow(b.create<graph::LogOp>(loc, rowType, sum));
    Value lse = perRow(b.create<graph::AddOp>(loc, rowType, logSum, max));
    Value logProb = perClass(b.create<graph::SubOp>(loc, scoresType, scores, lse));
    auto loss = b.create<graph::NegativeLogLikelihoodLossOp>(
        loc, op.getLoss().getType(), logProb, op.getLabels(), op.getWeights(),
        op.getReductionAttr(), op.getIgnoreIndexAttr());
    // The loss's own sharding (rows split on the batch) carries over; the partitioner adds
    // the classes' pending sum.
    setSharding(loss.getLoss(), getSharding(op.getLoss()));
    op.getLoss().replaceAllUsesWith(loss.getLoss());
    op.getLogProb().replaceAllUsesWith(logProb);
    op->erase();
  }
}

} // namespace shardc::sharding
