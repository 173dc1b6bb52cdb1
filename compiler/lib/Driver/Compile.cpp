//===- Compile.cpp ----------------------------------------------------------------------===//
#include "shardc/Driver/Compile.h"

#include "shardc/Driver/BaseQuantization.h"
#include "shardc/Driver/BundleNotes.h"
#include "shardc/Driver/BundleOutput.h"
#include "shardc/Driver/BundleWriter.h"
#include "shardc/Driver/LoraSetup.h"
#include "shardc/Driver/PlanPrediction.h"
#include "shardc/Plan/PlanReport.h"
#include "shardc/Cost/Cluster.h"
#include "shardc/Parallel/CostSearch.h"
#include "shardc/Parallel/StepProfiler.h"
#include "shardc/Driver/TrainedSetDoubts.h"
#include "shardc/Parallel/AutoRemat.h"
#include "shardc/Parallel/AutoStrategy.h"
#include "shardc/Parallel/StrategyCompiler.h"
#include "shardc/Pipelines/TrainPipelines.h"

#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/TensorDecoding.h"
#include "passes/Passes.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Lowering/ConstantEvaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include "runtime/support/strict_json.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace shardc {

namespace {

// Training needs a loss: the first scalar floating-point output of the graph.
std::string describeLossOutput(mlir::func::FuncOp func) {
  if (!func)
    return "";
  auto results = func.getFunctionType().getResults();
  for (auto [i, type] : llvm::enumerate(results)) {
    auto ranked = mlir::dyn_cast<mlir::RankedTensorType>(type);
    if (ranked && ranked.getRank() == 0 && ranked.getElementType().isF32()) {
      auto name = func.getResultAttrOfType<mlir::StringAttr>(i, graph::kOutputAttr);
      return name ? name.str() : "output " + std::to_string(i);
    }
  }
  return "";
}

// A float parameter's value from the importer's weights, for shardc-fuse-attention to tell a
// causal mask buffer; none for a large one (it would be copied into the IR's attributes).
std::optional<mlir::DenseElementsAttr> frozenMaskValue(const WeightStore &weights,
                                                       llvm::StringRef name) {
  const WeightTensor *tensor = weights.find(name.str());
  if (!tensor || !tensor->present || !tensor->type.getElementType().isF32() ||
      tensor->bytes.size() > static_cast<size_t>(kMaxFoldedConstantBytes))
    return std::nullopt;
  return onnx_import::toElementsAttr(tensor->type, tensor->bytes);
}

// Imports the model with the user's input shapes: the global batch.
mlir::FailureOr<onnx_import::ImportedModel>
importModel(mlir::MLIRContext &ctx, const CompileOptions &opts, FirstErrorCollector &errors) {
  onnx_import::ImportOptions importOptions;
  importOptions.modelPath = opts.model;
  importOptions.inputShapes = opts.inputShapes;
  importOptions.paddingRows = opts.paddingRows;
  importOptions.requireWeights = !opts.withoutWeights;
  importOptions.trainingDropout = opts.mode == Mode::Train;
  importOptions.updateBuffers = opts.mode == Mode::Train;
  std::string error;
  mlir::FailureOr<onnx_import::ImportedModel> imported =
      onnx_import::importOnnxModel(ctx, importOptions, error);
  if (mlir::failed(imported)) {
    printError(!error.empty()      ? error
               : errors.hasError() ? errors.message()
                                   : opts.model + ": import failed");
    return imported;
  }
  for (const std::string &line : imported->warnings)
    std::fprintf(stderr, "shardc: warning: %s: %s\n", opts.model.c_str(), line.c_str());
  // --fuse-attention: on the imported forward function, so that every strategy and both modes
  // start from the fused graph.
  if (opts.fuseAttention) {
    mlir::PassManager pm(&ctx);
    pm.nest<mlir::func::FuncOp>().addPass(
        createFuseAttention([&weights = imported->weights](llvm::StringRef name) {
          return frozenMaskValue(weights, name);
        }));
    if (mlir::failed(pm.run(imported->module.get()))) {
      printError(errors.hasError() ? errors.message()
                                   : opts.model + ": shardc-fuse-attention failed");
      return mlir::failure();
    }
  }
  // --lora: the adapters and the frozen base, for every strategy (after attention fusion,
  // whose chains do not contain the projections).
  if (opts.lora.enabled) {
    std::string loraError;
    if (!driver::addLoraAdapters(opts, imported->module.get(), imported->weights, loraError)) {
      printError(loraError);
      return mlir::failure();
    }
  }
  // --base-dtype: the frozen base (the LoRA pass froze it; in forward mode every weight) in
  // fewer bits, for every strategy.
  if (opts.baseDtype != "fp32") {
    std::string quantizeError;
    if (!driver::quantizeBase(opts, imported->module.get(), imported->weights, quantizeError)) {
      printError(quantizeError);
      return mlir::failure();
    }
  }
  return imported;
}

bool checkHasLoss(const CompileOptions &opts, mlir::ModuleOp module) {
  if (opts.mode == Mode::Train &&
      describeLossOutput(module.lookupSymbol<mlir::func::FuncOp>("forward")).empty()) {
    printError(opts.model + ": --mode train needs a scalar float output (the loss), and the "
                            "model has none; use --mode forward to compile inference");
    return false;
  }
  return true;
}

// 0 with `out` filled (for --emit=mlir: the IR printed, `out` without programs), or 1.
int compileSingleRank(mlir::MLIRContext &ctx, const CompileOptions &opts,
                      FirstErrorCollector &errors, CompiledBundle &out) {
  mlir::FailureOr<onnx_import::ImportedModel> imported = importModel(ctx, opts, errors);
  if (mlir::failed(imported))
    return 1;
  if (opts.emitMlir) {
    imported->module->print(llvm::outs(), mlir::OpPrintingFlags().elideLargeElementsAttrs(1024));
    llvm::outs() << "\n";
    llvm::outs().flush();
    return 0;
  }
  if (!checkHasLoss(opts, imported->module.get()))
    return 1;
  PlanNotes notes; // before the passes, which replace @forward by @train_step
  addTrainedSetNotes(opts, imported->module.get(), notes);
  if (!opts.cluster.empty() && opts.mode == Mode::Train) {
    // The cost model compiles its own profile of the step from the model as imported.
    mlir::OwningOpRef<mlir::ModuleOp> pristine(imported->module->clone());
    if (!predictPlan(ctx, opts, pristine.get(), imported->weights, errors, opts.strategy, notes))
      return 1;
  }
  const TrainStepOptions *train = opts.mode == Mode::Train ? &opts.train : nullptr;
  int dumpIndex = 0;
  if (mlir::failed(runGlobalPasses(imported->module.get(), opts.dumpIrDir, train,
                                   GlobalPassOptions(), dumpIndex)) ||
      mlir::failed(
          runLocalPasses(imported->module.get(), opts.dumpIrDir, train, nullptr,
                         opts.fuseElementwise, dumpIndex))) {
    printPassFailure(opts, errors);
    return 1;
  }
  if (notes.trainedSetGuessed)
    notes.doubtfulTrained = doubtfulTrainedParameters(imported->module.get(), imported->weights);
  notes.remat = rematReport(imported->module.get(), &notes.rematUnits);
  mlir::FailureOr<EmittedProgram> emitted =
      emitCompiledStep(imported->module.get(), imported->weights, opts, errors);
  if (mlir::failed(emitted))
    return 1;
  out.bundle = newBundle(opts);
  out.bundle.set_world_size(1);
  *out.bundle.add_programs() = emitted->program;
  out.weights =
      layOutWeightsFile(emitted->weights, emitted->initialValues, {out.bundle.mutable_programs(0)});
  out.notes = std::move(notes);
  return 0;
}

// Compiles the imported model as `opts` says (its strategy explicit, or auto by memory fit),
// with `decision` (the cost model's search, if any) as the strategy decision.
int compileImported(mlir::MLIRContext &ctx, const CompileOptions &opts,
                    onnx_import::ImportedModel &imported, FirstErrorCollector &errors,
                    std::vector<std::string> decision, CompiledBundle &out,
                    StepProfiler *profiler = nullptr) {
  StrategyCompiler compiler(ctx, opts, imported.module.get(), imported.weights, errors);
  ParallelStrategy chosen = opts.strategy;
  DataParallelBundle compiled;
  PlanNotes notes;
  notes.strategyDecision = std::move(decision);
  if (opts.strategy.automatic) {
    if (!chooseStrategy(opts, compiler, chosen, compiled, notes.strategyDecision))
      return 1;
  } else if (!compiler.compile(chosen, compiled)) {
    return 1;
  }
  if (!opts.cluster.empty() && !predictPlan(ctx, opts, imported.module.get(), imported.weights,
                                            errors, chosen, notes, nullptr, nullptr, profiler))
    return 1;
  notes.layoutDecisions = compiler.globalStep(chosen)->layoutDecisions;
  notes.reshardings = compiler.globalStep(chosen)->reshardings;
  notes.pipeline = compiler.globalStep(chosen)->pipeline;
  notes.pipelineTrace = compiler.globalStep(chosen)->pipelineTrace;
  notes.remat = rematReport(compiler.globalStep(chosen)->module.get(), &notes.rematUnits);
  addTrainedSetNotes(opts, imported.module.get(), notes);
  if (notes.trainedSetGuessed)
    notes.doubtfulTrained =
        doubtfulTrainedParameters(compiler.globalStep(chosen)->module.get(), imported.weights);
  out.bundle = newBundle(opts);
  out.bundle.set_world_size(chosen.dp * chosen.tp * chosen.pp);
  out.bundle.set_strategy(chosen.canonical());
  compiled.moveInto(out.bundle);
  out.weights = std::move(compiled.weights);
  out.notes = std::move(notes);
  return 0;
}

// --strategy auto --cluster: the cost model's search (CostSearch.h); `chosenOpts` compile the
// chosen plan, `decision` says why.
bool searchByCost(mlir::MLIRContext &ctx, const CompileOptions &opts,
                  onnx_import::ImportedModel &imported, FirstErrorCollector &errors,
                  StepProfiler &profiler, CompileOptions &chosenOpts,
                  std::vector<std::string> &decision) {
  const auto start = std::chrono::steady_clock::now();
  cost::Cluster cluster;
  if (!loadClusterOption(opts, cluster))
    return false;
  CostSearchResult result = searchPlans(profiler, cluster, opts, opts.gpus);
  auto plannedPeak = [&](const CostedPlan &plan, std::string &refusal) -> uint64_t {
    if (opts.predictOnly)
      return std::max<uint64_t>(plan.prediction.peakBytes, 1); // analytic: nothing is planned
    CompileOptions o = optionsFor(opts, plan.candidate);
    StrategyCompiler scorer(ctx, o, imported.module.get(), imported.weights, errors);
    std::optional<PlannedStepCost> planned = scorer.score(o.strategy, refusal);
    return planned ? std::max<uint64_t>(planned->peakBytes, 1) : 0;
  };
  cost::Candidate chosen;
  if (!chooseByCost(opts, cluster, result, opts.gpus, 3, plannedPeak, chosen, decision))
    return false;
  // A batch with fewer rows than devices leaves devices idle in every plan's replicas: the
  // best plan on fewer devices, by tokens/s per device.
  if (result.globalRows > 0 && result.globalRows < opts.gpus) {
    // Against the plan chosen (the fastest that fits when planned), not the fastest costed.
    const CostedPlan *mine = &result.ranked.front();
    for (const CostedPlan &plan : result.ranked)
      if (plan.candidate.text() == chosen.text()) {
        mine = &plan;
        break;
      }
    const double perDevice =
        mine->prediction.tokensPerSecond / static_cast<double>(opts.gpus);
    std::string best;
    double bestPerDevice = perDevice;
    for (int64_t fewer = opts.gpus / 2; fewer >= 1; fewer /= 2) {
      CostSearchResult smaller = searchPlans(profiler, cluster, opts, fewer);
      if (smaller.ranked.empty())
        continue;
      const CostedPlan &top = smaller.ranked.front();
      const double rate = top.prediction.tokensPerSecond / static_cast<double>(fewer);
      if (rate > bestPerDevice) {
        bestPerDevice = rate;
        char line[160];
        std::snprintf(line, sizeof line, ": %.4g tokens/s, %.4g per device (%.4g per device on all %d)",
                      top.prediction.tokensPerSecond, rate, perDevice, opts.gpus);
        best = "on " + std::to_string(fewer) + " devices, " + top.candidate.text() + line;
      }
    }
    decision.push_back("the global batch has " + std::to_string(result.globalRows) +
                       " rows for " + std::to_string(opts.gpus) +
                       " devices: too small to keep every device busy" +
                       (best.empty() ? std::string() : "; the best plan per device is " + best));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char line[200];
  std::snprintf(line, sizeof line,
                "searched in %.2f s: %zu profiles compiled ((tp, sp, remat) each once), %zu "
                "candidates costed",
                seconds, profiler.compiled(), result.costed);
  decision.insert(decision.begin() + 1, line);
  chosenOpts = optionsFor(opts, chosen);
  return true;
}

// --predict-only: OUT/prediction.json and OUT/prediction.txt, no programs.
int predictOnly(mlir::MLIRContext &ctx, const CompileOptions &opts) {
  FirstErrorCollector errors(ctx, opts.model);
  mlir::FailureOr<onnx_import::ImportedModel> imported = importModel(ctx, opts, errors);
  if (mlir::failed(imported) || !checkHasLoss(opts, imported->module.get()))
    return 1;
  CompileOptions chosen = opts;
  std::vector<std::string> decision;
  StepProfiler profiler(ctx, opts, imported->module.get(), imported->weights, errors);
  if (opts.strategy.automatic &&
      !searchByCost(ctx, opts, *imported, errors, profiler, chosen, decision))
    return 1;
  PlanNotes notes;
  cost::Prediction p;
  cost::Candidate c;
  if (!predictPlan(ctx, chosen, imported->module.get(), imported->weights, errors,
                   chosen.strategy, notes, &p, &c, &profiler))
    return 1;
  runtime::Json j = runtime::Json::object();
  j["model"] = opts.model;
  j["cluster"] = opts.cluster;
  j["devices"] = c.devices();
  j["strategy"] = chosen.strategy.canonical();
  j["micro_batches"] = c.microBatches;
  j["schedule"] = c.schedule;
  j["virtual_stages"] = c.virtualStages;
  j["remat"] = c.remat;
  j["prediction"] = runtime::Json::parse(formatPredictionJson(notes.prediction));
  j["breakdown"] = {{"compute_seconds", p.computeSeconds},
                    {"bubble_seconds", p.bubbleSeconds},
                    {"tp_comm_seconds", p.tpCommSeconds},
                    {"pp_comm_seconds", p.ppCommSeconds},
                    {"dp_exposed_seconds", p.dpCommSeconds},
                    {"optimizer_seconds", p.optimizerSeconds}};
  j["strategy_decision"] = decision;
  j["lines"] = notes.predictionLines;
  std::string text = "prediction for " + opts.model + " (--predict-only: no programs)\n";
  for (const std::string &line : decision)
    text += "  " + line + "\n";
  for (const std::string &line : notes.predictionLines)
    text += "  " + line + "\n";
  std::error_code ec;
  std::filesystem::create_directories(opts.output, ec);
  const std::string json = j.dump(2) + "\n";
  for (const auto &[name, body] :
       {std::pair{std::string("prediction.json"), &json}, {std::string("prediction.txt"), &text},
        {std::string(kPredictedTraceFileName), &notes.costTrace}}) {
    if (body->empty())
      continue;
    std::ofstream f(opts.output + "/" + name);
    f << *body;
    if (!f.good()) {
      printError(opts.output + "/" + name + ": cannot write it");
      return 1;
    }
  }
  std::fputs(text.c_str(), stdout);
  return 0;
}

// 0 with `out` filled (without programs for --emit=mlir), or 1 with the error printed.
int compileBundle(mlir::MLIRContext &ctx, const CompileOptions &opts, CompiledBundle &out) {
  FirstErrorCollector errors(ctx, opts.model);
  // Microbatches split the batch as ranks do: one device with several goes the sharded way.
  if (opts.emitMlir || opts.mode == Mode::Forward || (opts.gpus == 1 && opts.microBatches == 1))
    return compileSingleRank(ctx, opts, errors, out);

  // One import; one global training step per mesh (the batch's sharding comes from
  // propagation); one partitioned copy of it per strategy and distinct number of rows.
  mlir::FailureOr<onnx_import::ImportedModel> imported = importModel(ctx, opts, errors);
  if (mlir::failed(imported) || !checkHasLoss(opts, imported->module.get()))
    return 1;
  if (opts.strategy.automatic && !opts.cluster.empty()) {
    CompileOptions chosen;
    std::vector<std::string> decision;
    StepProfiler profiler(ctx, opts, imported->module.get(), imported->weights, errors);
    if (!searchByCost(ctx, opts, *imported, errors, profiler, chosen, decision))
      return 1;
    return compileImported(ctx, chosen, *imported, errors, std::move(decision), out,
                           &profiler);
  }
  return compileImported(ctx, opts, *imported, errors, {}, out);
}

// --remat auto's plans, each compiled in full as the options say with its recomputation.
class RematBundleCompiler : public RematPlanCompiler {
public:
  RematBundleCompiler(mlir::MLIRContext &ctx, const CompileOptions &opts)
      : ctx_(ctx), opts_(opts) {}

  int compile(const RematPlan &plan, uint64_t &peak, int64_t &units) override {
    CompileOptions candidate = opts_;
    candidate.train.remat = plan.mode;
    candidate.train.rematUnits = plan.units;
    last_ = CompiledBundle();
    if (int rc = compileBundle(ctx_, candidate, last_))
      return rc;
    peak = largestPlannedPeak(last_.bundle.programs());
    units = last_.notes.rematUnits;
    return 0;
  }

  void keepLast() override { best_ = std::move(last_); }

  CompiledBundle &best() { return best_; }

private:
  mlir::MLIRContext &ctx_;
  const CompileOptions &opts_;
  CompiledBundle last_, best_;
};

// --remat auto: the least recomputation whose largest planned peak per rank fits
// --gpu-memory, per unit (AutoRemat.h), written with the choice in plan.txt.
int compileWithAutoRemat(mlir::MLIRContext &ctx, const CompileOptions &opts) {
  RematBundleCompiler compiler(ctx, opts);
  std::string choice;
  if (int rc = chooseRemat(opts, compiler, choice))
    return rc;
  CompiledBundle &out = compiler.best();
  if (out.notes.remat.empty())
    out.notes.remat.push_back(choice + "; nothing recomputed");
  else
    out.notes.remat.front() = choice + "; " + out.notes.remat.front();
  return writeCompiledBundle(ctx, opts, out);
}

} // namespace

int compileModel(const CompileOptions &opts) {
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();
  ctx.loadDialect<mlir::func::FuncDialect, graph::GraphDialect>();
  if (opts.predictOnly)
    return predictOnly(ctx, opts);
  if (opts.mode == Mode::Train && opts.train.remat == "auto" && !opts.emitMlir)
    return compileWithAutoRemat(ctx, opts);
  CompiledBundle out;
  if (int rc = compileBundle(ctx, opts, out))
    return rc;
  if (out.bundle.programs_size() == 0)
    return 0; // --emit=mlir printed the IR
  return writeCompiledBundle(ctx, opts, out);
}

} // namespace shardc
