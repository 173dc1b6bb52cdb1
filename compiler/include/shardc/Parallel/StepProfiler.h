//===- StepProfiler.h - the cost model's profiles of a model, compiled on demand ----------===//
//
// A profile (cost/StepProfile.h) is one rank's partitioned, memory-planned training step for a
// tensor-parallel degree, sequence parallelism and recomputation mode, on a dp = 2 mesh (so
// that the partitioner marks the dimensions that carry the batch) with one microbatch: what
// the cost model scales to every candidate with the same (tp, sp, remat). Each is compiled
// once, from the model imported once, and kept.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PARALLEL_STEPPROFILER_H
#define SHARDC_PARALLEL_STEPPROFILER_H

#include "shardc/Cost/StepProfile.h"
#include "shardc/Cost/TruncateUnits.h"
#include "shardc/Parallel/StrategyCompiler.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

namespace shardc {

class StepProfiler {
public:
  StepProfiler(mlir::MLIRContext &ctx, const CompileOptions &opts, mlir::ModuleOp imported,
               WeightStore &weights, FirstErrorCollector &errors)
      : ctx_(ctx), opts_(opts), imported_(imported), weights_(weights), errors_(errors) {}

  // The profile of (tp, sp, remat); null with a one-line `refusal` when the compiler refuses
  // that mesh or recomputation.
  const cost::StepProfile *profile(int tp, bool sequenceParallel, const std::string &remat,
                                   std::string &refusal);
  // How many profiles were compiled.
  size_t compiled() const { return profiles_.size(); }

private:
  using Key = std::tuple<int, bool, std::string>;
  struct Entry {
    std::unique_ptr<CompileOptions> opts;
    std::unique_ptr<StrategyCompiler> compiler;
    std::unique_ptr<cost::StepProfile> profile; // null: refused
    std::string refusal;
  };

  mlir::MLIRContext &ctx_;
  const CompileOptions &opts_;
  mlir::ModuleOp imported_;
  WeightStore &weights_;
  FirstErrorCollector &errors_;
  std::map<Key, Entry> profiles_;
  // The model with its middle units removed, when they can be (TruncateUnits.h).
  bool truncatedReady_ = false;
  mlir::OwningOpRef<mlir::ModuleOp> truncated_;
  std::optional<cost::Truncation> truncation_;
};

} // namespace shardc

#endif
