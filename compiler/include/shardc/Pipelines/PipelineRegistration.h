//===- PipelineRegistration.h - shardc's pipelines as named pass pipelines --------------===//
//
//   shardc-train-pipeline{OPTIONS}   what `shardc --mode train` runs on the imported module:
//                                    shardc-global-pipeline, then shardc-local-pipeline
//   shardc-global-pipeline{OPTIONS}  the global step (TrainPipelines.h, addGlobalPasses)
//   shardc-local-pipeline{OPTIONS}   one device's program (addLocalPasses)
//   shardc-forward-pipeline          what `shardc --mode forward` runs
//
// OPTIONS are shardc's flags as pipeline options (TrainPipelineOptions). With them,
//   shardc-opt DIR/00-import.mlir --pass-pipeline='builtin.module(shardc-train-pipeline{...})'
// on the files `shardc --dump-ir-after-all DIR` writes prints the IR of the last file: the
// local pipeline is the program of the ranks holding `local-rows` rows.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PIPELINES_PIPELINEREGISTRATION_H
#define SHARDC_PIPELINES_PIPELINEREGISTRATION_H

#include "shardc/Pipelines/TrainPipelines.h"

#include "mlir/Pass/PassOptions.h"

#include <optional>

namespace shardc {

struct TrainPipelineOptions : public mlir::PassPipelineOptions<TrainPipelineOptions> {
  // The training step (--optimizer ... --remat).
  Option<std::string> optimizer{*this, "optimizer", llvm::cl::desc("adamw or sgd"),
                                llvm::cl::init("adamw")};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"), llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"), llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW epsilon"), llvm::cl::init(1e-8)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("weight decay; -1: the optimizer's default (AdamW 0.01, SGD 0)"),
      llvm::cl::init(-1.0)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"), llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("SGD Nesterov momentum"),
                        llvm::cl::init(false)};
  Option<double> gradClip{*this, "grad-clip",
                          llvm::cl::desc("max global gradient norm; 0: no clipping"),
                          llvm::cl::init(0.0)};
  Option<std::string> freeze{*this, "freeze", llvm::cl::desc("regex: parameters not to train")};
  Option<std::string> trainable{*this, "trainable",
                                llvm::cl::desc("regex: the only parameters to train")};
  Option<std::string> precision{*this, "precision", llvm::cl::desc("fp32, bf16 or fp16"),
                                llvm::cl::init("fp32")};
  Option<std::string> reduceDtype{
      *this, "reduce-dtype",
      llvm::cl::desc("bf16/fp16: element type of the gradient reductions (f32, bf16 or f16)"),
      llvm::cl::init("f32")};
  Option<bool> halfStorage{*this, "half-storage",
                           llvm::cl::desc("bf16/fp16: store the rounded values in 16 bits"),
                           llvm::cl::init(true)};
  Option<double> lossScaleInit{*this, "loss-scale-init",
                               llvm::cl::desc("fp16: the initial loss scale"),
                               llvm::cl::init(65536.0)};
  Option<int64_t> lossScaleGrowthInterval{
      *this, "loss-scale-growth-interval",
      llvm::cl::desc("fp16: finite steps in a row that double the scale"), llvm::cl::init(2000)};
  Option<std::string> remat{*this, "remat", llvm::cl::desc("none, full or selective"),
                            llvm::cl::init("none")};
  Option<int64_t> rematUnits{*this, "remat-units",
                             llvm::cl::desc("remat for the first N units only; -1: all"),
                             llvm::cl::init(-1)};
  // The mesh (--strategy dp=..,tp=..,sp=..; --shard; --micro-batches).
  Option<int64_t> ranks{*this, "ranks", llvm::cl::desc("data-parallel devices (dp)"),
                        llvm::cl::init(1)};
  Option<int64_t> tp{*this, "tp", llvm::cl::desc("tensor-parallel devices"), llvm::cl::init(1)};
  Option<bool> sequenceParallel{*this, "sp", llvm::cl::desc("sequence parallelism on tp"),
                                llvm::cl::init(false)};
  ListOption<std::string> shardOverrides{*this, "shard",
                                         llvm::cl::desc("REGEX=SPEC layout overrides")};
  Option<int64_t> microBatches{*this, "micro-batches",
                               llvm::cl::desc("microbatches per device and step"),
                               llvm::cl::init(1)};
  // One device's program (--strategy zero=..; --bucket-mb, --fsdp-unit, --comm-overlap).
  Option<int64_t> zero{*this, "zero", llvm::cl::desc("ZeRO stage, 0 to 3"), llvm::cl::init(0)};
  Option<int64_t> localRows{*this, "local-rows",
                            llvm::cl::desc("the device's rows of the batch; 0: an even split"),
                            llvm::cl::init(0)};
  Option<double> bucketMb{*this, "bucket-mb", llvm::cl::desc("gradient bucket size in MiB"),
                          llvm::cl::init(25.0)};
  Option<std::string> fsdpUnit{*this, "fsdp-unit",
                               llvm::cl::desc("zero3: regex naming a parameter's FSDP unit")};
  Option<bool> overlapCollectives{*this, "comm-overlap",
                                  llvm::cl::desc("run collectives asynchronously"),
                                  llvm::cl::init(true)};
  Option<bool> fuseElementwise{*this, "fuse-elementwise",
                               llvm::cl::desc("fuse elementwise chains (shardc-fuse-elementwise)"),
                               llvm::cl::init(true)};

  TrainStepOptions trainStep() const;
  GlobalPassOptions mesh() const;
  // The device's program options; none on one device without microbatches, which shardc
  // compiles without partitioning.
  std::optional<DataParallelOptions> dataParallel() const;
};

// Registers the pipelines above (for shardc-opt and mlir-opt-like tools).
void registerShardcPipelines();

} // namespace shardc

#endif
