//===- PlanNotes.h - what the plan reports beyond the bundle ----------------------------===//
#ifndef SHARDC_PLAN_PLANNOTES_H
#define SHARDC_PLAN_PLANNOTES_H

#include <cstdint>
#include <string>
#include <vector>

namespace shardc {

// What the plan reports beyond the bundle itself: the driver's reasoning.
struct PlanNotes {
  // `--strategy auto`: which candidate was chosen and why the others were rejected, one line
  // each (printed as given, in order, under "Strategy decision").
  std::vector<std::string> strategyDecision;
  // With tensor parallelism: the layout's decisions, one line each (shardc-propagate-sharding's
  // graph.tp_layout): each parameter dimension class split on tp or kept whole and why, and
  // the sequence-parallel regions (printed under "Tensor-parallel layout").
  std::vector<std::string> layoutDecisions;
  // With data parallelism: the ops the batch's split cannot pass and that take their operands
  // whole instead (graph.whole_operands), one line each with why and the bytes gathered
  // (printed under "Resharding"; the collectives themselves are listed with the others).
  std::vector<std::string> reshardings;
  // With pipeline parallelism: the schedule (its predicted idle share, each stage's steps and
  // a text timeline), each stage's layers, parameters and FLOPs, and the values crossing each
  // cut (shardc-split-stages' graph.pipeline_schedule and graph.pipeline_cuts; printed under
  // "Pipeline stages").
  std::vector<std::string> pipeline;
  // With pipeline parallelism: the predicted timeline of one step as a Chrome trace
  // (graph.pipeline_trace), written as the bundle's predicted_trace.json.
  std::string pipelineTrace;
  // With --cluster: the cost model's timeline of the step in predicted seconds
  // (cost/PredictedTrace.h); the bundle's predicted_trace.json in place of pipelineTrace.
  std::string costTrace;
  // Training: the initializers kept frozen because they cannot be trained parameters,
  // "NAME: why" each (graph.not_trainable; printed under "Not trained").
  std::vector<std::string> notTrained;
  // Training: where the trained set comes from (the model's record, --trainable/--freeze, or
  // a guess), one line (printed under "Trained set").
  std::string trainedSetSource;
  bool trainedSetGuessed = false; // shardc warns on stderr
  // With a guessed trained set: the trained parameters whose values look like a buffer's,
  // "'NAME' (why)" each (TrainedSetDoubts.h; named in the warning and under "Trained set").
  std::vector<std::string> doubtfulTrained;
  // Training with --precision other than fp32: what it rounds, one line (printed after the
  // mode line as "precision: ...").
  std::string precision;
  // --precision bf16/fp16 with 16-bit storage: the ZeRO accounting is the mixed-precision one
  // (16-bit working copies, f32 master weights with the optimizer state), with gradients
  // reduced in `reducedGradientBytes` per element (4: f32, 2: --reduce-dtype bf16/fp16).
  bool mixedPrecision = false;
  uint64_t reducedGradientBytes = 4;
  // Training with --micro-batches K > 1: K, and what the loop does, one line (printed after
  // the mode line as "micro-batches: ...").
  int64_t microBatches = 1;
  std::string microBatchLoop;
  // Training with --remat: shardc-remat's report (graph.remat), a summary line then one per
  // unit (printed under "Recomputation").
  std::vector<std::string> remat;
  int64_t rematUnits = 0; // the units shardc-remat found (graph.remat_units)
  // --cluster: the cost model's prediction of one step of the plan (plan.json "prediction";
  // printed under "Predicted step" with `predictionLines`: the cluster, the numbers and their
  // breakdown).
  struct Prediction {
    double stepSeconds = 0, tokensPerSecond = 0, modelFlopsPerDevice = 0, mfu = 0,
           bubbleFraction = 0, exposedCommSeconds = 0, recomputeSeconds = 0;
    uint64_t peakBytes = 0;
  };
  bool predicted = false;
  Prediction prediction;
  std::vector<std::string> predictionLines;
  // --lora: each adapted weight and its adapters (graph.lora_merges), written to lora.json for
  // shardrun --export-onnx --merge-lora: W += scale * B·A ([out, in]; its transpose for a
  // weight stored [in, out]).
  struct LoraMerge {
    std::string weight, loraA, loraB;
    std::string peftKeyA, peftKeyB; // the adapters' names in PEFT's files
    double scale = 1.0;
    bool weightInByOut = false;
  };
  std::vector<LoraMerge> loraMerges;
  // --base-dtype: each quantized weight (graph.quantized_base), in lora.json for the export.
  struct QuantizedWeight {
    std::string weight, format;
    bool weightInByOut = false;
  };
  std::vector<QuantizedWeight> quantizedBase;
};

} // namespace shardc

#endif
