//===- AutoStrategy.h - --strategy auto: the cheapest plan that fits --gpu-memory -------===//
//
// Candidates, in order of cost:
//   1. data parallelism on every device: dp, zero1, zero2, zero3. Their gradient traffic
//      overlaps the backward pass and each ZeRO stage adds work (zero3 sends about 1.5x the
//      bytes), so the first that fits wins.
//   2. only when none of those fits: tensor parallelism, tp = 2, 4, ... (each tp that divides
//      --gpus, fewest tp devices first: tensor-parallel collectives sit on the critical path
//      and grow with the activations), each with and without sequence parallelism and, while
//      dp > 1, ZeRO stages 0-3. Within one tp the candidate that fits and sends the fewest
//      bytes per rank per step wins (ties: without sp before with, lower stage first).
// Every candidate is scored from its own partitioned, memory-planned training step
// (StepCost.h): its planned peak per rank and the bytes a rank sends per step, without
// lowering it or touching the weights; a candidate the partitioner refuses (a tp that splits
// nothing, sp with nothing to split) is rejected with its reason. Only the chosen candidate
// is compiled in full; its lowered peak is checked against --gpu-memory again.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PARALLEL_AUTOSTRATEGY_H
#define SHARDC_PARALLEL_AUTOSTRATEGY_H

#include "shardc/Lowering/StepCost.h"
#include "shardc/Parallel/CompileOptions.h"
#include "shardc/Parallel/DataParallelCompile.h"

#include <optional>
#include <string>
#include <vector>

namespace shardc {

// What auto asks of the compiler (StrategyCompiler.h; a fake in the unit tests).
class CandidateCompiler {
public:
  virtual ~CandidateCompiler() = default;
  // Why the compiler refuses every strategy on `candidate`'s mesh (its dp, tp and sp, whatever
  // the ZeRO stage): propagation's one-line error; nullopt when it accepts the mesh.
  virtual std::optional<std::string> meshRefusal(const ParallelStrategy &candidate) = 0;
  // The partitioned, memory-planned step cost of `candidate` (the largest peak and bytes sent
  // over its programs); nullopt with a one-line `refusal` when the
  // compiler refuses the candidate.
  virtual std::optional<PlannedStepCost> score(const ParallelStrategy &candidate,
                                               std::string &refusal) = 0;
  // Compiles `candidate` in full; prints its error and returns false on failure.
  virtual bool compile(const ParallelStrategy &candidate, DataParallelBundle &out) = 0;
};

// Picks and compiles the candidate; `decision` says what was chosen and why each candidate
// scored before it was not. Prints one error line naming --gpu-memory when none fits.
bool chooseStrategy(const CompileOptions &opts, CandidateCompiler &compiler,
                    ParallelStrategy &chosen, DataParallelBundle &out,
                    std::vector<std::string> &decision);

} // namespace shardc

#endif
