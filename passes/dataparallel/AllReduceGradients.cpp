//===- AllReduceGradients.cpp - DP (ZeRO stage 0): bucketed gradient all-reduce -----------===//
#include "passes/dataparallel/DataParallel.h"
#include "passes/dataparallel/DataParallelPasses.h"

namespace shardc {
#define GEN_PASS_DEF_ALLREDUCEGRADIENTS
#include "passes/dataparallel/DataParallelPasses.h.inc"

namespace {

using namespace mlir;

struct AllReduceGradientsPass : impl::AllReduceGradientsBase<AllReduceGradientsPass> {
  using AllReduceGradientsBase::AllReduceGradientsBase;

  void runOnOperation() override {
    FailureOr<dp::TrainStepView> view = dp::analyzeTrainStep(getOperation());
    if (failed(view))
      return signalPassFailure();
    if (view->zeroStage != 0) {
      getOperation().emitError("all-reduce-gradients implements ZeRO stage 0, the step is "
                               "placed for stage ")
          << view->zeroStage;
      return signalPassFailure();
    }
    if (bucketMb <= 0) {
      getOperation().emitError("bucket-mb must be positive, got ") << bucketMb;
      return signalPassFailure();
    }
    dp::allReduceLoss(*view);

    // Gradients in the order the backward pass finishes them; each bucket is reduced right
    // after its last gradient is computed, while the rest of the backward pass still runs.
    // A gradient the partitioner already made whole is every rank's as it is.
    SmallVector<Value> grads, whole;
    dp::splitPendingGradients(*view, grads, whole);
    dp::sortByDefinition(grads);
    uint64_t bucketBytes = static_cast<uint64_t>(bucketMb * 1024.0 * 1024.0);
    auto buckets = dp::formBuckets(grads, bucketBytes);
    OpBuilder b(&getContext());
    for (auto [index, bucket] : llvm::enumerate(buckets)) {
      b.setInsertionPointAfter(dp::lastDefinition(bucket));
      Location loc = NameLoc::get(b.getStringAttr("gradients/bucket" + std::to_string(index)),
                                  getOperation().getLoc());
      auto reduce = b.create<graph::AllReduceOp>(
          loc, ValueRange(bucket).getTypes(), view->mesh.getSymName(), bucket,
          b.getI64IntegerAttr(index), StringAttr(), view->dpAxes);
      for (auto [grad, sum] : llvm::zip(bucket, reduce.getResults()))
        dp::replaceUsesAfter(grad, sum, reduce);
    }
  }
};

} // namespace
} // namespace shardc
