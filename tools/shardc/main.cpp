//===- main.cpp - shardc: ONNX model -> shardc bundle -----------------------------------===//
//
//   shardc MODEL.onnx --mode forward -o OUT.shard
//
// import (frontends/onnx) -> pass pipeline (train step, data-parallel passes, fold constants,
// plan memory) -> program emission (one program per rank) -> bundle directory. Errors are one line "shardc: error: ..." with exit code 1; usage
// errors exit with 2.
//
//===-------------------------------------------------------------------------------------===//
#include "AutoStrategy.h"
#include "CommandLine.h"
#include "DataParallelCompile.h"
#include "Diagnostics.h"
#include "Pipeline.h"
#include "SourceModel.h"

#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/TensorDecoding.h"
#include "passes/Passes.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Lowering/Bundle.h"
#include "shardc/Lowering/ConstantEvaluator.h"
#include "shardc/Lowering/ProgramEmitter.h"
#include "shardc/Lowering/RankPrograms.h"
#include "shardc/Lowering/StepCost.h"

#include "runtime/loader/bundle.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <tuple>

using namespace shardc;
using namespace shardc::driver;

namespace {

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

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
importModel(mlir::MLIRContext &ctx, const Options &opts, FirstErrorCollector &errors) {
  onnx_import::ImportOptions importOptions;
  importOptions.modelPath = opts.model;
  importOptions.inputShapes = opts.inputShapes;
  importOptions.requireWeights = !opts.withoutWeights;
  importOptions.trainingDropout = opts.mode == Mode::Train;
  importOptions.updateBuffers = opts.mode == Mode::Train;
  std::string error;
  mlir::FailureOr<onnx_import::ImportedModel> imported =
      onnx_import::importOnnxModel(ctx, importOptions, error);
  if (mlir::failed(imported)) {
    printError(!error.empty() ? error : errors.hasError() ? errors.message()
                                                          : opts.model + ": import failed");
    return imported;
  }
  // --fuse-attention: on the imported forward function, so that every strategy and both modes
  // start from the fused graph.
  if (opts.fuseAttention) {
    mlir::PassManager pm(&ctx);
    pm.nest<mlir::func::FuncOp>().addPass(createFuseAttention(
        [&weights = imported->weights](llvm::StringRef name) {
          return frozenMaskValue(weights, name);
        }));
    if (mlir::failed(pm.run(imported->module.get()))) {
      printError(errors.hasError() ? errors.message()
                                   : opts.model + ": shardc-fuse-attention failed");
      return mlir::failure();
    }
  }
  return imported;
}

bool checkHasLoss(const Options &opts, mlir::ModuleOp module) {
  if (opts.mode == Mode::Train &&
      describeLossOutput(module.lookupSymbol<mlir::func::FuncOp>("forward")).empty()) {
    printError(opts.model + ": --mode train needs a scalar float output (the loss), and the "
                            "model has none; use --mode forward to compile inference");
    return false;
  }
  return true;
}

// Lowers the compiled @train_step (or @forward) of `module` to a program.
mlir::FailureOr<EmittedProgram> emitCompiled(mlir::ModuleOp module, WeightStore &weights,
                                             const Options &opts, FirstErrorCollector &errors) {
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

void printPassFailure(const Options &opts, FirstErrorCollector &errors) {
  printError(errors.hasError() ? errors.message() : opts.model + ": pass pipeline failed");
}

// Training: "NAME: why" for each initializer the step keeps frozen because it cannot be a
// trained parameter (graph.not_trainable): ONNX does not say what PyTorch trains, so the user
// learns which were left out.
std::vector<std::string> notTrainedNotes(const Options &opts, mlir::ModuleOp module) {
  std::vector<std::string> lines;
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (opts.mode != Mode::Train || !forward)
    return lines;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto why = forward.getArgAttrOfType<mlir::StringAttr>(i, graph::kNotTrainableAttr))
      lines.push_back(forward.getArgAttrOfType<mlir::StringAttr>(i, graph::kParamAttr).str() +
                      ": " + why.str());
  return lines;
}

// Training: where the trained set comes from. Without the model's record or a name filter it
// is a guess: every float initializer the loss depends on, less the recognised buffers.
std::string trainedSetSource(const Options &opts, mlir::ModuleOp module, bool *guessed) {
  *guessed = false;
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (opts.mode != Mode::Train || !forward)
    return "";
  std::string filters;
  if (!opts.train.trainable.empty())
    filters += " --trainable '" + opts.train.trainable + "'";
  if (!opts.train.freeze.empty())
    filters += " --freeze '" + opts.train.freeze + "'";
  if (forward->hasAttr(graph::kTrainableRecordAttr))
    return "the model's record of trained parameters (shardc.trainable metadata)" +
           (filters.empty() ? std::string() : ", then" + filters);
  if (!filters.empty())
    return "the float initializers the loss depends on, filtered by" + filters +
           " (the model has no shardc.trainable record)";
  *guessed = true;
  return "guessed: the model has no record of its trained parameters (shardc.trainable "
         "metadata); every float initializer the loss depends on is trained, except the "
         "buffers recognised below";
}

// The trained set's part of the plan notes: where it comes from and what stays frozen.
void addTrainedSetNotes(const Options &opts, mlir::ModuleOp module, PlanNotes &notes) {
  notes.notTrained = notTrainedNotes(opts, module);
  notes.trainedSetSource = trainedSetSource(opts, module, &notes.trainedSetGuessed);
  if (opts.mode == Mode::Train && opts.train.precision != "fp32") {
    notes.mixedPrecision = opts.train.halfStorage;
    notes.reducedGradientBytes = opts.train.reduceDtype == "f32" ? 4 : 2;
    const bool fp16 = opts.train.precision == "fp16";
    const std::string half = fp16 ? "fp16" : "bf16";
    notes.precision = opts.train.precision + ": every matrix product reads its operands and " +
                      "writes its result rounded to " + half + " (shardc-bf16-matmuls" +
                      (fp16 ? " dtype=f16" : "") + "), accumulating in f32; ";
    notes.precision +=
        opts.train.halfStorage
            ? "those values are stored in 16 bits, weights cast once per step from their f32 "
              "master copy (under ZeRO as their shards, before the all-gather: shardc-half-storage); "
            : "those values are kept as f32 copies (--half-storage off); ";
    notes.precision += "LayerNorm, softmax, the loss and the optimizer stay f32, with f32 "
                       "master weights; gradients are summed across data-parallel ranks in " +
                       std::string(opts.train.reduceDtype == "f32" ? "f32" : half);
    if (fp16) {
      char scale[32];
      std::snprintf(scale, sizeof scale, "%.17g", opts.train.lossScaleInit);
      notes.precision += "; dynamic loss scaling from " + std::string(scale) + ", x2 after " +
                         std::to_string(opts.train.lossScaleGrowthInterval) +
                         " finite steps, x0.5 and the step skipped when a gradient is not "
                         "finite (state loss_scale.*)";
    }
  }
  notes.microBatches = opts.microBatches;
  if (opts.mode == Mode::Train && opts.microBatches > 1)
    notes.microBatchLoop =
        std::to_string(opts.microBatches) + " per rank (shardc-micro-batches): each rank " +
        "runs the forward and backward pass once per microbatch of its rows, one after " +
        "another, and adds up the gradients and the loss in microbatch order before the " +
        "reduction and the update; activations are a microbatch's";
}

// shardc-remat's report on the training step (graph.remat): empty without recomputation;
// *units: the units it found (0 without recomputation).
std::vector<std::string> rematReport(mlir::ModuleOp module, int64_t *units) {
  std::vector<std::string> lines;
  *units = 0;
  auto step = module.lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!step)
    return lines;
  if (auto report = step->getAttrOfType<mlir::ArrayAttr>(graph::kRematAttr))
    for (llvm::StringRef line : report.getAsValueRange<mlir::StringAttr>())
      lines.push_back(line.str());
  if (auto count = step->getAttrOfType<mlir::IntegerAttr>(graph::kRematUnitsAttr))
    *units = count.getInt();
  return lines;
}

// Writes the bundle (with source.onnx for training bundles) and reports what was written.
int writeCompiledBundle(mlir::MLIRContext &ctx, const Options &opts, program::Bundle &bundle,
                        const std::vector<char> *weights, const PlanNotes &notes) {
  bool training = opts.mode == Mode::Train;
  std::string error;
  // A training bundle carries the input model without its trained values, so that shardrun
  // can write the trained model (--export-onnx). Not for planning-only bundles: they cannot
  // train, and the model's external data may be absent.
  std::string sourceOnnx;
  bool withSource = false;
  if (training && weights) {
    std::set<std::string> trained;
    for (const program::StateInit &init : bundle.programs(0).state_init())
      trained.insert(init.name());
    bool tooLarge = false;
    if (mlir::failed(buildSourceModel(ctx, opts.model, trained, sourceOnnx, tooLarge, error))) {
      printError(error);
      return 1;
    }
    withSource = !tooLarge;
    if (tooLarge)
      std::fprintf(stderr,
                   "shardc: warning: %s: the model without its trained parameters' values is "
                   "2 GiB or larger; the bundle has no source.onnx and cannot "
                   "--export-onnx\n",
                   opts.model.c_str());
  }
  if (!writeBundle(opts.output, bundle, weights, withSource ? &sourceOnnx : nullptr, error,
                   notes)) {
    printError(error);
    return 1;
  }
  uint64_t peak = 0;
  for (const program::Program &p : bundle.programs())
    peak = std::max<uint64_t>(peak, p.planned_peak_bytes());
  const program::Program &p = bundle.programs(0);
  std::fprintf(stderr,
               "shardc: wrote %s: %s%d kernel calls, arena %llu bytes, weights %llu bytes, "
               "workspace %llu bytes; planned peak %llu bytes per rank%s\n",
               opts.output.c_str(),
               bundle.world_size() > 1
                   ? (std::to_string(bundle.world_size()) + " ranks (" + bundle.strategy() +
                      "), ")
                         .c_str()
                   : "",
               p.ops_size(), static_cast<unsigned long long>(p.arena_bytes()),
               static_cast<unsigned long long>(p.weights_bytes()),
               static_cast<unsigned long long>(p.workspace_bytes()),
               static_cast<unsigned long long>(peak), weights ? "" : " (weights absent: planning only)");
  if (notes.trainedSetGuessed)
    std::fprintf(stderr,
                 "shardc: warning: %s records no trained parameters: trained every float "
                 "initializer the loss depends on but %zu recognised buffers (plan.txt, "
                 "\"Trained set\"); export with tools/export/shardc_export.py or settle it with "
                 "--trainable/--freeze\n",
                 opts.model.c_str(), notes.notTrained.size());
  // Each frozen initializer when there are few; plan.txt lists them all.
  if (notes.notTrained.size() <= 3)
    for (const std::string &line : notes.notTrained)
      std::fprintf(stderr, "shardc: note: not training %s\n", line.c_str());
  else
    std::fprintf(stderr,
                 "shardc: note: not training %zu initializers (plan.txt lists each under "
                 "\"Trained set\"), e.g. %s\n",
                 notes.notTrained.size(), notes.notTrained.front().c_str());
  if (opts.explain) {
    // The plan as written: writeBundle completes the bundle (weights file, checksums).
    std::ifstream plan(opts.output + "/" + kPlanFileName);
    std::cout << plan.rdbuf();
  }
  return 0;
}

program::Bundle newBundle(const Options &opts) {
  program::Bundle bundle;
  bundle.set_format_version(runtime::kBundleFormatVersion);
  bundle.set_mode(opts.mode == Mode::Train ? "train" : "forward");
  bundle.set_source_model(baseName(opts.model));
  return bundle;
}

// A compiled bundle before it is written: what writeCompiledBundle takes.
struct CompiledBundle {
  program::Bundle bundle;
  std::optional<std::vector<char>> weights;
  PlanNotes notes;
};

// The largest planned peak of the bundle's programs.
uint64_t largestPeak(const program::Bundle &bundle) {
  uint64_t peak = 0;
  for (const program::Program &p : bundle.programs())
    peak = std::max<uint64_t>(peak, p.planned_peak_bytes());
  return peak;
}

// 0 with `out` filled (for --emit=mlir: the IR printed, `out` without programs), or 1.
int compileSingleRank(mlir::MLIRContext &ctx, const Options &opts, FirstErrorCollector &errors,
                      CompiledBundle &out) {
  mlir::FailureOr<onnx_import::ImportedModel> imported =
      importModel(ctx, opts, errors);
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
  const TrainStepOptions *train = opts.mode == Mode::Train ? &opts.train : nullptr;
  int dumpIndex = 0;
  if (mlir::failed(runGlobalPasses(imported->module.get(), opts.dumpIrDir, train, 1, 1, false, {},
                                   /*microBatches=*/1, dumpIndex)) ||
      mlir::failed(runLocalPasses(imported->module.get(), opts.dumpIrDir, train, nullptr,
                                  dumpIndex))) {
    printPassFailure(opts, errors);
    return 1;
  }
  notes.remat = rematReport(imported->module.get(), &notes.rematUnits);
  mlir::FailureOr<EmittedProgram> emitted =
      emitCompiled(imported->module.get(), imported->weights, opts, errors);
  if (mlir::failed(emitted))
    return 1;
  out.bundle = newBundle(opts);
  out.bundle.set_world_size(1);
  *out.bundle.add_programs() = emitted->program;
  out.weights = layOutWeightsFile(emitted->weights, emitted->initialValues,
                                  {out.bundle.mutable_programs(0)});
  out.notes = std::move(notes);
  return 0;
}

// The global training step of one mesh (dp, tp, sp): built once from the import and
// propagated; each candidate strategy on that mesh partitions a copy of it.
struct GlobalStep {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  GlobalBatch batch;
  bool dumped = false; // its passes wrote --dump-ir-after-all's files
  int dumps = 0;        // IR dumps written so far (numbers the local passes' files)
  std::vector<std::string> layoutDecisions;
};

// Compiles the strategies of one import: the global step of each mesh on demand, then the
// programs of a strategy, or its planned step cost alone (--strategy auto).
class StrategyCompiler : public CandidateCompiler {
public:
  StrategyCompiler(mlir::MLIRContext &ctx, const Options &opts,
                   onnx_import::ImportedModel &imported, FirstErrorCollector &errors)
      : ctx_(ctx), opts_(opts), imported_(imported), errors_(errors) {}

  // The global step for `s`'s mesh; null with the error printed (or, when `refusal` is given,
  // put there instead) on failure. With `dump`, its passes are rerun to write
  // --dump-ir-after-all's files unless they were written when it was built (auto scores
  // several meshes and dumps only the chosen one's).
  GlobalStep *globalStep(const ParallelStrategy &s, std::string *refusal = nullptr,
                         bool dump = false) {
    MeshKey key{s.dp, s.tp, s.sequenceParallel};
    dump = dump && !opts_.dumpIrDir.empty();
    if (auto it = steps_.find(key); it != steps_.end() && (!dump || it->second->dumped))
      return it->second.get();
    auto step = std::make_unique<GlobalStep>();
    step->module = imported_.module->clone();
    step->dumped = dump;
    FirstErrorCollector errors(ctx_, opts_.model);
    if (mlir::failed(runGlobalPasses(step->module.get(), dump ? opts_.dumpIrDir : "",
                                     &opts_.train, s.dp,
                                     s.tp, s.sequenceParallel, opts_.shardOverrides,
                                     opts_.microBatches, step->dumps))) {
      fail(errors.hasError() ? errors.message() : opts_.model + ": pass pipeline failed",
           refusal);
      return nullptr;
    }
    if (auto train = step->module->lookupSymbol<mlir::func::FuncOp>("train_step"))
      if (auto layout = train->getAttrOfType<mlir::ArrayAttr>(graph::kTpLayoutAttr))
        for (llvm::StringRef line : layout.getAsValueRange<mlir::StringAttr>())
          step->layoutDecisions.push_back(line.str());
    std::string error;
    std::optional<GlobalBatch> batch = findGlobalBatch(step->module.get(), opts_, error);
    if (!batch) {
      fail(error, refusal);
      return nullptr;
    }
    step->batch = *batch;
    return (steps_[key] = std::move(step)).get();
  }

  bool compile(const ParallelStrategy &s, DataParallelBundle &out) override {
    GlobalStep *step = globalStep(s, nullptr, /*dump=*/true);
    if (!step)
      return false;
    return compileDataParallel(
        opts_, s, step->batch,
        [&](const DataParallelOptions &dp) -> mlir::FailureOr<EmittedProgram> {
          mlir::OwningOpRef<mlir::ModuleOp> local(step->module->clone());
          int dumps = step->dumps;
          if (mlir::failed(runLocalPasses(local.get(), opts_.dumpIrDir, &opts_.train, &dp,
                                          dumps))) {
            printPassFailure(opts_, errors_);
            return mlir::failure();
          }
          return emitCompiled(local.get(), imported_.weights, opts_, errors_);
        },
        out);
  }

  std::optional<std::string> meshRefusal(const ParallelStrategy &s) override {
    std::string refusal;
    if (globalStep(s, &refusal))
      return std::nullopt;
    return refusal;
  }

  std::optional<PlannedStepCost> score(const ParallelStrategy &s, std::string &refusal) override {
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
    for (int64_t rows : rowCounts) {
      DataParallelOptions dp;
      dp.ranks = s.dp;
      dp.zeroStage = s.zero;
      dp.localRows = rows;
      dp.bucketMb = opts_.bucketMb;
      dp.overlapCollectives = opts_.commOverlap;
      dp.fsdpUnit = opts_.fsdpUnit;
      dp.microBatches = opts_.microBatches;
      mlir::OwningOpRef<mlir::ModuleOp> local(step->module->clone());
      FirstErrorCollector errors(ctx_, opts_.model);
      int noDumps = 0;
      auto func = local->lookupSymbol<mlir::func::FuncOp>("train_step");
      mlir::FailureOr<PlannedStepCost> cost = mlir::failure();
      if (func && mlir::succeeded(runLocalPasses(local.get(), "", &opts_.train, &dp, noDumps)))
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

private:
  struct MeshKey {
    int dp, tp;
    bool sp;
    bool operator<(const MeshKey &o) const {
      return std::tie(dp, tp, sp) < std::tie(o.dp, o.tp, o.sp);
    }
  };

  static void fail(const std::string &message, std::string *refusal) {
    if (refusal)
      *refusal = message;
    else
      printError(message);
  }

  mlir::MLIRContext &ctx_;
  const Options &opts_;
  onnx_import::ImportedModel &imported_;
  FirstErrorCollector &errors_;
  std::map<MeshKey, std::unique_ptr<GlobalStep>> steps_;
};

// 0 with `out` filled (without programs for --emit=mlir), or 1 with the error printed.
int compileBundle(mlir::MLIRContext &ctx, const Options &opts, CompiledBundle &out) {
  FirstErrorCollector errors(ctx, opts.model);
  // Microbatches split the batch as ranks do: one device with several goes the sharded way.
  if (opts.emitMlir || opts.mode == Mode::Forward || (opts.gpus == 1 && opts.microBatches == 1))
    return compileSingleRank(ctx, opts, errors, out);

  // One import; one global training step per mesh (the batch's sharding comes from
  // propagation); one partitioned copy of it per strategy and distinct number of rows.
  mlir::FailureOr<onnx_import::ImportedModel> imported = importModel(ctx, opts, errors);
  if (mlir::failed(imported) || !checkHasLoss(opts, imported->module.get()))
    return 1;
  StrategyCompiler compiler(ctx, opts, *imported, errors);
  ParallelStrategy chosen = opts.strategy;
  DataParallelBundle compiled;
  PlanNotes notes;
  if (opts.strategy.automatic) {
    if (!chooseStrategy(opts, compiler, chosen, compiled, notes.strategyDecision))
      return 1;
  } else if (!compiler.compile(chosen, compiled)) {
    return 1;
  }
  notes.layoutDecisions = compiler.globalStep(chosen)->layoutDecisions;
  notes.remat = rematReport(compiler.globalStep(chosen)->module.get(), &notes.rematUnits);
  addTrainedSetNotes(opts, imported->module.get(), notes);
  out.bundle = newBundle(opts);
  out.bundle.set_world_size(chosen.dp * chosen.tp);
  out.bundle.set_strategy(chosen.canonical());
  compiled.moveInto(out.bundle);
  out.weights = std::move(compiled.weights);
  out.notes = std::move(notes);
  return 0;
}

// --remat auto: the least recomputation whose largest planned peak per rank fits
// --gpu-memory, per unit. The plans, from least to most recomputation: none; selective for the
// first k of the N units (k = 1..N); full for the first k units and selective for the rest.
// Each adds recomputation to the one before, so the planned peak does not grow along the
// list; a bisection over it compiles about log2(2N + 1) plans besides none and the last.
int compileWithAutoRemat(mlir::MLIRContext &ctx, const Options &opts) {
  struct Plan {
    std::string mode;
    int64_t units;
  };
  std::string tried;
  auto compilePlan = [&](const Plan &plan, CompiledBundle &out, uint64_t &peak,
                         int64_t *numUnits) -> int {
    Options candidate = opts;
    candidate.train.remat = plan.mode;
    candidate.train.rematUnits = plan.units;
    if (int rc = compileBundle(ctx, candidate, out))
      return rc;
    peak = largestPeak(out.bundle);
    std::string name = plan.mode;
    if (plan.units >= 0 && numUnits == nullptr)
      name += " for " + std::to_string(plan.units) + " units";
    tried += (tried.empty() ? "" : ", ") + name + " " + std::to_string(peak) + " bytes";
    if (numUnits != nullptr)
      *numUnits = out.notes.rematUnits;
    return 0;
  };
  auto write = [&](CompiledBundle &out, const std::string &chose) {
    std::string choice = "auto (--gpu-memory " + std::to_string(opts.gpuMemoryBytes) +
                         " bytes) chose " + chose + ", the least recomputation that fits; " +
                         "planned peak per rank of the plans tried: " + tried;
    if (out.notes.remat.empty())
      out.notes.remat.push_back(choice + "; nothing recomputed");
    else
      out.notes.remat.front() = choice + "; " + out.notes.remat.front();
    return writeCompiledBundle(ctx, opts, out.bundle, out.weights ? &*out.weights : nullptr,
                               out.notes);
  };
  CompiledBundle best;
  uint64_t peak = 0;
  if (int rc = compilePlan({"none", -1}, best, peak, nullptr))
    return rc;
  if (peak <= opts.gpuMemoryBytes)
    return write(best, "none");
  int64_t numUnits = 0;
  if (int rc = compilePlan({"full", -1}, best, peak, &numUnits))
    return rc;
  if (peak > opts.gpuMemoryBytes) {
    printError(opts.model + ": --remat auto: no recomputation fits --gpu-memory " +
               std::to_string(opts.gpuMemoryBytes) + " bytes: the smallest plan, full, needs " +
               std::to_string(peak) + " bytes per rank (planned peak per rank: " + tried + ")");
    return 1;
  }
  // Plan c of the list (0: none, 1..N: selective for c units, N+1..2N: full for c - N).
  auto planAt = [&](int64_t c) {
    return c <= numUnits ? Plan{"selective", c} : Plan{"full", c - numUnits};
  };
  auto describe = [&](const Plan &plan) {
    if (plan.units >= numUnits)
      return plan.mode;
    return plan.mode + " for the first " + std::to_string(plan.units) + " of " +
           std::to_string(numUnits) + " units, " +
           (plan.mode == "full" ? "selective" : "none") + " for the rest";
  };
  int64_t lo = 0, hi = 2 * numUnits; // lo does not fit, hi does
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    CompiledBundle candidate;
    if (int rc = compilePlan(planAt(mid), candidate, peak, nullptr))
      return rc;
    if (peak <= opts.gpuMemoryBytes) {
      hi = mid;
      best = std::move(candidate);
    } else {
      lo = mid;
    }
  }
  return write(best, describe(planAt(hi)));
}

int compile(const Options &opts) {
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();
  ctx.loadDialect<mlir::func::FuncDialect, graph::GraphDialect>();
  if (opts.mode == Mode::Train && opts.train.remat == "auto" && !opts.emitMlir)
    return compileWithAutoRemat(ctx, opts);
  CompiledBundle out;
  if (int rc = compileBundle(ctx, opts, out))
    return rc;
  if (out.bundle.programs_size() == 0)
    return 0; // --emit=mlir printed the IR
  return writeCompiledBundle(ctx, opts, out.bundle, out.weights ? &*out.weights : nullptr,
                             out.notes);
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  switch (parseCommandLine(argc, argv, opts)) {
  case ParseResult::ExitSuccess:
    return 0;
  case ParseResult::UsageError:
    return 2;
  case ParseResult::Ok:
    break;
  }
  try {
    return compile(opts);
  } catch (const std::exception &e) {
    printError(opts.model + ": internal error: " + e.what());
    return 1;
  }
}
