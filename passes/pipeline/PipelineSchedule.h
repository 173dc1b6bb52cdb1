//===- PipelineSchedule.h - the order of each stage's steps, and its simulation ---------===//
//
// A schedule gives each stage its steps in order: the forward (F) and backward (B) pass of
// each microbatch (and, split from B, its weight gradients W). Between two steps a stage does one transfer: what the step before sends
// (activations to the next stage after F, gradients to the one before after B) while it
// receives what the step after needs. The transfers are rendezvous (the local and NCCL
// communicators return once both sides met; MPI may return a send early, never later), so a
// schedule is checked by simulating them: each stage runs its list in order, a send and its
// receive complete together once both stages have reached them. The same simulation, with a
// duration per step, predicts the timeline and the idle (bubble) fraction.
//
//   naive  one microbatch: F then B on every stage (model parallelism; idle (p-1)/p)
//   gpipe  F of every microbatch, then B of every microbatch
//   1f1b   PipeDream-flush: stage s runs min(p-s-1, m) forward steps, then alternates one
//          F and one B, then the remaining B; at most p-s microbatches' activations live
//   interleaved  Megatron's interleaved 1F1B (Narayanan et al. 2021): each rank holds v
//          chunks (virtual stages r, r+p, ...); the m·v chunk-steps of each kind run in groups
//          of p microbatches, chunk by chunk (forward: chunks 0..v-1, backward: v-1..0);
//          rank r warms up with 2(p-r-1) + (v-1)p forward chunk-steps, then alternates one F
//          and one B, then the remaining B; m must be a multiple of p. With F and B of one
//          chunk 1/v of a stage's, the idle share is (p-1)/(v·m + p-1)
//   zb-h1  zero bubble (Qi et al. 2023, handcrafted H1): each backward split into B (the
//          input gradient, what the stage before waits for) and W (the weight gradients,
//          which nothing waits for); 1F1B's warm-up, then stage s runs s pairs F B with their
//          W deferred, then F B W until the forwards are done, then B W, then the s deferred
//          W, which fill what would be the cool-down bubble. Every stage holds at most p
//          microbatches' activations (a W releases them); with F = B = W the idle time is
//          (p-1) steps instead of 1F1B's 3(p-1)
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_PIPELINE_PIPELINESCHEDULE_H
#define SHARDC_PASSES_PIPELINE_PIPELINESCHEDULE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardc::pipeline {

// Weight: the backward ops of a microbatch no transfer waits for (its weight gradients), run
// apart from Backward only by schedules that split them (zb-h1).
enum class StepKind { Forward, Backward, Weight };

// `chunk`: which of the rank's model chunks the step runs (interleaved: rank r holds the
// virtual stages r, r + p, ..., chunk c being r + c·p; 0 otherwise).
struct Step {
  StepKind kind;
  int64_t microBatch;
  int64_t chunk = 0;
  bool operator==(const Step &o) const {
    return kind == o.kind && microBatch == o.microBatch && chunk == o.chunk;
  }
};

// The steps of every rank of the pp axis (`stages` of them, each holding `virtualStages`
// chunks), in order; an error message (for --schedule / --micro-batches / --virtual-stages)
// when the schedule cannot run `microBatches` so.
std::optional<std::string> scheduleSteps(const std::string &schedule, int64_t stages,
                                         int64_t microBatches,
                                         std::vector<std::vector<Step>> &out,
                                         int64_t virtualStages = 1);
// Whether the schedule runs weight gradients as steps of their own (W).
bool splitsWeightGradients(const std::string &schedule);

// One entry of a stage's list: a step's compute (its duration) or a transfer (peer -1: that
// half is absent).
struct TimelineEntry {
  bool isTransfer = false;
  double seconds = 0;     // compute
  int64_t sendTo = -1;    // transfer
  int64_t recvFrom = -1;
  int64_t stepIndex = -1; // compute: its index in the stage's steps
};

struct SimulatedEntry {
  double start = 0, end = 0;
};

// Runs the lists as the runtime would. Returns false (with the stage and entry each stage is
// stuck at in `deadlock`) when they cannot all finish. With `asyncSends`, a transfer that only
// sends goes to the stage's communication thread, as the runtime runs it when collectives
// overlap compute (--comm-overlap on): the stage goes on at once, the send meets its receive
// later, in order with the stage's other transfers; without, every transfer is a rendezvous.
bool simulate(const std::vector<std::vector<TimelineEntry>> &lists,
              std::vector<std::vector<SimulatedEntry>> &times, std::string &deadlock,
              bool asyncSends);

// Runs the lists with posted sends (as MPI_Isend or batched NCCL sends: a send never waits for
// its receiver; a receive waits for the message, the messages from one stage to another
// arriving in the order they were sent; send_recv's `posted`). The interleaved schedule needs
// this once it has a steady state (m > p): with rendezvous transfers (simulate) its ranks then
// wait on each other's sends around the ring.
bool simulatePostedSends(const std::vector<std::vector<TimelineEntry>> &lists,
                         std::vector<std::vector<SimulatedEntry>> &times, std::string &deadlock);

// The share of the stages' time the simulated step leaves idle: 1 - busy / (stages · the end
// of the last entry).
double idleShare(const std::vector<std::vector<TimelineEntry>> &lists,
                 const std::vector<std::vector<SimulatedEntry>> &times);

// "F0 F1 B0 F2 B1 B2": a stage's steps in words (W3: microbatch 3's weight gradients; F3.1:
// microbatch 3's forward step of chunk 1, when the rank holds several chunks).
std::string stepsText(const std::vector<Step> &steps, bool chunks = false);

} // namespace shardc::pipeline

#endif
