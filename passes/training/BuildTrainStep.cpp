//===- BuildTrainStep.cpp - @forward -> @train_step -------------------------------------===//
#include "passes/training/TrainingPasses.h"

#include "shardc/Autodiff/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"

namespace shardc {
#define GEN_PASS_DEF_BUILDTRAINSTEP
#include "passes/training/TrainingPasses.h.inc"

namespace {

struct BuildTrainStepPass : impl::BuildTrainStepBase<BuildTrainStepPass> {
  using BuildTrainStepBase::BuildTrainStepBase;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<mlir::func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function to build a training step from");
      return signalPassFailure();
    }
    TrainStepOptions options;
    options.optimizer = optimizer;
    options.beta1 = beta1;
    options.beta2 = beta2;
    options.eps = eps;
    options.weightDecay = weightDecay >= 0.0 ? double(weightDecay)
                                             : (optimizer == "adamw" ? 0.01 : 0.0);
    options.momentum = momentum;
    options.nesterov = nesterov;
    options.gradClip = gradClip;
    options.freeze = freeze;
    options.trainable = trainable;
    if (lossScale != "none" && lossScale != "dynamic") {
      getOperation().emitError("loss-scale '") << lossScale.getValue()
                                               << "': expected none or dynamic";
      return signalPassFailure();
    }
    options.dynamicLossScale = lossScale == "dynamic";
    options.lossScaleInit = lossScaleInit;
    options.lossScaleGrowthInterval = lossScaleGrowthInterval;
    if (mlir::failed(buildTrainStep(forward, options)))
      signalPassFailure();
  }
};

} // namespace
} // namespace shardc
