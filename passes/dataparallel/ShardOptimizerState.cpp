//===- ShardOptimizerState.cpp - ZeRO stages 1 and 2 ------------------------------------===//
//
// Every rank keeps whole parameters but only its flat shard of the optimizer state: gradients
// are reduce-scattered (each rank receives the global sum of its shard), each rank updates its
// shard of every parameter, and the updated shards are all-gathered into whole parameters.
// Stage 1 reduce-scatters after the backward pass, so whole gradients stay allocated until
// then; stage 2 reduce-scatters each bucket as soon as its gradients are final and the whole
// gradients die there.
//
// With master-shards (16-bit precision), the whole parameters are gathered at the start of the
// step instead of after the update, and the step keeps only shards of the f32 parameters: they
// are master weights, sharded with the rest of the optimizer state, and the gathered copies
// become the 16-bit working copies (shardc-half-storage).
//
//===-------------------------------------------------------------------------------------===//
#include "passes/dataparallel/DataParallel.h"
#include "passes/dataparallel/DataParallelPasses.h"

namespace shardc {
#define GEN_PASS_DEF_SHARDOPTIMIZERSTATE
#include "passes/dataparallel/DataParallelPasses.h.inc"

namespace {

using namespace mlir;

Location namedLoc(OpBuilder &b, const std::string &name, Location fallback) {
  return NameLoc::get(b.getStringAttr(name), fallback);
}

struct ShardOptimizerStatePass : impl::ShardOptimizerStateBase<ShardOptimizerStatePass> {
  using ShardOptimizerStateBase::ShardOptimizerStateBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<dp::TrainStepView> analyzed = dp::analyzeTrainStep(func);
    if (failed(analyzed))
      return signalPassFailure();
    dp::TrainStepView &view = *analyzed;
    if (view.zeroStage != 1 && view.zeroStage != 2) {
      func.emitError("shard-optimizer-state implements ZeRO stages 1 and 2, the step is placed "
                     "for stage ")
          << view.zeroStage;
      return signalPassFailure();
    }
    if (bucketMb <= 0) {
      func.emitError("bucket-mb must be positive, got ") << bucketMb;
      return signalPassFailure();
    }
    dp::allReduceLoss(view);
    OpBuilder b(&getContext());
    StringRef mesh = view.mesh.getSymName();
    uint64_t bucketBytes = static_cast<uint64_t>(bucketMb * 1024.0 * 1024.0);
    Operation *optimizerStart = dp::firstOptimizerOp(view);

    // 1. Gradients -> this rank's gradient shards: a reduce-scatter of the pending sums, a
    // slice (no communication) of the gradients the partitioner already made whole.
    llvm::DenseMap<Value, Value> gradShard;
    SmallVector<Value> grads, whole;
    dp::splitPendingGradients(view, grads, whole);
    if (!whole.empty()) {
      b.setInsertionPoint(optimizerStart);
      SmallVector<Type> shardTypes;
      for (Value g : whole)
        shardTypes.push_back(dp::flatShardType(g.getType(), view.ranks));
      auto slice = b.create<graph::ShardSliceOp>(
          namedLoc(b, "gradients/whole/shard_slice", func.getLoc()), shardTypes, mesh, whole,
          IntegerAttr(), StringAttr(), view.dpAxes);
      for (auto [g, s] : llvm::zip(whole, slice.getResults()))
        gradShard[g] = s;
    }
    dp::sortByDefinition(grads);
    for (auto [index, bucket] : llvm::enumerate(dp::formBuckets(grads, bucketBytes))) {
      if (view.zeroStage == 2)
        b.setInsertionPointAfter(dp::lastDefinition(bucket));
      else
        b.setInsertionPoint(optimizerStart);
      SmallVector<Type> shardTypes;
      for (Value g : bucket)
        shardTypes.push_back(dp::flatShardType(g.getType(), view.ranks));
      auto scatter = b.create<graph::ReduceScatterOp>(
          namedLoc(b, "gradients/bucket" + std::to_string(index), func.getLoc()), shardTypes,
          mesh, bucket, b.getI64IntegerAttr(index), StringAttr(), view.dpAxes);
      for (auto [g, s] : llvm::zip(bucket, scatter.getResults()))
        gradShard[g] = s;
    }

    if (masterShards) {
      shardMasterParameters(view, b, mesh, bucketBytes, gradShard);
      return;
    }

    // 2. Whole parameters -> this rank's shards (no communication), right before the updates.
    b.setInsertionPoint(optimizerStart);
    SmallVector<Value> params;
    SmallVector<Type> paramShardTypes;
    for (dp::TrainedParam &p : view.params) {
      params.push_back(p.param);
      paramShardTypes.push_back(dp::flatShardType(p.param.getType(), view.ranks));
    }
    auto slice = b.create<graph::ShardSliceOp>(namedLoc(b, "optimizer/shard_slice", func.getLoc()),
                                               paramShardTypes, mesh, params, IntegerAttr(),
                                               StringAttr(), view.dpAxes);

    // 3. Each update works on shards: gradient (clipped by the global norm), parameter, state.
    for (auto [i, p] : llvm::enumerate(view.params)) {
      dp::updateOnShards(view, p, gradShard.lookup(p.grad));
      p.update->setOperand(0, slice.getResult(i));
    }
    dp::globalizeGradientNorm(view);

    // 4. Updated shards -> whole parameters, a bucket as soon as its updates are done.
    Operation *ret = func.getBody().front().getTerminator();
    SmallVector<Value> updated;
    for (dp::TrainedParam &p : view.params)
      updated.push_back(p.update->getResult(0));
    dp::sortByDefinition(updated);
    llvm::DenseMap<Value, dp::TrainedParam *> owner;
    for (dp::TrainedParam &p : view.params)
      owner[p.update->getResult(0)] = &p;
    for (auto [index, bucket] : llvm::enumerate(dp::formBuckets(updated, bucketBytes))) {
      b.setInsertionPointAfter(dp::lastDefinition(bucket));
      SmallVector<Type> wholeTypes;
      for (Value v : bucket)
        wholeTypes.push_back(owner[v]->param.getType());
      auto gather = b.create<graph::AllGatherOp>(
          namedLoc(b, "parameters/bucket" + std::to_string(index), func.getLoc()), wholeTypes,
          mesh, bucket, b.getI64IntegerAttr(index), StringAttr(), view.dpAxes);
      // Every later reader takes the whole value: the result, and a pipeline stage's send of
      // a tied parameter to the stage that holds its copy.
      for (auto [v, whole] : llvm::zip(bucket, gather.getResults())) {
        Value w = whole;
        Value(v).replaceUsesWithIf(w, [&](OpOperand &use) {
          Operation *user = use.getOwner();
          return user == ret || (user != gather && gather->isBeforeInBlock(user));
        });
      }
    }
    dp::refreshFunctionType(func);
  }

  // masterShards: the parameters' arguments and results become flat shards (the master
  // weights); whole parameters are all-gathered in buckets, in argument order, at the start of
  // the step, and every reader but the update reads them; the update works on the shard.
  void shardMasterParameters(dp::TrainStepView &view, OpBuilder &b, StringRef mesh,
                             uint64_t bucketBytes,
                             const llvm::DenseMap<Value, Value> &gradShard) {
    func::FuncOp func = view.func;
    SmallVector<Value> params;
    llvm::DenseMap<Value, dp::TrainedParam *> owner;
    for (dp::TrainedParam &p : view.params) {
      params.push_back(p.param);
      owner[p.param] = &p;
    }
    b.setInsertionPointToStart(&func.getBody().front());
    for (auto [index, bucket] : llvm::enumerate(dp::formBuckets(params, bucketBytes))) {
      // Collect the uses before the gather exists, so that its own operands are not among them.
      SmallVector<SmallVector<OpOperand *>> uses;
      SmallVector<Type> wholeTypes;
      for (Value param : bucket) {
        uses.emplace_back();
        for (OpOperand &use : param.getUses())
          if (use.getOwner() != owner[param]->update)
            uses.back().push_back(&use);
        wholeTypes.push_back(param.getType());
      }
      auto gather = b.create<graph::AllGatherOp>(
          namedLoc(b, "parameters/bucket" + std::to_string(index), func.getLoc()), wholeTypes,
          mesh, bucket, b.getI64IntegerAttr(index), StringAttr(), view.dpAxes);
      for (auto [useList, whole] : llvm::zip(uses, gather.getResults()))
        for (OpOperand *use : useList)
          use->set(whole);
    }
    dp::keepParameterShards(view, gradShard);
  }
};

} // namespace
} // namespace shardc
