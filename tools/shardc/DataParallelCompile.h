//===- DataParallelCompile.h - compiling for N data-parallel ranks ----------------------===//
//
// The model describes one step on the global batch. shardc imports it once, builds the global
// training step and propagates the batch's sharding through it (Pipeline.h); then, for N
// ranks, it partitions a copy of that step once per distinct number of rows a rank gets (two
// when N does not divide the batch), runs the data-parallel passes for the strategy, and
// derives each rank's program (RankPrograms.h). `--strategy auto` scores candidates before
// compiling one (AutoStrategy.h).
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_TOOLS_SHARDC_DATAPARALLELCOMPILE_H
#define SHARDC_TOOLS_SHARDC_DATAPARALLELCOMPILE_H

#include "CommandLine.h"
#include "Pipeline.h"

#include "frontends/onnx/OnnxImporter.h"
#include "shardc/Lowering/ProgramEmitter.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardc::driver {

// The rows of the global batch, as shardc-propagate-sharding found it.
struct GlobalBatch {
  int64_t rows = 0;
};

// Reads the batch that propagation found on the global training step; nullopt with `error`
// when there is none or a graph input's batch is not its dim 0 (shardrun cuts every input's
// rows along dim 0).
std::optional<GlobalBatch> findGlobalBatch(mlir::ModuleOp global, const Options &opts,
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

// Compiles the program of the ranks holding dp.localRows rows with the data-parallel passes.
using CompileVariant =
    std::function<mlir::FailureOr<EmittedProgram>(const DataParallelOptions &dp)>;

// Every rank's program for `strategy`. Prints the error and returns false on failure.
bool compileDataParallel(const Options &opts, const ParallelStrategy &strategy,
                         const GlobalBatch &batch, const CompileVariant &compileVariant,
                         DataParallelBundle &out);

} // namespace shardc::driver

#endif
