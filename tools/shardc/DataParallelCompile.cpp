//===- DataParallelCompile.cpp ----------------------------------------------------------===//
#include "DataParallelCompile.h"

#include "Diagnostics.h"

#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Lowering/PlanSummary.h"
#include "shardc/Lowering/RankPrograms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace shardc::driver {

namespace {

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

uint64_t largestPeak(const DataParallelBundle &b) {
  uint64_t peak = 0;
  for (const program::Program &p : b.programs)
    peak = std::max<uint64_t>(peak, p.planned_peak_bytes());
  return peak;
}

} // namespace

std::optional<GlobalBatch> findGlobalBatch(mlir::ModuleOp global, const Options &opts,
                                           std::string &error) {
  auto step = global.lookupSymbol<mlir::func::FuncOp>("train_step");
  auto size = step ? step->getAttrOfType<mlir::IntegerAttr>(graph::kBatchSizeAttr) : nullptr;
  if (!size) {
    error = opts.model + ": the training step has no batch to split across ranks";
    return std::nullopt;
  }
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto name = step.getArgAttrOfType<mlir::StringAttr>(i, graph::kInputAttr);
    auto sharding = step.getArgAttrOfType<mlir::mesh::MeshShardingAttr>(i, graph::kShardingAttr);
    if (!name || !sharding)
      continue;
    auto axes = sharding.getSplitAxes();
    unsigned dim = 0;
    while (dim < axes.size() && axes[dim].empty())
      ++dim;
    if (dim != 0) {
      error = opts.model + ": input '" + name.str() + "': its batch is dim " +
              std::to_string(dim) + " (dim 0 mixes rows: the model is sequence-first); " +
              "shardrun cuts the rows of every input along dim 0, so --gpus " +
              std::to_string(opts.gpus) + " cannot split this model yet";
      return std::nullopt;
    }
  }
  GlobalBatch batch;
  batch.rows = size.getInt();
  return batch;
}

bool compileDataParallel(const Options &opts, const ParallelStrategy &strategy,
                         const GlobalBatch &batch, const CompileVariant &compileVariant,
                         DataParallelBundle &out) {
  if (batch.rows < strategy.dp) {
    printError(opts.model + ": the global batch has " + std::to_string(batch.rows) +
               " rows, fewer than the " + std::to_string(strategy.dp) +
               " data-parallel ranks (--gpus); give a larger batch with --input-shape");
    return false;
  }
  std::vector<RowSlice> slices = splitRows(batch.rows, strategy.dp);
  // Compiled programs by number of rows (at most two distinct counts).
  std::map<int64_t, EmittedProgram> variants;
  std::optional<int64_t> baseRows;
  for (const RowSlice &slice : slices) {
    if (variants.count(slice.rows))
      continue;
    DataParallelOptions dp;
    dp.ranks = strategy.dp;
    dp.zeroStage = strategy.zero;
    dp.localRows = slice.rows;
    dp.bucketMb = opts.bucketMb;
    dp.fsdpUnit = opts.fsdpUnit;
    mlir::FailureOr<EmittedProgram> emitted = compileVariant(dp);
    if (mlir::failed(emitted))
      return false;
    if (!emitted->weightsComplete)
      out.weightsComplete = false;
    if (baseRows)
      mergeWeightsInto(variants.at(*baseRows), *emitted);
    else
      baseRows = slice.rows;
    variants.emplace(slice.rows, std::move(*emitted));
  }
  EmittedProgram &base = variants.at(*baseRows);
  // One shared program per row count; ranks are numbered row-major over the dp x tp mesh:
  // rank r holds the rows of data-parallel index r / tp.
  const int world = strategy.dp * strategy.tp;
  InitialValueParts parts(base.initialValues);
  out.programs.clear();
  out.placements.clear();
  std::map<int64_t, int> programOfRows;
  for (auto &[rows, variant] : variants) {
    programOfRows[rows] = static_cast<int>(out.programs.size());
    out.programs.push_back(sharedProgram(variant.program, world, rows, batch.rows, parts));
  }
  for (int r = 0; r < world; ++r) {
    const RowSlice &slice = slices[r / strategy.tp];
    program::RankPlacement placement;
    placement.set_program(programOfRows.at(slice.rows));
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

namespace {

// The model-state bytes per rank of each ZeRO stage (the plan's formulas) from a compiled
// bundle's programs, which are lent to the plan's summary (moved, not copied) and given back.
std::vector<uint64_t> modelStateByStage(DataParallelBundle &compiled,
                                        const ParallelStrategy &strategy) {
  program::Bundle bundle;
  bundle.set_world_size(strategy.dp * strategy.tp);
  bundle.set_strategy(strategy.canonical());
  compiled.moveInto(bundle);
  PlanSummary summary = summarizePlan(bundle);
  for (program::Program &lent : *bundle.mutable_programs())
    compiled.programs.push_back(std::move(lent));
  for (program::RankPlacement &lent : *bundle.mutable_ranks())
    compiled.placements.push_back(std::move(lent));
  std::vector<uint64_t> bytes;
  for (const PlanZeroStage &stage : summary.zero.stages)
    bytes.push_back(stage.totalBytes);
  return bytes;
}

} // namespace

bool chooseStrategy(const Options &opts, const CompileStrategy &compileStrategy,
                    ParallelStrategy &chosen, DataParallelBundle &out,
                    std::vector<std::string> &decision) {
  const char *names[] = {"dp", "zero1", "zero2", "zero3"};
  std::string limit = opts.gpuMemoryBytes ? mib(opts.gpuMemoryBytes) : "unlimited";
  decision.push_back("auto: candidates dp, zero1, zero2, zero3 on " + std::to_string(opts.gpus) +
                     " ranks, in order of cost; --gpu-memory " + limit +
                     "; a candidate whose model state alone (from dp's partitioned program, by "
                     "the ZeRO formulas) exceeds it is rejected without compiling");
  auto candidate = [&](int stage) {
    ParallelStrategy c;
    c.dp = opts.gpus;
    c.zero = stage;
    return c;
  };
  // dp first: the cheapest candidate, and its program gives every stage's model state per
  // rank, a lower bound of that stage's peak.
  DataParallelBundle baseline;
  if (!compileStrategy(candidate(0), baseline))
    return false;
  std::vector<uint64_t> state = modelStateByStage(baseline, candidate(0));
  // For the error: the smallest compiled peak, else the smallest lower bound.
  uint64_t smallestPeak = UINT64_MAX, smallestBound = UINT64_MAX;
  std::string peakName, boundName;
  for (int stage = 0; stage <= 3; ++stage) {
    ParallelStrategy c = candidate(stage);
    uint64_t atLeast = stage < static_cast<int>(state.size()) ? state[stage] : 0;
    if (stage > 0 && opts.gpuMemoryBytes && atLeast > opts.gpuMemoryBytes) {
      decision.push_back(std::string("rejected ") + names[stage] + ": its model state alone is " +
                         mib(atLeast) + " per rank (not compiled); does not fit in " + limit);
      if (atLeast < smallestBound) {
        smallestBound = atLeast;
        boundName = names[stage];
      }
      continue;
    }
    DataParallelBundle compiled;
    if (stage == 0)
      compiled = std::move(baseline);
    else if (!compileStrategy(c, compiled))
      return false;
    uint64_t peak = largestPeak(compiled);
    uint64_t comm = compiled.programs.empty() ? 0 : compiled.programs[0].planned_comm_bytes();
    std::string numbers = "peak " + mib(peak) + " per rank, sends " + std::to_string(comm) +
                          " bytes per rank per step";
    if (opts.gpuMemoryBytes && peak > opts.gpuMemoryBytes) {
      decision.push_back(std::string("rejected ") + names[stage] + ": " + numbers +
                         "; does not fit in " + limit);
      if (peak < smallestPeak) {
        smallestPeak = peak;
        peakName = names[stage];
      }
      continue;
    }
    decision.push_back(std::string("chose ") + names[stage] + " (" + c.canonical() + "): " +
                       numbers + "; the cheapest candidate that fits" +
                       (stage == 3 ? "" : "; the higher ZeRO stages were not needed (more "
                                          "work per step, and zero3 sends about 1.5x the "
                                          "bytes)"));
    chosen = c;
    out = std::move(compiled);
    return true;
  }
  std::string need;
  if (smallestPeak != UINT64_MAX)
    need = "the smallest compiled, " + peakName + ", needs " + mib(smallestPeak) + " per rank";
  if (smallestBound < smallestPeak)
    need += std::string(need.empty() ? "" : "; ") + boundName + " (not compiled) needs at least " +
            mib(smallestBound) + " per rank for its model state alone";
  printError(opts.model + ": --strategy auto: no data-parallel strategy fits in --gpu-memory " +
             limit + " on " + std::to_string(opts.gpus) + " ranks; " + need);
  return false;
}

} // namespace shardc::driver
