//===- PipelineRegistration.cpp ---------------------------------------------------------===//
#include "shardc/Pipelines/PipelineRegistration.h"

#include "mlir/Pass/PassRegistry.h"

namespace shardc {

TrainStepOptions TrainPipelineOptions::trainStep() const {
  TrainStepOptions train;
  train.optimizer = optimizer;
  train.beta1 = beta1;
  train.beta2 = beta2;
  train.eps = eps;
  train.weightDecay = weightDecay; // -1: shardc-build-train-step takes the optimizer's default
  train.momentum = momentum;
  train.nesterov = nesterov;
  train.gradClip = gradClip;
  train.freeze = freeze;
  train.trainable = trainable;
  train.precision = precision;
  train.reduceDtype = reduceDtype;
  train.halfStorage = halfStorage;
  train.dynamicLossScale = precision == "fp16"; // as --precision fp16 does
  train.lossScaleInit = lossScaleInit;
  train.lossScaleGrowthInterval = lossScaleGrowthInterval;
  train.remat = remat;
  train.rematUnits = rematUnits;
  return train;
}

GlobalPassOptions TrainPipelineOptions::mesh() const {
  GlobalPassOptions mesh;
  mesh.ranks = ranks;
  mesh.tp = tp;
  mesh.sequenceParallel = sequenceParallel;
  mesh.shardOverrides.assign(shardOverrides.begin(), shardOverrides.end());
  mesh.microBatches = microBatches;
  return mesh;
}

std::optional<DataParallelOptions> TrainPipelineOptions::dataParallel() const {
  if (ranks * tp == 1 && microBatches == 1)
    return std::nullopt;
  DataParallelOptions dp;
  dp.ranks = ranks;
  dp.zeroStage = zero;
  dp.localRows = localRows;
  dp.microBatches = microBatches;
  dp.bucketMb = bucketMb;
  dp.fsdpUnit = fsdpUnit;
  dp.overlapCollectives = overlapCollectives;
  return dp;
}

namespace {

void addLocalPipeline(mlir::OpPassManager &pm, const TrainPipelineOptions &options) {
  TrainStepOptions train = options.trainStep();
  std::optional<DataParallelOptions> dp = options.dataParallel();
  addLocalPasses(pm, &train, dp ? &*dp : nullptr, options.fuseElementwise);
}

} // namespace

void registerShardcPipelines() {
  mlir::PassPipelineRegistration<TrainPipelineOptions>(
      "shardc-global-pipeline",
      "The global training step of one mesh: the train step built, the batch's sharding "
      "propagated (shardc's first phase)",
      [](mlir::OpPassManager &pm, const TrainPipelineOptions &options) {
        TrainStepOptions train = options.trainStep();
        addGlobalPasses(pm, &train, options.mesh());
      });
  mlir::PassPipelineRegistration<TrainPipelineOptions>(
      "shardc-local-pipeline",
      "One device's program of a global training step: partitioned, collectives placed, "
      "memory planned (shardc's second phase)",
      addLocalPipeline);
  mlir::PassPipelineRegistration<TrainPipelineOptions>(
      "shardc-train-pipeline",
      "What shardc --mode train runs on the imported model: shardc-global-pipeline, then "
      "shardc-local-pipeline",
      [](mlir::OpPassManager &pm, const TrainPipelineOptions &options) {
        TrainStepOptions train = options.trainStep();
        addGlobalPasses(pm, &train, options.mesh());
        addLocalPipeline(pm, options);
      });
  mlir::PassPipelineRegistration<>(
      "shardc-forward-pipeline",
      "What shardc --mode forward runs on the imported model: constants folded, elementwise "
      "chains fused, memory planned",
      [](mlir::OpPassManager &pm) { addLocalPasses(pm, nullptr, nullptr, true); });
}

} // namespace shardc
