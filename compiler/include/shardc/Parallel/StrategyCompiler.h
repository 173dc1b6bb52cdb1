//===- StrategyCompiler.h - compiling the strategies of one imported model --------------===//
//
// One import; one global training step per mesh (dp, tp, sp: the batch's sharding comes from
// propagation); one partitioned copy of it per strategy and distinct number of rows
// (DataParallelCompile.h). --strategy auto scores candidates through the same object
// (AutoStrategy.h) before one is compiled in full.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PARALLEL_STRATEGYCOMPILER_H
#define SHARDC_PARALLEL_STRATEGYCOMPILER_H

#include "shardc/Lowering/ProgramEmitter.h"
#include "shardc/Parallel/AutoStrategy.h"
#include "shardc/Support/Diagnostics.h"
#include "shardc/Support/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardc {

// Lowers the compiled @train_step (or @forward, in forward mode) of `module` to a program;
// prints the error on failure.
mlir::FailureOr<EmittedProgram> emitCompiledStep(mlir::ModuleOp module, WeightStore &weights,
                                                 const CompileOptions &opts,
                                                 FirstErrorCollector &errors);

// Prints the first error the passes emitted, or that the pipeline failed.
void printPassFailure(const CompileOptions &opts, FirstErrorCollector &errors);

// The global training step of one mesh (dp, tp, sp): built once from the import and
// propagated; each candidate strategy on that mesh partitions a copy of it.
struct GlobalStep {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  GlobalBatch batch;
  bool dumped = false; // its passes wrote --dump-ir-after-all's files
  int dumps = 0;       // IR dumps written so far (numbers the local passes' files)
  std::vector<std::string> layoutDecisions;
  // The resharding points of the step (PlanNotes::reshardings).
  std::vector<std::string> reshardings;
  // Pipeline parallelism: the stages, schedule and cuts (PlanNotes::pipeline).
  std::vector<std::string> pipeline;
  std::string pipelineTrace; // the predicted timeline (PlanNotes::pipelineTrace)
};

// Compiles the strategies of one import (`imported`, @forward, and its weights): the global
// step of each mesh on demand, then the programs of a strategy, or its planned step cost alone
// (--strategy auto).
class StrategyCompiler : public CandidateCompiler {
public:
  StrategyCompiler(mlir::MLIRContext &ctx, const CompileOptions &opts, mlir::ModuleOp imported,
                   WeightStore &weights, FirstErrorCollector &errors)
      : ctx_(ctx), opts_(opts), imported_(imported), weights_(weights), errors_(errors) {}

  // The global step for `s`'s mesh; null with the error printed (or, when `refusal` is given,
  // put there instead) on failure. With `dump`, its passes are rerun to write
  // --dump-ir-after-all's files unless they were written when it was built (auto scores
  // several meshes and dumps only the chosen one's).
  GlobalStep *globalStep(const ParallelStrategy &s, std::string *refusal = nullptr,
                         bool dump = false);

  bool compile(const ParallelStrategy &s, DataParallelBundle &out) override;
  std::optional<std::string> meshRefusal(const ParallelStrategy &s) override;
  std::optional<PlannedStepCost> score(const ParallelStrategy &s, std::string &refusal) override;

private:
  struct MeshKey {
    int dp, tp;
    bool sp;
    int pp;
    bool operator<(const MeshKey &o) const;
  };

  void fail(const std::string &message, std::string *refusal) const;

  mlir::MLIRContext &ctx_;
  const CompileOptions &opts_;
  mlir::ModuleOp imported_;
  WeightStore &weights_;
  FirstErrorCollector &errors_;
  std::map<MeshKey, std::unique_ptr<GlobalStep>> steps_;
};

} // namespace shardc

#endif
