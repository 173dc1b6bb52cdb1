//===- DataParallelCompile.cpp ----------------------------------------------------------===//
#include "shardc/Parallel/DataParallelCompile.h"

#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Lowering/RankPrograms.h"
#include "shardc/Support/Diagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"

namespace shardc {

std::optional<GlobalBatch> findGlobalBatch(mlir::ModuleOp global, const CompileOptions &opts,
                                           std::string &error) {
  auto step = global.lookupSymbol<mlir::func::FuncOp>("train_step");
  auto size = step ? step->getAttrOfType<mlir::IntegerAttr>(graph::kBatchSizeAttr) : nullptr;
  if (!size) {
    error = opts.model + ": the training step has no batch to split across ranks";
    return std::nullopt;
  }
  // The batch may lie in any dimension of an input (dim 1 of a sequence-first model): each
  // input binding says which (Binding.batch_dim), and the data source cuts the rows along it.
  GlobalBatch batch;
  batch.rows = size.getInt();
  return batch;
}

DataParallelOptions dataParallelOptions(const CompileOptions &opts,
                                        const ParallelStrategy &strategy, int64_t rows) {
  DataParallelOptions dp;
  dp.ranks = strategy.dp;
  dp.zeroStage = strategy.zero;
  dp.localRows = rows;
  dp.bucketMb = opts.bucketMb;
  dp.overlapCollectives = opts.commOverlap;
  dp.fsdpUnit = opts.fsdpUnit;
  dp.microBatches = opts.microBatches;
  dp.pipelineStages = strategy.pp;
  dp.virtualStages = opts.virtualStages;
  dp.schedule = opts.schedule.empty() ? (opts.microBatches == 1 ? "naive" : "1f1b") : opts.schedule;
  return dp;
}

bool compileDataParallel(const CompileOptions &opts, const ParallelStrategy &strategy,
                         const GlobalBatch &batch, const CompileVariant &compileVariant,
                         DataParallelBundle &out) {
  if (batch.rows < strategy.dp) {
    printError(opts.model + ": the global batch has " + std::to_string(batch.rows) +
               " rows, fewer than the " + std::to_string(strategy.dp) +
               " data-parallel ranks (--gpus); give a larger batch with --input-shape");
    return false;
  }
  std::vector<RowSlice> slices = splitRows(batch.rows, strategy.dp);
  for (const RowSlice &slice : slices)
    if (slice.rows % opts.microBatches != 0) {
      printError(opts.model + ": --micro-batches " + std::to_string(opts.microBatches) +
                 ": a data-parallel rank holds " + std::to_string(slice.rows) + " of the " +
                 std::to_string(batch.rows) + " rows of the batch, which do not divide into " +
                 std::to_string(opts.microBatches) + " equal microbatches");
      return false;
    }
  // Compiled programs by (number of rows, pipeline stage): at most two distinct row counts.
  using VariantKey = std::pair<int64_t, int>;
  std::map<VariantKey, EmittedProgram> variants;
  std::optional<VariantKey> baseKey;
  for (const RowSlice &slice : slices)
    for (int stage = 0; stage < strategy.pp; ++stage) {
      const VariantKey key{slice.rows, stage};
      if (variants.count(key))
        continue;
      DataParallelOptions dp = dataParallelOptions(opts, strategy, slice.rows);
      dp.pipelineStage = stage;
      mlir::FailureOr<EmittedProgram> emitted = compileVariant(dp);
      if (mlir::failed(emitted))
        return false;
      if (baseKey)
        mergeWeightsInto(variants.at(*baseKey), *emitted);
      else
        baseKey = key;
      variants.emplace(key, std::move(*emitted));
    }
  EmittedProgram &base = variants.at(*baseKey);
  // One shared program per row count and stage; ranks are numbered row-major over the
  // dp x tp x pp mesh: rank r holds the rows of data-parallel index r / (tp * pp) and runs
  // stage r % pp.
  const int world = strategy.dp * strategy.tp * strategy.pp;
  InitialValueParts parts(base.initialValues);
  out.programs.clear();
  out.placements.clear();
  std::map<VariantKey, int> programOf;
  for (auto &[key, variant] : variants) {
    programOf[key] = static_cast<int>(out.programs.size());
    out.programs.push_back(sharedProgram(variant.program, world, key.first, batch.rows, parts));
  }
  for (int r = 0; r < world; ++r) {
    const RowSlice &slice = slices[r / (strategy.tp * strategy.pp)];
    program::RankPlacement placement;
    placement.set_program(programOf.at({slice.rows, r % strategy.pp}));
    placement.set_batch_begin(slice.begin);
    out.placements.push_back(placement);
  }
  std::vector<program::Program *> programs;
  for (program::Program &p : out.programs)
    programs.push_back(&p);
  out.weights = layOutWeightsFile(base.weights, base.initialValues, programs);
  return true;
}

void DataParallelBundle::moveInto(program::Bundle &bundle) {
  for (program::Program &p : programs)
    *bundle.add_programs() = std::move(p);
  for (program::RankPlacement &placement : placements)
    *bundle.add_ranks() = std::move(placement);
  programs.clear();
  placements.clear();
}

} // namespace shardc
