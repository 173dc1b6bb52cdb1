//===- DataParallelCompile.h - compiling for N data-parallel ranks ----------------------===//
//
// The model describes one step on the global batch. shardc imports it once, builds the global
// training step and propagates the batch's sharding through it (Pipelines/TrainPipelines.h);
// then, for N ranks, it partitions a copy of that step once per distinct number of rows a rank
// gets (two when N does not divide the batch), runs the data-parallel passes for the strategy,
// and derives each rank's program (RankPrograms.h). `--strategy auto` scores candidates before
// compiling one (AutoStrategy.h).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PARALLEL_DATAPARALLELCOMPILE_H
#define SHARDC_PARALLEL_DATAPARALLELCOMPILE_H

#include "shardc/Lowering/ProgramEmitter.h"
#include "shardc/Parallel/CompileOptions.h"
#include "shardc/Pipelines/TrainPipelines.h"

#include "runtime/program/program.pb.h"

#include <algorithm>
#include <cstdint>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardc {

// The rows of the global batch, as shardc-propagate-sharding found it.
struct GlobalBatch {
  int64_t rows = 0;
};

// Reads the batch that propagation found on the global training step; nullopt with `error`
// when there is none or a graph input's batch is not its dim 0 (shardrun cuts every input's
// rows along dim 0).
std::optional<GlobalBatch> findGlobalBatch(mlir::ModuleOp global, const CompileOptions &opts,
                                           std::string &error);

// A placed bundle's programs (program.proto): each distinct program once, and each rank's
// placement naming the one it runs.
struct DataParallelBundle {
  std::vector<program::Program> programs;          // distinct, shared by ranks
  std::vector<program::RankPlacement> placements;  // one per rank
  // The weights file, shared by all programs; none when some parameter's data was absent
  // (planning only).
  std::optional<std::vector<char>> weights;

  // Moves the programs and placements into `bundle` (which has none yet).
  void moveInto(program::Bundle &bundle);
};

// The largest planned peak of `programs` (program::Program's): what must fit a device.
template <typename Programs> uint64_t largestPlannedPeak(const Programs &programs) {
  uint64_t peak = 0;
  for (const program::Program &p : programs)
    peak = std::max<uint64_t>(peak, p.planned_peak_bytes());
  return peak;
}

// The local pipeline's options for the ranks of `strategy` holding `rows` rows.
DataParallelOptions dataParallelOptions(const CompileOptions &opts,
                                        const ParallelStrategy &strategy, int64_t rows);

// Compiles the program of the ranks holding dp.localRows rows with the data-parallel passes.
using CompileVariant =
    std::function<mlir::FailureOr<EmittedProgram>(const DataParallelOptions &dp)>;

// Every rank's program for `strategy`. Prints the error and returns false on failure.
bool compileDataParallel(const CompileOptions &opts, const ParallelStrategy &strategy,
                         const GlobalBatch &batch, const CompileVariant &compileVariant,
                         DataParallelBundle &out);

} // namespace shardc

#endif
