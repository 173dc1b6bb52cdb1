//===- StepProfile.h - one rank's training step, op by op, as the cost model reads it ----===//
//
// The cost model does not compile every candidate: it reads one partitioned, memory-planned
// step per (tp, sp, remat) — on a dp = 2 mesh with one microbatch, so that the partitioner
// marks which dimensions carry the batch — and scales it to each candidate's rows per
// microbatch, stages and schedule (CostModel.h). Per op: its FLOPs and bytes on the profiled
// rows, for a matrix product its M x K by K x N (times a batch) and which of those grow with
// the rows, for a tensor-parallel collective its kind and bytes; whether it runs per
// microbatch (it reads the batch) or once per step (the optimizer), in the forward or backward
// pass, and in which repeated unit (a transformer layer: the units are what pipeline stages
// hold). Per unit: its trained parameters' bytes on a rank, the bytes of the forward values its
// backward pass reads (what a microbatch in flight keeps), and the bytes of its input (what
// crosses a pipeline cut).
//
// Plain C++: ProfileStep.h fills it from the IR.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_COST_STEPPROFILE_H
#define SHARDC_COST_STEPPROFILE_H

#include "shardc/Cost/CostFormulas.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::cost {

struct ProfiledOp {
  enum class Kind { Gemm, Other, TpCollective };
  enum class Phase { Forward, Backward, Step };
  Kind kind = Kind::Other;
  Phase phase = Phase::Step;
  double flops = 0, bytes = 0; // on the profiled rows
  // Gemm: M x K by K x N, `batch` of them; which grow with the rows.
  double m = 1, n = 1, k = 1, batch = 1;
  bool mRows = false, nRows = false, kRows = false, batchRows = false;
  // TpCollective.
  CollectiveKind collective = CollectiveKind::AllReduce;
  // The unit (index into StepProfile::units); -1 before the first unit's ops (the
  // embedding), -2 after the last (the head and the loss).
  int unit = -1;
  bool recomputed = false; // a clone the remat pass made (recomputation, not model FLOPs)
};

struct StepProfile {
  int tp = 1;
  bool sequenceParallel = false;
  std::string remat = "none";
  bool bf16 = false;          // --precision bf16/fp16: products at the 16-bit peak
  int64_t rows = 0;           // rows of the batch one rank ran
  int64_t globalRows = 0;     // rows of the global batch
  int64_t tokensPerRow = 1;   // the sequence (for tokens/s)
  std::vector<std::string> units;
  // How many of the model's units each profiled unit stands for (TruncateUnits.h: a deep
  // model is profiled on its first two units and its last); empty: one each.
  std::vector<int64_t> unitRepeats;
  std::vector<ProfiledOp> ops;
  // Per unit, and for the parts before and after the units (the embedding on the first
  // stage, the head on the last): trained parameter bytes on one rank (fp32), forward values
  // read by the backward pass per microbatch (on the profiled rows), input bytes.
  std::vector<double> unitParamBytes, unitStashBytes, unitInputBytes;
  double beforeParamBytes = 0, afterParamBytes = 0;
  // Frozen initializers (buffers such as masks, parameters not trained): every stage's program
  // holds all of them (the weights region is shared), per placement as the parameters.
  std::vector<double> unitFrozenBytes;
  double beforeFrozenBytes = 0, afterFrozenBytes = 0;
  // The largest workspace an op needs (shardc.workspace_bytes), on the profiled rows.
  double workspaceBytes = 0;
  double beforeStashBytes = 0, afterStashBytes = 0;
  // Bytes of the optimizer state per fp32 parameter byte (AdamW: 2, SGD with momentum: 1).
  double stateBytesPerParamByte = 2;
  // FLOPs of the products of one global step's forward and backward passes, counted once
  // (without recomputation or tensor-parallel copies): the model FLOPs of MFU.
  double modelFlops = 0;
};

} // namespace shardc::cost

#endif
