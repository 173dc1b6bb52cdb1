//===- TrainPipelines.cpp ---------------------------------------------------------------===//
#include "shardc/Pipelines/TrainPipelines.h"

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

namespace shardc {

namespace {

// Writes the module after each pass as DIR/NN-<pass argument>.mlir.
class DumpAfterEachPass : public mlir::PassInstrumentation {
public:
  DumpAfterEachPass(std::string dir, int firstIndex) : dir_(std::move(dir)), next_(firstIndex) {}

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    // The pass manager's own adaptors (which run nested pipelines) have no argument; the
    // passes inside them are dumped individually.
    if (pass->getArgument().empty())
      return;
    auto module = op->getParentOfType<mlir::ModuleOp>();
    if (!module)
      module = mlir::dyn_cast<mlir::ModuleOp>(op);
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%02d-", next_++);
    (void)writeModule(module, dir_ + "/" + prefix + pass->getArgument().str() + ".mlir");
  }

private:
  std::string dir_;
  int next_;
};

} // namespace

mlir::LogicalResult writeModule(mlir::ModuleOp module, const std::string &path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return mlir::emitError(module.getLoc(), "cannot write '") << path << "': " << ec.message();
  module.print(os, mlir::OpPrintingFlags().elideLargeElementsAttrs(1024));
  return mlir::success();
}

namespace {

// Adds the dump instrumentation (and the import's dump, before the first pass).
mlir::LogicalResult instrument(mlir::PassManager &pm, mlir::ModuleOp module,
                               const std::string &dumpDir, int &nextDumpIndex) {
  if (dumpDir.empty())
    return mlir::success();
  if (nextDumpIndex == 0) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir))
      return mlir::emitError(module.getLoc(), "--dump-ir-after-all: cannot create '")
             << dumpDir << "': " << ec.message();
    if (failed(writeModule(module, dumpDir + "/00-import.mlir")))
      return mlir::failure();
    nextDumpIndex = 1;
  }
  auto dump = std::make_unique<DumpAfterEachPass>(dumpDir, nextDumpIndex);
  pm.addInstrumentation(std::move(dump));
  return mlir::success();
}

} // namespace

void addGlobalPasses(mlir::OpPassManager &pm, const TrainStepOptions *train,
                     const GlobalPassOptions &mesh) {
  bool sharded =
      train && (mesh.ranks * mesh.tp > 1 || mesh.microBatches > 1 || mesh.pipelineStages > 1);
  // Only a split batch (or the tp axis's split sequence) needs the mean loss's count computed
  // in the graph: pipeline stages alone keep the whole batch on the last stage, which then
  // computes the loss as one device does, rounding for rounding.
  if (train && (mesh.ranks * mesh.tp > 1 || mesh.microBatches > 1)) {
    pm.addPass(createRowLocalGather());
    pm.addPass(createDecomposeMeanLoss());
  }
  if (train && mesh.tp > 1)
    pm.addPass(createSplitGemmBias());
  if (train && (train->precision == "bf16" || train->precision == "fp16")) {
    BF16MatmulsOptions rounding;
    rounding.dtype = train->precision == "fp16" ? "f16" : "bf16";
    pm.nest<mlir::func::FuncOp>().addPass(createBF16Matmuls(rounding));
  }
  if (train && mesh.pipelineStages > 1) {
    AssignStagesOptions stages;
    stages.stages = mesh.pipelineStages * mesh.virtualStages;
    stages.virtualStages = mesh.virtualStages;
    stages.cuts = mesh.pipelineCuts;
    pm.addPass(createAssignStages(stages));
  }
  if (train) {
    BuildTrainStepOptions options;
    options.optimizer = train->optimizer;
    options.beta1 = train->beta1;
    options.beta2 = train->beta2;
    options.eps = train->eps;
    options.weightDecay = train->weightDecay;
    options.momentum = train->momentum;
    options.nesterov = train->nesterov;
    options.gradClip = train->gradClip;
    options.freeze = train->freeze;
    options.trainable = train->trainable;
    if (train->dynamicLossScale) {
      options.lossScale = "dynamic";
      options.lossScaleInit = train->lossScaleInit;
      options.lossScaleGrowthInterval = train->lossScaleGrowthInterval;
    }
    pm.addPass(createBuildTrainStep(options));
    if (train->remat != "none") {
      RematOptions remat;
      remat.mode = train->remat;
      remat.units = train->rematUnits;
      pm.nest<mlir::func::FuncOp>().addPass(createRemat(remat));
    }
  }
  if (sharded) {
    PropagateShardingOptions propagate;
    propagate.ranks = mesh.ranks;
    propagate.tp = mesh.tp;
    propagate.sequenceParallel = mesh.sequenceParallel;
    propagate.shardOverrides = mesh.shardOverrides;
    propagate.microBatches = mesh.microBatches;
    pm.addPass(createPropagateSharding(propagate));
  }
}

mlir::LogicalResult runGlobalPasses(mlir::ModuleOp module, const std::string &dumpDir,
                                    const TrainStepOptions *train,
                                    const GlobalPassOptions &mesh, int &nextDumpIndex) {
  mlir::PassManager pm(module->getContext());
  addGlobalPasses(pm, train, mesh);
  if (failed(instrument(pm, module, dumpDir, nextDumpIndex)))
    return mlir::failure();
  mlir::LogicalResult result = pm.run(module);
  nextDumpIndex += pm.size();
  return result;
}

void addLocalPasses(mlir::OpPassManager &pm, const TrainStepOptions *train,
                    const DataParallelOptions *dp, bool fuseElementwise) {
  if (train && dp) {
    PartitionOptions partition;
    partition.localRows = dp->localRows / dp->microBatches;
    pm.addPass(createPartition(partition));
    if (dp->microBatches > 1) {
      MicroBatchesOptions micro;
      micro.microBatches = dp->microBatches;
      pm.addPass(createMicroBatches(micro));
    }
    if (dp->pipelineStages > 1) {
      SplitStagesOptions split;
      split.stages = dp->pipelineStages;
      split.stage = dp->pipelineStage;
      split.schedule = dp->schedule;
      split.virtualStages = dp->virtualStages;
      pm.addPass(createSplitStages(split));
    }
    PlaceOnMeshOptions place;
    place.ranks = dp->ranks;
    place.zero = dp->zeroStage;
    pm.addPass(createPlaceOnMesh(place));
    if (dp->ranks == 1 && dp->zeroStage == 0) {
      // One data-parallel device: its gradients and loss are already whole.
    } else if (dp->zeroStage == 0) {
      AllReduceGradientsOptions o;
      o.bucketMb = dp->bucketMb;
      pm.nest<mlir::func::FuncOp>().addPass(createAllReduceGradients(o));
    } else if (dp->zeroStage < 3) {
      ShardOptimizerStateOptions o;
      o.bucketMb = dp->bucketMb;
      // 16-bit storage: the f32 parameters are master weights, sharded like optimizer state.
      o.masterShards = (train->precision == "bf16" || train->precision == "fp16") &&
                       train->halfStorage;
      pm.nest<mlir::func::FuncOp>().addPass(createShardOptimizerState(o));
    } else {
      ShardParametersOptions o;
      o.fsdpUnit = dp->fsdpUnit;
      pm.nest<mlir::func::FuncOp>().addPass(createShardParameters(o));
    }
  }
  if (train && (train->precision == "bf16" || train->precision == "fp16") &&
      train->halfStorage) {
    // After the sharding passes, which place their collectives on the f32 values the cast
    // pairs define: what stays a partial sum or crosses a collective in f32 is then visible.
    HalfStorageOptions storage;
    storage.reduceDtype = train->reduceDtype;
    pm.nest<mlir::func::FuncOp>().addPass(createHalfStorage(storage));
  }
  pm.nest<mlir::func::FuncOp>().addPass(shardc::createFoldConstants());
  if (train)
    pm.nest<mlir::func::FuncOp>().addPass(shardc::createHoistLoss());
  pm.nest<mlir::func::FuncOp>().addPass(shardc::createFillLargeSplats());
  pm.nest<mlir::func::FuncOp>().addPass(shardc::createFoldTransposes());
  // Last before the planner: every pass before it sees the ops one by one, and the planner
  // plans the fused program (the chains' intermediate values are gone).
  if (fuseElementwise)
    pm.nest<mlir::func::FuncOp>().addPass(shardc::createFuseElementwise());
  PlanMemoryOptions planMemory;
  planMemory.overlapCollectives = dp == nullptr || dp->overlapCollectives;
  pm.nest<mlir::func::FuncOp>().addPass(shardc::createPlanMemory(planMemory));
}

mlir::LogicalResult runLocalPasses(mlir::ModuleOp module, const std::string &dumpDir,
                                   const TrainStepOptions *train, const DataParallelOptions *dp,
                                   bool fuseElementwise, int &nextDumpIndex) {
  mlir::PassManager pm(module->getContext());
  addLocalPasses(pm, train, dp, fuseElementwise);
  if (failed(instrument(pm, module, dumpDir, nextDumpIndex)))
    return mlir::failure();
  return pm.run(module);
}

} // namespace shardc
