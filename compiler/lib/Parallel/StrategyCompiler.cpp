//===- StrategyCompiler.cpp -------------------------------------------------------------===//
#include "shardc/Parallel/StrategyCompiler.h"

#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Lowering/RankPrograms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace shardc {

mlir::FailureOr<EmittedProgram> emitCompiledStep(mlir::ModuleOp module, WeightStore &weights,
                                                 const CompileOptions &opts,
                                                 FirstErrorCollector &errors) {
  bool training = opts.mode == Mode::Train;
  auto func = module.lookupSymbol<mlir::func::FuncOp>(training ? "train_step" : "forward");
  if (!func) {
    printError(opts.model + ": the compiled module has no @" +
               (training ? "train_step" : "forward") + " function");
    return mlir::failure();
  }
  mlir::FailureOr<EmittedProgram> emitted = emitProgram(func, weights);
  if (mlir::failed(emitted))
    printError(errors.hasError() ? errors.message() : opts.model + ": lowering failed");
  return emitted;
}

void printPassFailure(const CompileOptions &opts, FirstErrorCollector &errors) {
  printError(errors.hasError() ? errors.message() : opts.model + ": pass pipeline failed");
}

bool StrategyCompiler::MeshKey::operator<(const MeshKey &o) const {
  return std::tie(dp, tp, sp, pp) < std::tie(o.dp, o.tp, o.sp, o.pp);
}

void StrategyCompiler::fail(const std::string &message, std::string *refusal) const {
  if (refusal)
    *refusal = message;
  else
    printError(message);
}

// The step's resharding lines (graph.resharding): propagation's, then the partitioner's, which
// say how each op was resharded and what that sends (the same for every local program: a
// resharded batch is split evenly).
static void recordReshardings(mlir::func::FuncOp train, GlobalStep *step) {
  auto lines = train ? train->getAttrOfType<mlir::ArrayAttr>(graph::kReshardingAttr) : nullptr;
  if (!lines)
    return;
  step->reshardings.clear();
  for (llvm::StringRef line : lines.getAsValueRange<mlir::StringAttr>())
    step->reshardings.push_back(line.str());
}

// The pipeline's lines (shardc-split-stages: the same on every stage's program).
static void recordPipeline(mlir::func::FuncOp train, GlobalStep *step) {
  if (!train)
    return;
  step->pipeline.clear();
  for (llvm::StringRef key : {graph::kPipelineScheduleAttr, graph::kPipelineCutsAttr})
    if (auto lines = train->getAttrOfType<mlir::ArrayAttr>(key))
      for (llvm::StringRef line : lines.getAsValueRange<mlir::StringAttr>())
        step->pipeline.push_back(line.str());
  if (auto trace = train->getAttrOfType<mlir::StringAttr>(graph::kPipelineTraceAttr))
    step->pipelineTrace = trace.getValue().str();
}

GlobalStep *StrategyCompiler::globalStep(const ParallelStrategy &s, std::string *refusal,
                                         bool dump) {
  MeshKey key{s.dp, s.tp, s.sequenceParallel, s.pp};
  dump = dump && !opts_.dumpIrDir.empty();
  if (auto it = steps_.find(key); it != steps_.end() && (!dump || it->second->dumped))
    return it->second.get();
  auto step = std::make_unique<GlobalStep>();
  step->module = imported_.clone();
  step->dumped = dump;
  FirstErrorCollector errors(ctx_, opts_.model);
  GlobalPassOptions mesh;
  mesh.ranks = s.dp;
  mesh.tp = s.tp;
  mesh.sequenceParallel = s.sequenceParallel;
  mesh.shardOverrides = opts_.shardOverrides;
  mesh.microBatches = opts_.microBatches;
  mesh.pipelineStages = s.pp;
  mesh.virtualStages = s.pp > 1 ? opts_.virtualStages : 1;
  mesh.pipelineCuts = opts_.pipelineCuts;
  if (mlir::failed(runGlobalPasses(step->module.get(), dump ? opts_.dumpIrDir : "", &opts_.train,
                                   mesh, step->dumps))) {
    fail(errors.hasError() ? errors.message() : opts_.model + ": pass pipeline failed", refusal);
    return nullptr;
  }
  if (auto train = step->module->lookupSymbol<mlir::func::FuncOp>("train_step")) {
    if (auto layout = train->getAttrOfType<mlir::ArrayAttr>(graph::kTpLayoutAttr))
      for (llvm::StringRef line : layout.getAsValueRange<mlir::StringAttr>())
        step->layoutDecisions.push_back(line.str());
    recordReshardings(train, step.get());
  }
  std::string error;
  std::optional<GlobalBatch> batch = findGlobalBatch(step->module.get(), opts_, error);
  if (!batch) {
    fail(error, refusal);
    return nullptr;
  }
  step->batch = *batch;
  return (steps_[key] = std::move(step)).get();
}

bool StrategyCompiler::compile(const ParallelStrategy &s, DataParallelBundle &out) {
  GlobalStep *step = globalStep(s, nullptr, /*dump=*/true);
  if (!step)
    return false;
  return compileDataParallel(
      opts_, s, step->batch,
      [&](const DataParallelOptions &dp) -> mlir::FailureOr<EmittedProgram> {
        mlir::OwningOpRef<mlir::ModuleOp> local(step->module->clone());
        int dumps = step->dumps;
        if (mlir::failed(runLocalPasses(local.get(), opts_.dumpIrDir, &opts_.train, &dp,
                                       opts_.fuseElementwise, dumps))) {
          printPassFailure(opts_, errors_);
          return mlir::failure();
        }
        recordReshardings(local->lookupSymbol<mlir::func::FuncOp>("train_step"), step);
        recordPipeline(local->lookupSymbol<mlir::func::FuncOp>("train_step"), step);
        return emitCompiledStep(local.get(), weights_, opts_, errors_);
      },
      out);
}

std::optional<std::string> StrategyCompiler::meshRefusal(const ParallelStrategy &s) {
  std::string refusal;
  if (globalStep(s, &refusal))
    return std::nullopt;
  return refusal;
}

std::optional<PlannedStepCost> StrategyCompiler::score(const ParallelStrategy &s,
                                                       std::string &refusal) {
  GlobalStep *step = globalStep(s, &refusal);
  if (!step)
    return std::nullopt;
  if (step->batch.rows < s.dp) {
    refusal = "the global batch has " + std::to_string(step->batch.rows) + " rows, fewer " +
              "than its " + std::to_string(s.dp) + " data-parallel ranks";
    return std::nullopt;
  }
  // Every distinct number of rows a rank gets (RankPrograms.h); the first ranks get the most.
  std::vector<RowSlice> slices = splitRows(step->batch.rows, s.dp);
  std::set<int64_t> rowCounts = {slices.front().rows, slices.back().rows};
  for (int64_t rows : rowCounts)
    if (rows % opts_.microBatches != 0) {
      refusal = "a rank's " + std::to_string(rows) + " rows do not divide into " +
                std::to_string(opts_.microBatches) + " microbatches";
      return std::nullopt;
    }
  std::optional<PlannedStepCost> total;
  for (int64_t rows : rowCounts)
    for (int stage = 0; stage < s.pp; ++stage) {
      DataParallelOptions dp = dataParallelOptions(opts_, s, rows);
      dp.pipelineStage = stage;
      mlir::OwningOpRef<mlir::ModuleOp> local(step->module->clone());
      FirstErrorCollector errors(ctx_, opts_.model);
      int noDumps = 0;
      auto func = local->lookupSymbol<mlir::func::FuncOp>("train_step");
      mlir::FailureOr<PlannedStepCost> cost = mlir::failure();
      if (func && mlir::succeeded(runLocalPasses(local.get(), "", &opts_.train, &dp,
                                                     opts_.fuseElementwise, noDumps)))
        cost = plannedStepCost(func);
      if (mlir::failed(cost)) {
        refusal = errors.hasError() ? errors.message() : "the pass pipeline failed";
        return std::nullopt;
      }
      if (!total)
        total = *cost;
      total->peakBytes = std::max(total->peakBytes, cost->peakBytes);
      total->commBytes = std::max(total->commBytes, cost->commBytes);
    }
  return total;
}

} // namespace shardc
