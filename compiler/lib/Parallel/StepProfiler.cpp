//===- StepProfiler.cpp -----------------------------------------------------------------===//
#include "shardc/Parallel/StepProfiler.h"

#include "shardc/Cost/ProfileStep.h"
#include "shardc/Cost/TruncateUnits.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Lowering/RankPrograms.h"
#include "shardc/Pipelines/TrainPipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace shardc {

namespace {

// The sequence of the first 2-D integer input (the tokens of a language model's row); 1 when
// there is none (an image is one sample).
int64_t tokensPerRow(mlir::func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (!func.getArgAttr(i, graph::kInputAttr))
      continue;
    auto t = mlir::dyn_cast<mlir::RankedTensorType>(func.getArgument(i).getType());
    if (t && t.getRank() == 2 && t.getElementType().isInteger() && t.hasStaticShape())
      return t.getDimSize(1);
  }
  return 1;
}

} // namespace

const cost::StepProfile *StepProfiler::profile(int tp, bool sequenceParallel,
                                               const std::string &remat, std::string &refusal) {
  Key key{tp, sequenceParallel, remat};
  if (auto it = profiles_.find(key); it != profiles_.end()) {
    refusal = it->second.refusal;
    return it->second.profile.get();
  }
  Entry &entry = profiles_[key];
  entry.opts = std::make_unique<CompileOptions>(opts_);
  CompileOptions &o = *entry.opts;
  o.train.remat = remat;
  o.train.rematUnits = -1;
  o.microBatches = 1;
  o.pipelineCuts.clear();
  o.dumpIrDir.clear();
  // A deep model is profiled on three of its units (TruncateUnits.h), once for all entries.
  if (!truncatedReady_) {
    truncatedReady_ = true;
    truncated_ = imported_.clone();
    truncation_ = cost::truncateRepeatedUnits(truncated_.get());
  }
  mlir::ModuleOp source = truncation_ ? truncated_.get() : imported_;
  entry.compiler = std::make_unique<StrategyCompiler>(ctx_, o, source, weights_, errors_);

  // On two replicas when the batch has the rows, so that the dp axis marks them.
  ParallelStrategy s;
  s.tp = tp;
  s.sequenceParallel = sequenceParallel;
  s.dp = 2;
  GlobalStep *step = entry.compiler->globalStep(s, &entry.refusal);
  if (step && step->batch.rows < 2) {
    s.dp = 1;
    step = entry.compiler->globalStep(s, &entry.refusal);
  }
  if (!step) {
    refusal = entry.refusal;
    return nullptr;
  }
  const int64_t rows = splitRows(step->batch.rows, s.dp).front().rows;
  DataParallelOptions dp = dataParallelOptions(o, s, rows);
  mlir::OwningOpRef<mlir::ModuleOp> local(step->module->clone());
  FirstErrorCollector errors(ctx_, o.model);
  int noDumps = 0;
  auto func = local->lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!func ||
      mlir::failed(runLocalPasses(local.get(), "", &o.train, &dp, o.fuseElementwise, noDumps))) {
    entry.refusal = errors.hasError() ? errors.message() : "the pass pipeline failed";
    refusal = entry.refusal;
    return nullptr;
  }
  const int dpAxis = 0, tpAxis = tp > 1 ? 1 : -1;
  mlir::FailureOr<cost::StepProfile> read = cost::profileStep(func, dpAxis, tpAxis);
  if (mlir::failed(read)) {
    entry.refusal = "the step could not be profiled";
    refusal = entry.refusal;
    return nullptr;
  }
  auto profile = std::make_unique<cost::StepProfile>(std::move(*read));
  profile->tp = tp;
  profile->sequenceParallel = sequenceParallel;
  profile->remat = remat;
  profile->bf16 = o.train.precision == "bf16" || o.train.precision == "fp16";
  profile->rows = rows;
  profile->globalRows = step->batch.rows;
  profile->stateBytesPerParamByte =
      o.train.optimizer == "sgd" ? (o.train.momentum != 0 ? 1.0 : 0.0) : 2.0;
  std::map<std::string, int64_t> repeats;
  if (truncation_) {
    for (size_t i = 0; i < truncation_->kept.size(); ++i)
      repeats[truncation_->kept[i]] = truncation_->repeats[i];
    for (const std::string &unit : profile->units) {
      auto it = repeats.find(unit);
      profile->unitRepeats.push_back(it != repeats.end() ? it->second : 1);
    }
  }
  if (auto global = step->module->lookupSymbol<mlir::func::FuncOp>("train_step")) {
    profile->tokensPerRow = tokensPerRow(global);
    // Model FLOPs: the products of the global step, recomputation left out.
    profile->modelFlops = cost::modelProductFlops(global, repeats);
  }
  entry.profile = std::move(profile);
  return entry.profile.get();
}

} // namespace shardc
