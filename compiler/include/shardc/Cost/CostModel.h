//===- CostModel.h - a plan's predicted step time on a cluster ---------------------------===//
//
// predictStep scales a StepProfile (one rank's partitioned step of the candidate's tp, sp and
// remat, StepProfile.h) to the candidate and costs it with the formulas (CostFormulas.h):
//
//   rows          each rank runs globalRows / (dp * m) rows per microbatch: a per-microbatch
//                 op's FLOPs and bytes, and the dimensions of a product that carry the rows,
//                 scale from the profiled rows; the once-per-step ops (the optimizer) do not.
//   stages        the units (repeated layers) cut into pp * v contiguous chunks of balanced
//                 time, the embedding side with the first and the head side with the last;
//                 rank r holds chunks r, r + pp, ... (interleaved) and its forward time F_r
//                 and backward time B_r per microbatch are its chunks' sums, with the
//                 tensor-parallel collectives (on the critical path: the next op reads them)
//                 and, per cut crossed, one point-to-point transfer of the unit's input.
//   schedule      naive: sum over ranks of F_r + B_r; gpipe and 1f1b: the slowest rank's
//                 m (F + B) plus the bubble, (p-1) of its stage-steps; interleaved: a chunk's
//                 stage-steps, (p-1)(F + B)/v; zb-h1: (p-1) F (its W fill the rest).
//   dp            the gradients (fp32, the stage's parameters on a rank) all-reduced (ZeRO:
//                 reduce-scattered) over the dp group, overlapping the last microbatch's
//                 backward pass as the program's asynchronous collectives do; ZeRO-1/2 then
//                 all-gather the updated parameters after the optimizer, exposed; ZeRO-3
//                 gathers them for every microbatch's forward and backward, overlapping its
//                 compute. On the CPU (a node's cores shared by its ranks) the ranks running
//                 at once share its memory bandwidth (between one core's and the loaded share
//                 the calibration measured), their communication is the cores' work and hides
//                 behind nothing, and the step is at least the node's busy time over its cores
//                 (a pipeline's idle ranks leave theirs to the others).
//   optimizer     the profile's per-step ops, for the stage's share of the parameters (a dp-th
//                 of them with ZeRO).
//   memory        fp32 parameters and optimizer state (divided by dp as the ZeRO stage says),
//                 the whole gradients (the program reduces, or reduce-scatters, them after the
//                 backward pass), every frozen initializer, the largest workspace, and the
//                 activations of the microbatches the schedule keeps in flight on the first
//                 stage (gpipe: m; 1f1b and zb-h1: p; interleaved: its warm-up's chunks), from
//                 the profile's per-unit kept bytes: analytic, the real planner checks the
//                 finalists.
//
// Mesh axes map onto the cluster innermost first: tp ranks are consecutive (inside a node
// while tp <= devices per node), then pp, then dp.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_COST_COSTMODEL_H
#define SHARDC_COST_COSTMODEL_H

#include "shardc/Cost/Cluster.h"
#include "shardc/Cost/StepProfile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::cost {

struct Candidate {
  int64_t dp = 1, tp = 1, pp = 1;
  bool sequenceParallel = false;
  int zero = 0;
  std::string remat = "none";
  int64_t microBatches = 1;
  std::string schedule; // with pp > 1: naive, gpipe, 1f1b, interleaved, zb-h1
  int64_t virtualStages = 1;
  int64_t devices() const { return dp * tp * pp; }
  // "dp=2,tp=4,pp=2,zero=1 mb=8 1f1b": the strategy as --strategy spells it, the
  // microbatches, the schedule (and v), the remat when not none.
  std::string text() const;
};

struct Prediction {
  double stepSeconds = 0;
  double tokensPerSecond = 0;
  double modelFlopsPerDevice = 0; // FLOP/s
  double mfu = 0;
  double bubbleFraction = 0;
  double exposedCommSeconds = 0;  // tp + pp + exposed dp
  double recomputeSeconds = 0;
  uint64_t peakBytes = 0;         // analytic, the largest stage
  // The breakdown of stepSeconds.
  double computeSeconds = 0;      // the slowest rank's m (F + B) without communication
  double tpCommSeconds = 0, ppCommSeconds = 0, dpCommSeconds = 0, bubbleSeconds = 0,
         optimizerSeconds = 0;
  // What the predicted timeline (PredictedTrace.h) is built from. Per rank of the pp axis,
  // per chunk it holds (chunk c of rank r is the model's chunk c·pp + r): one microbatch's
  // forward and backward seconds (their tensor-parallel collectives and recomputation
  // included) and the transfer of the chunk's input (its gradient takes as long back).
  struct ChunkSeconds {
    double forward = 0, backward = 0, tpForward = 0, tpBackward = 0, recompute = 0,
           transferIn = 0;
  };
  std::vector<std::vector<ChunkSeconds>> chunks;
  // Per rank of the pp axis: the data-parallel gradient reduction (all of it; it overlaps
  // the last backward pass), the part of the dp communication left exposed, the update.
  std::vector<double> rankReduceSeconds, rankExposedSeconds, rankUpdateSeconds;
};

// False with `why` (one line) when the candidate cannot run the profile's batch: rows that do
// not divide, more chunks than units.
bool predictStep(const StepProfile &profile, const Cluster &cluster, const Candidate &candidate,
                 Prediction &out, std::string &why);

// "step 1.234 s, 123456 tokens/s, 143.2 TFLOP/s per device (45.9% MFU): compute 1.01 s,
// bubble 0.12 s, tp 0.05 s, pp 0.01 s, dp exposed 0.02 s, recompute 0.30 s, optimizer
// 0.01 s; peak 61.2 GiB per device (analytic)".
std::string predictionText(const Prediction &p);

} // namespace shardc::cost

#endif
