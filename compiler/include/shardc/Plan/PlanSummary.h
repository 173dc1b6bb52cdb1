//===- PlanSummary.h - what plan.txt and plan.json report --------------------------------===//
//
// The numbers of a bundle's plan, derived from the Bundle message alone (so that
// `shardc --explain`, plan.txt and plan.json agree and can be recomputed from program.pb):
// the mesh and strategy, every parameter and how it is sharded, the memory of each rank (the
// planned peak broken down as runtime/common/planned_memory.h does, and the model state it
// holds), the ZeRO formulas that memory is expected to follow, and the collectives of one step
// with the bytes each rank sends (runtime/common/comm_cost.h, the runtime's own accounting).
//
// docs/plan-format.md describes the text and JSON renderings.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PLAN_PLANSUMMARY_H
#define SHARDC_PLAN_PLANSUMMARY_H

#include "shardc/Plan/PlanNotes.h"

#include "runtime/common/planned_memory.h"
#include "runtime/program/program.pb.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shardc {

// How a tensor is laid out across the ranks (program.proto, Sharding): first cut into tensor-
// parallel blocks along one dim (the rank holds the block at its coordinate on the block's mesh
// axis), then, under ZeRO, the block flattened and cut into flat shards over another axis.
struct PlanSharding {
  // The mesh axes that split each dim of the whole tensor into blocks, one entry per dim
  // ({"tp"} for the split dim, {} for whole dims); empty when the tensor is not cut into blocks.
  std::vector<std::vector<std::string>> dimAxes;
  int numBlocks = 1;           // blocks of the split dim; 1: the block is the whole tensor
  int blockGroups = 1;         // > 1: a strided split, the dim in that many groups, each cut
  int64_t paddedDimSize = 0;   // > 0: the split dim padded to this size before the cut
  int64_t blockElements = 0;   // n: elements of the rank's block (the whole tensor's when 1 block)
  bool sharded = false;        // a flat shard of the block per rank; false: the whole block
  std::string shardAxis;       // the mesh axis the flat shards span ("dp"; "world": all ranks)
  int numShards = 1;           // N when sharded
  int64_t shardElements = 0;   // k = ceil(n / N) elements per rank (n when not sharded)
  int64_t paddingElements = 0; // N * k - n: the zeros past the end of the last shards

  bool blocked() const { return numBlocks > 1; }
  // Readable spec: "[{tp}, {}]" (one entry per dim: the mesh axes splitting it), with
  // " + flat/dp" for a flat shard over dp; "flat/dp" for a flat shard of the whole tensor;
  // "replicated" when neither.
  std::string spec() const;
  // With the flat shard's numbers: "replicated", "flat_shard k/N, padding p elements",
  // "[{tp}, {}]" or "[{tp}, {}] + flat_shard k/N, padding p elements".
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

// One collective kernel call (all_reduce, reduce_scatter, all_gather, all_to_all, shard_slice).
struct PlanCollective {
  int opIndex = 0;  // position in Program.ops
  std::string name; // Op.name
  std::string kind; // the kernel
  // The group it runs over: the name of Program.groups[attr group]; without that attribute
  // "world" in a program with a mesh, "dp" in one without (its world is the dp axis).
  std::string group;
  int numRanks = 1;    // attr num_ranks: the group's size
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
  uint64_t bytesSent = 0; // collectiveBytesSent(kind, payloadElements, N, element bytes): sent
  // The ring algorithms' volume for a payload of S bytes over n = numRanks ranks, worked out
  // here rather than by comm_cost.h: all_reduce 2S(n−1)/n, reduce_scatter and all_gather
  // S(n−1)/n, shard_slice 0.
  uint64_t theoryBytes = 0;
};

struct PlanCommTotal {
  std::string kind;
  uint64_t calls = 0;
  uint64_t elements = 0;
  uint64_t payloadBytes = 0;
  uint64_t bytesSent = 0;
  uint64_t theoryBytes = 0;
};

// One rank's collectives over one group.
struct PlanGroupComm {
  std::string group; // PlanCollective::group
  int numRanks = 1;  // the group's size (num_ranks of its collectives)
  // One entry per kind present, in the order all_reduce, reduce_scatter, all_gather,
  // all_to_all, shard_slice.
  std::vector<PlanCommTotal> totals;
  uint64_t calls = 0;
  uint64_t bytesSent = 0;
  uint64_t theoryBytes = 0;
};

struct PlanComm {
  std::vector<PlanCollective> collectives; // in program order
  // One entry per kind present, in the order all_reduce, reduce_scatter, all_gather,
  // all_to_all, shard_slice.
  std::vector<PlanCommTotal> totals;
  // In the order of Program.groups (every group, also one without collectives), then "world"
  // when some collective has no group; without a mesh, "dp" when there are collectives.
  std::vector<PlanGroupComm> byGroup;
  uint64_t bytesSent = 0;    // the sum over the collectives
  uint64_t plannedBytes = 0; // Program.planned_comm_bytes
  bool matchesPlan() const { return bytesSent == plannedBytes; }
};

// One rank's program, summarised.
struct PlanRank {
  int rank = 0;
  int64_t batchBegin = 0;
  int64_t batchRows = 0;
  std::vector<int> meshCoordinate; // Program.mesh_coordinate; empty without a mesh
  uint64_t plannedPeakBytes = 0;   // Program.planned_peak_bytes
  runtime::PlannedMemory memory;   // planPeakMemory(program, opWorkspaceBytes)
  PlanModelState modelState;
  PlanComm comm;
};

// Model state bytes per rank under one ZeRO stage, from the formulas (fp32 everywhere:
// 4 bytes of parameter and 4 of gradient per element, S of optimizer state: 8 for AdamW), in
// the trained elements one rank holds before ZeRO shards them (Ψ_rank; Ψ without a mesh).
struct PlanZeroStage {
  int stage = 0;
  std::string label; // "DP (ZeRO-0)", "ZeRO-1", ...
  // "16Ψ", "8Ψ + 8Ψ/N", "4Ψ + 12Ψ/N", "16Ψ/N" (AdamW); with a mesh "16Ψ_rank", ...
  std::string formula;
  // Rounded up to whole bytes where a division by N leaves a fraction.
  uint64_t parameterBytes = 0;
  uint64_t gradientBytes = 0;
  uint64_t optimizerStateBytes = 0;
  uint64_t totalBytes = 0;
};

struct PlanZeroAccounting {
  uint64_t psi = 0; // Ψ: elements of the trained parameters (whole tensors)
  // Tensor parallelism cuts Ψ in two: Ψ_split, the elements of the parameters cut into t
  // blocks, and Ψ_replicated, those every tp rank holds whole. A rank holds
  // Ψ_rank = Ψ_split/t + Ψ_replicated (the sum of its blocks), which ZeRO then shards over N;
  // the formulas are in Ψ_rank. Without tensor parallelism Ψ_rank = Ψ_replicated = Ψ.
  uint64_t psiSplit = 0;
  uint64_t psiReplicated = 0;
  uint64_t psiRank = 0;
  int tp = 1;          // t: ranks of the tp axis
  std::string psiName; // how the formulas write Ψ_rank: "Ψ" without a mesh, "Ψ_rank" with one
  int ranks = 1;       // N: the ranks ZeRO shards over (the dp axis; the world without a mesh)
  int stage = 0;       // the bundle's stage
  // Bytes of optimizer state per trained element, S: the state tensors' bytes before ZeRO
  // (whole tp blocks) / Ψ_rank (8 for AdamW, 4 for SGD). 0 when the state does not divide
  // evenly (then the formulas use the exact sum, wholeOptimizerStateBytes).
  uint64_t stateBytesPerElement = 0;
  uint64_t wholeOptimizerStateBytes = 0;
  // Mixed precision (PlanNotes::mixedPrecision): ZeRO's 2Ψ + 2Ψ + 12Ψ. Parameters are the
  // 16-bit working copies (parameterBytesPerElement 2), gradients as reduced, and the f32
  // master weights (4 bytes per element) count as optimizer state: stateBytesPerElement and
  // wholeOptimizerStateBytes include them. Otherwise 4, 4 and the state alone.
  bool mixedPrecision = false;
  uint64_t parameterBytesPerElement = 4;
  uint64_t gradientBytesPerElement = 4;
  std::vector<PlanZeroStage> stages; // stages 0..3
  // What rank 0 of this bundle holds: parameters, gradients (whole until the reduce-scatter
  // at stage 0 and 1, the shards the optimizer reads at stages 2 and 3) and optimizer state.
  // Mixed precision: parameters are the working copies the products read (whole at stages
  // 0-2, the 16-bit shards gathered per unit at stage 3), and the optimizer state includes the
  // f32 master weights.
  uint64_t parameterBytes = 0;
  uint64_t gradientBytes = 0;
  uint64_t optimizerStateBytes = 0;
  uint64_t totalBytes = 0;
  // Padding of the flat shards, in elements over the N ranks one tensor (tp block) is
  // sharded over (each rank stores paddingElements / N of them on average).
  int64_t parameterPaddingElements = 0;
  int64_t gradientPaddingElements = 0;
  int64_t optimizerStatePaddingElements = 0;
};

// The communication theory for the trained parameters over the dp axis (ring algorithms,
// fp32), in Ψ_rank and N of PlanZeroAccounting. Tensor parallelism's all-reduces of
// activations are not part of it.
struct PlanCommTheory {
  uint64_t dpAllReduceBytes = 0; // 2Ψ·4(N−1)/N: plain DP's all-reduce of the gradients
  uint64_t stageBytes = 0;       // the bundle's stage: ZeRO-1/2 as DP, ZeRO-3 3Ψ·4(N−1)/N
  std::string stageFormula;      // "2Ψ·4(N−1)/N" or "3Ψ·4(N−1)/N" ("Ψ_rank" with a mesh)
};

// The groups of one name (one set of mesh axes) over all ranks.
struct PlanGroup {
  std::string name;              // CommGroup.name: "dp", "tp"
  std::vector<std::string> axes; // the mesh axes it runs along
  int size = 1;                  // ranks in each group
  // Every group of this name, in order of their first rank, each in its rank order.
  std::vector<std::vector<int>> members;
};

struct PlanSummary {
  std::string sourceModel;
  std::string mode;
  std::string strategy; // Bundle.strategy, "" when absent
  int worldSize = 1;
  int zeroStage = 0; // from the strategy ("zero=N"); else inferred from the shardings
  // Sequence parallelism on tp (the strategy's "sp=1"); the layout decisions say where.
  bool sequenceParallel = false;
  bool weightsPresent = true;
  // The strategy's axes: ("dp", N), ("tp", t), ("pp", 1); the program's mesh axes where the
  // strategy does not say.
  std::vector<std::pair<std::string, int>> mesh;
  // Program.mesh_axes (rank 0's): the mesh the ranks are laid out on; empty without a mesh
  // (one rank, or plain data parallelism over the world).
  std::vector<std::pair<std::string, int>> meshAxes;
  std::vector<PlanGroup> groups; // the groups collectives run over, in rank 0's order
  int64_t globalBatchRows = 0;   // 0 in a single-rank program

  std::vector<PlanParameter> parameters; // trained (input order), then the others
  uint64_t trainedTensors = 0;
  uint64_t trainedElements = 0; // Ψ
  // The trained parameters cut into tensor-parallel blocks, and their elements (Ψ_split);
  // the rest, whole on every rank (Ψ_replicated); and Ψ_rank = Ψ_split/t + Ψ_replicated, the
  // trained elements one rank holds before ZeRO.
  uint64_t trainedSplitTensors = 0;
  uint64_t trainedSplitElements = 0;
  uint64_t trainedReplicatedElements = 0;
  uint64_t trainedRankElements = 0;
  uint64_t frozenTensors = 0;
  uint64_t frozenElements = 0;

  std::vector<PlanRank> ranks; // one per program, in rank order
  // Ranks whose memory, model state, batch rows and communication numbers are all identical.
  std::vector<std::vector<int>> memoryGroups;
  // Ranks whose programs are identical apart from their rank, batch_begin, state_init (each
  // rank's part of the initial parameters) and place in the mesh (mesh_coordinate, the ranks
  // of their groups); programGroups[i][0] is shown in full.
  std::vector<std::vector<int>> programGroups;

  PlanZeroAccounting zero; // meaningful when trainedElements > 0
  PlanCommTheory commTheory;

  std::vector<std::string> strategyDecision; // PlanNotes::strategyDecision
  std::vector<std::string> layoutDecisions;  // PlanNotes::layoutDecisions
  std::vector<std::string> reshardings;      // PlanNotes::reshardings
  std::vector<std::string> pipeline;         // PlanNotes::pipeline
  // Inconsistencies found while summarising (e.g. collectives that do not add up to
  // planned_comm_bytes); also printed in plan.txt.
  std::vector<std::string> warnings;

  bool hasMesh() const { return !meshAxes.empty(); }
  // The size of the strategy's axis `name` ("dp", "tp", "pp").
  int axisSize(const std::string &name) const;
};

// Summarises `bundle`. Programs must be valid (as shardc writes them); indices out of range are
// skipped rather than trusted.
// Where a program's precision changes (--precision bf16/fp16): its casts to a 16-bit float
// (roundings; those of trained parameters or their shards are the working copies) and back to
// f32 (widenings), and its matrix products, those reading 16-bit operands and those writing
// 16-bit results.
struct PlanCastPoints {
  int roundings = 0;
  int parameterRoundings = 0;
  int widenings = 0;
  int products = 0;
  int productsWith16BitOperands = 0;
  int productsWith16BitResults = 0;
  bool any() const { return roundings + widenings + productsWith16BitOperands > 0; }
};
PlanCastPoints castPointsOf(const program::Program &program);

PlanSummary summarizePlan(const program::Bundle &bundle, const PlanNotes &notes = PlanNotes());

// The complete program of rank `rank` (runtime/loader/rank_program.h builds a placed bundle's);
// where the bundle cannot give it, the program the rank is placed on as stored (or an empty
// one), so that the plan still describes what it can.
program::Program planProgramOfRank(const program::Bundle &bundle, int rank);

// "rank 3", "ranks 0-2", "ranks 0-1, 3".
std::string formatRankSet(const std::vector<int> &ranks);

} // namespace shardc

#endif
