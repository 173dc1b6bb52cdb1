//===- PlanSummary.h - what plan.txt and plan.json report --------------------------------===//
//
// The numbers of a bundle's plan, derived from the Bundle message alone (so that
// `shardc --explain`, plan.txt and plan.json agree and can be recomputed from program.pb):
// the mesh and strategy, every parameter and how it is sharded, the memory of each rank (the
// planned peak broken down as runtime/memory/planned_memory.h does, and the model state it
// holds), the ZeRO formulas that memory is expected to follow, and the collectives of one step
// with the bytes each rank sends (runtime/comm/comm_cost.h, the runtime's own accounting).
//
// docs/plan-format.md describes the text and JSON renderings.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_LOWERING_PLANSUMMARY_H
#define SHARDC_LOWERING_PLANSUMMARY_H

#include "shardc/Lowering/Bundle.h"

#include "runtime/memory/planned_memory.h"
#include "runtime/program/program.pb.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shardc {

// How a tensor is laid out across the data-parallel ranks (program.proto, Sharding).
struct PlanSharding {
  bool sharded = false;        // a flat shard per rank; false: the whole tensor on every rank
  int numShards = 1;           // N when sharded
  int64_t shardElements = 0;   // k = ceil(n / N) elements per rank (n when replicated)
  int64_t paddingElements = 0; // N * k - n: the zeros past the end of the last shards

  // "replicated" or "flat_shard k/N, padding p elements".
  std::string text() const;
};

// A parameter or optimizer-state tensor.
struct PlanTensor {
  std::string name;
  std::vector<int64_t> globalShape; // the whole tensor (Sharding.global_shape when sharded)
  int64_t elements = 0;             // numel of the whole tensor
  PlanSharding sharding;
  uint64_t bytesPerRank = 0; // the buffer one rank holds for it (rank 0's)
};

struct PlanParameter {
  PlanTensor tensor;
  // Trained: an input binding with role ROLE_PARAMETER, fed and updated every step. Otherwise
  // a PARAMETER-kind buffer in the weights (frozen, or a forward bundle's weight).
  bool trained = false;
  // The optimizer state inputs named "<parameter>.<slot>" (exp_avg, exp_avg_sq,
  // momentum_buffer), in program input order.
  std::vector<PlanTensor> optimizerState;
  uint64_t optimizerStateBytesPerRank() const;
};

// The model state one rank stores (bytes), whatever the schedule point.
struct PlanModelState {
  uint64_t trainedParameterBytes = 0; // input bindings whose buffer has role ROLE_PARAMETER
  uint64_t frozenParameterBytes = 0;  // PARAMETER-kind buffers (weights region)
  // The gradient operands (input #1) of the adamw_update / sgd_update ops: shards under
  // ZeRO 1-3, whole gradients under plain DP.
  uint64_t gradientBytes = 0;
  // The same gradients before they were reduce-scattered (followed back through scale_by_clip
  // to a reduce_scatter's input); equal to gradientBytes when there is no reduce_scatter.
  uint64_t wholeGradientBytes = 0;
  uint64_t optimizerStateBytes = 0; // input bindings with role ROLE_OPTIMIZER_STATE

  bool operator==(const PlanModelState &o) const;
};

// One collective kernel call (all_reduce, reduce_scatter, all_gather, shard_slice).
struct PlanCollective {
  int opIndex = 0;     // position in Program.ops
  std::string name;    // Op.name
  std::string kind;    // the kernel
  std::string group;   // the mesh axis it runs over: "dp"
  int numRanks = 1;    // attr num_ranks
  int64_t bucket = -1; // attr bucket, -1 when absent
  std::string unit;    // attr unit (FSDP unit), empty when absent
  int tensors = 0;     // operands packed into the call
  // Elements of the whole tensors involved (all_reduce and shard_slice: the inputs,
  // reduce_scatter: the inputs, all_gather: the outputs).
  uint64_t elements = 0;
  // The payload the communicator moves: all_reduce paddedToRanks(elements, N), reduce_scatter
  // and all_gather N * sum of the shards; 0 for shard_slice (local).
  uint64_t payloadElements = 0;
  uint64_t payloadBytes = 0;
  uint64_t bytesSent = 0; // collectiveBytesSent(kind, payloadElements, N): what one rank sends
};

struct PlanCommTotal {
  std::string kind;
  uint64_t calls = 0;
  uint64_t elements = 0;
  uint64_t payloadBytes = 0;
  uint64_t bytesSent = 0;
};

struct PlanComm {
  std::vector<PlanCollective> collectives; // in program order
  // One entry per kind present, in the order all_reduce, reduce_scatter, all_gather,
  // shard_slice.
  std::vector<PlanCommTotal> totals;
  uint64_t bytesSent = 0;    // the sum over the collectives
  uint64_t plannedBytes = 0; // Program.planned_comm_bytes
  bool matchesPlan() const { return bytesSent == plannedBytes; }
};

// One rank's program, summarised.
struct PlanRank {
  int rank = 0;
  int64_t batchBegin = 0;
  int64_t batchRows = 0;
  uint64_t plannedPeakBytes = 0; // Program.planned_peak_bytes
  runtime::PlannedMemory memory; // planPeakMemory(program, findWorkspaceOp = true)
  PlanModelState modelState;
  PlanComm comm;
};

// Model state bytes per rank under one ZeRO stage, from the formulas (fp32 everywhere:
// 4 bytes of parameter and 4 of gradient per element, S of optimizer state: 8 for AdamW).
struct PlanZeroStage {
  int stage = 0;
  std::string label;   // "DP (ZeRO-0)", "ZeRO-1", ...
  std::string formula; // "16Ψ", "8Ψ + 8Ψ/N", "4Ψ + 12Ψ/N", "16Ψ/N" (AdamW)
  // Rounded up to whole bytes where a division by N leaves a fraction.
  uint64_t parameterBytes = 0;
  uint64_t gradientBytes = 0;
  uint64_t optimizerStateBytes = 0;
  uint64_t totalBytes = 0;
};

struct PlanZeroAccounting {
  uint64_t psi = 0; // Ψ: elements of the trained parameters
  int ranks = 1;    // N
  int stage = 0;    // the bundle's stage
  // Bytes of optimizer state per trained element, S: the whole state tensors' bytes / Ψ
  // (8 for AdamW, 4 for SGD). 0 when the state does not divide evenly (then the formulas use
  // the exact sum, wholeOptimizerStateBytes).
  uint64_t stateBytesPerElement = 0;
  uint64_t wholeOptimizerStateBytes = 0;
  std::vector<PlanZeroStage> stages; // stages 0..3
  // What rank 0 of this bundle holds: parameters, gradients (whole until the reduce-scatter
  // at stage 0 and 1, the shards the optimizer reads at stages 2 and 3) and optimizer state.
  uint64_t parameterBytes = 0;
  uint64_t gradientBytes = 0;
  uint64_t optimizerStateBytes = 0;
  uint64_t totalBytes = 0;
  // Padding of the flat shards, in elements over all ranks (each rank stores
  // paddingElements / N of them on average).
  int64_t parameterPaddingElements = 0;
  int64_t gradientPaddingElements = 0;
  int64_t optimizerStatePaddingElements = 0;
};

// The communication theory for the trained parameters (ring algorithms, fp32).
struct PlanCommTheory {
  uint64_t dpAllReduceBytes = 0; // 2Ψ·4(N−1)/N: plain DP's all-reduce of the gradients
  uint64_t stageBytes = 0;       // the bundle's stage: ZeRO-1/2 as DP, ZeRO-3 3Ψ·4(N−1)/N
  std::string stageFormula;      // "2Ψ·4(N−1)/N" or "3Ψ·4(N−1)/N"
};

struct PlanSummary {
  std::string sourceModel;
  std::string mode;
  std::string strategy; // Bundle.strategy, "" when absent
  int worldSize = 1;
  int zeroStage = 0; // from the strategy ("zero=N"); else inferred from the shardings
  bool weightsPresent = true;
  std::vector<std::pair<std::string, int>> mesh; // ("dp", N), ("tp", 1), ("pp", 1)
  int64_t globalBatchRows = 0;                   // 0 in a single-rank program

  std::vector<PlanParameter> parameters; // trained (input order), then the others
  uint64_t trainedTensors = 0;
  uint64_t trainedElements = 0; // Ψ
  uint64_t frozenTensors = 0;
  uint64_t frozenElements = 0;

  std::vector<PlanRank> ranks; // one per program, in rank order
  // Ranks whose memory, model state, batch rows and communication numbers are all identical.
  std::vector<std::vector<int>> memoryGroups;
  // Ranks whose programs are identical apart from their rank, batch_begin and state_init (each
  // rank's part of the initial parameters); programGroups[i][0] is shown in full.
  std::vector<std::vector<int>> programGroups;

  PlanZeroAccounting zero; // meaningful when trainedElements > 0
  PlanCommTheory commTheory;

  std::vector<std::string> strategyDecision; // PlanNotes::strategyDecision
  // Inconsistencies found while summarising (e.g. collectives that do not add up to
  // planned_comm_bytes); also printed in plan.txt.
  std::vector<std::string> warnings;
};

// Summarises `bundle`. Programs must be valid (as shardc writes them); indices out of range are
// skipped rather than trusted.
PlanSummary summarizePlan(const program::Bundle &bundle, const PlanNotes &notes = PlanNotes());

// "rank 3", "ranks 0-2", "ranks 0-1, 3".
std::string formatRankSet(const std::vector<int> &ranks);

} // namespace shardc

#endif
