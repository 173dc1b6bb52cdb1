//===- CompileOptions.h - what one compilation of a model is asked to do ----------------===//
//
// Filled by the command line (tools/shardc) or by any other caller of compileModel
// (shardc/Driver/Compile.h); the library reads nothing else.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PARALLEL_COMPILEOPTIONS_H
#define SHARDC_PARALLEL_COMPILEOPTIONS_H

#include "shardc/Autodiff/TrainStep.h"
#include "shardc/Parallel/ParallelStrategy.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardc {

enum class Mode { Train, Forward };

struct CompileOptions {
  std::string model;
  std::string output;
  Mode mode = Mode::Train;
  bool emitMlir = false;
  std::string dumpIrDir;
  bool withoutWeights = false;
  std::map<std::string, std::vector<int64_t>> inputShapes;
  // --padding-row NAME=ROW: an embedding's padding row its lookups never train (PyTorch's
  // nn.Embedding padding_idx), beside or instead of the model's shardc.padding_idx record.
  std::map<std::string, int64_t> paddingRows;
  TrainStepOptions train;
  bool weightDecayGiven = false; // else PyTorch's default for the optimizer
  // Parallelism.
  int gpus = 1;
  std::string strategyText;    // as given; "auto" by default with --gpus > 1
  ParallelStrategy strategy;   // parsed from strategyText for `gpus`
  uint64_t gpuMemoryBytes = 0; // --gpu-memory; 0: unlimited
  // --cluster NAME|FILE: the machines the cost model predicts the step on (Cost/Cluster.h);
  // empty: no prediction.
  std::string cluster;
  // --predict-only (with --cluster): write the prediction (and auto's decision) without
  // compiling the plan's programs.
  bool predictOnly = false;
  double bucketMb = 25.0;
  // --comm-overlap: collectives run asynchronously, overlapping the ops before their first
  // reader (the plan-memory pass's overlap-collectives).
  bool commOverlap = true;
  bool fuseAttention = false; // --fuse-attention on: shardc-fuse-attention after import
  // --lora r=N,alpha=A,dropout=0,rslora,targets=REGEX: LoRA adapters beside the targeted
  // weights, the rest of the model frozen (shardc-lora-adapters, after import); their initial
  // values PEFT's (A Kaiming-uniform from --lora-seed, B zeros) or --lora-init FILE's.
  struct Lora {
    bool enabled = false;
    int64_t rank = 8;
    double alpha = 8.0; // PEFT's default lora_alpha
    double dropout = 0.0;
    bool rslora = false;
    std::string targets; // empty: PEFT's usual attention targets
    bool trainBias = false, trainNorm = false; // --lora-train bias|norm|bias,norm
    uint64_t seed = 0;                         // --lora-seed
    std::string initFile;                      // --lora-init: a PEFT adapter_model.safetensors
  } lora;
  // --base-dtype fp32|bf16|int8|nf4: the frozen base's product weights stored in fewer bits and
  // dequantized inside the products (shardc-quantize-base, after --lora); --base-dtype-keep
  // REGEX: module paths whose weights stay f32 (default transformers' lm_head).
  std::string baseDtype = "fp32";
  std::string baseDtypeKeep = "lm_head";
  // --fuse-elementwise: shardc-fuse-elementwise on every device's program (default on).
  bool fuseElementwise = true;
  std::string fsdpUnit;
  // --micro-batches: each device's rows run as this many microbatches per step, gradients
  // accumulated before the reduction and the update.
  int64_t microBatches = 1;
  // Whether --micro-batches and --schedule were given (--strategy auto --cluster searches the
  // others).
  bool microBatchesGiven = false;
  bool scheduleGiven = false;
  // Pipeline parallelism (--strategy pp=N): the schedule of the stages' steps, and node-name
  // prefixes where stages 1..N-1 start (empty: cut by cost). The command line resolves an
  // absent --schedule (empty): naive for one microbatch, else 1f1b.
  std::string schedule;
  // --virtual-stages (interleaved): model chunks per rank of the pp axis.
  int64_t virtualStages = 1;
  std::vector<std::string> pipelineCuts;
  // --shard REGEX=SPEC, in order: tensor-parallel layout overrides per parameter.
  std::vector<std::string> shardOverrides;
  bool explain = false;
};

} // namespace shardc

#endif
