//===- DataParallelCompile.cpp ----------------------------------------------------------===//
#include "DataParallelCompile.h"

#include "Diagnostics.h"

#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Lowering/RankPrograms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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

std::optional<GlobalBatch> findGlobalBatch(onnx_import::ImportedModel &imported,
                                           const Options &opts, std::string &error) {
  auto forward = imported.module->lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward) {
    error = opts.model + ": the imported module has no @forward function";
    return std::nullopt;
  }
  GlobalBatch batch;
  std::string first;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<mlir::StringAttr>(i, graph::kInputAttr);
    if (!name)
      continue;
    auto type = mlir::cast<mlir::RankedTensorType>(forward.getArgument(i).getType());
    if (type.getRank() == 0) {
      error = opts.model + ": input '" + name.str() +
              "' is a scalar; data parallelism splits every graph input along dim 0 (the "
              "batch)";
      return std::nullopt;
    }
    int64_t rows = type.getDimSize(0);
    if (batch.rows == 0) {
      batch.rows = rows;
      first = name.str();
    } else if (rows != batch.rows) {
      error = opts.model + ": inputs '" + first + "' (" + std::to_string(batch.rows) +
              " rows) and '" + name.str() + "' (" + std::to_string(rows) +
              " rows) disagree on dim 0; data parallelism splits every graph input along the "
              "batch dimension";
      return std::nullopt;
    }
  }
  if (batch.rows == 0) {
    error = opts.model + ": the model has no graph inputs to split across ranks";
    return std::nullopt;
  }
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
    dp.globalRows = batch.rows;
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
  const EmittedProgram &base = variants.at(*baseRows);
  std::vector<program::Program *> compiled;
  for (auto &[rows, v] : variants)
    compiled.push_back(&v.program);
  out.weights = layOutWeightsFile(base.weights, base.initialValues, compiled);
  out.programs.clear();
  for (int r = 0; r < strategy.dp; ++r)
    out.programs.push_back(
        programForRank(variants.at(slices[r].rows).program, r, strategy.dp, slices[r], batch.rows));
  return true;
}

bool chooseStrategy(const Options &opts, const CompileStrategy &compileStrategy,
                    ParallelStrategy &chosen, DataParallelBundle &out,
                    std::vector<std::string> &decision) {
  const char *names[] = {"dp", "zero1", "zero2", "zero3"};
  std::string limit = opts.gpuMemoryBytes ? mib(opts.gpuMemoryBytes) : "unlimited";
  decision.push_back("auto: candidates dp, zero1, zero2, zero3 on " + std::to_string(opts.gpus) +
                     " ranks, in order of cost; --gpu-memory " + limit);
  uint64_t smallest = UINT64_MAX;
  std::string smallestName;
  for (int stage = 0; stage <= 3; ++stage) {
    ParallelStrategy candidate;
    candidate.dp = opts.gpus;
    candidate.zero = stage;
    DataParallelBundle compiled;
    if (!compileStrategy(candidate, compiled))
      return false;
    uint64_t peak = largestPeak(compiled);
    uint64_t comm = compiled.programs.empty() ? 0 : compiled.programs[0].planned_comm_bytes();
    std::string numbers = "peak " + mib(peak) + " per rank, sends " + std::to_string(comm) +
                          " bytes per rank per step";
    if (opts.gpuMemoryBytes && peak > opts.gpuMemoryBytes) {
      decision.push_back(std::string("rejected ") + names[stage] + ": " + numbers +
                         "; does not fit in " + limit);
      if (peak < smallest) {
        smallest = peak;
        smallestName = names[stage];
      }
      continue;
    }
    decision.push_back(std::string("chose ") + names[stage] + " (" + candidate.canonical() +
                       "): " + numbers + "; the cheapest candidate that fits" +
                       (stage == 3 ? "" : "; the higher ZeRO stages were not needed (more "
                                          "work per step, and zero3 sends about 1.5x the "
                                          "bytes)"));
    chosen = candidate;
    out = std::move(compiled);
    return true;
  }
  printError(opts.model + ": --strategy auto: no data-parallel strategy fits in --gpu-memory " +
             limit + " on " + std::to_string(opts.gpus) + " ranks; the smallest, " +
             smallestName + ", needs " + mib(smallest) + " per rank");
  return false;
}

} // namespace shardc::driver
