//===- main.cpp - shardc: ONNX model -> shardc bundle -----------------------------------===//
//
//   shardc MODEL.onnx --mode forward -o OUT.shard
//
// import (frontends/onnx) -> pass pipeline (fold constants, plan memory) -> program emission
// -> bundle directory. Errors are one line "shardc: error: ..." with exit code 1; usage
// errors exit with 2.
//
//===-------------------------------------------------------------------------------------===//
#include "CommandLine.h"
#include "Diagnostics.h"
#include "Pipeline.h"
#include "SourceModel.h"

#include "frontends/onnx/OnnxImporter.h"
#include "shardc/Dialect/Graph/GraphDialect.h"
#include "shardc/Lowering/Bundle.h"
#include "shardc/Lowering/ProgramEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <exception>
#include <set>

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

int compile(const Options &opts) {
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();
  ctx.loadDialect<mlir::func::FuncDialect, graph::GraphDialect>();
  FirstErrorCollector errors(ctx, opts.model);

  onnx_import::ImportOptions importOptions;
  importOptions.modelPath = opts.model;
  importOptions.inputShapes = opts.inputShapes;
  importOptions.requireWeights = !opts.withoutWeights;
  importOptions.trainingDropout = opts.mode == Mode::Train;
  std::string error;
  mlir::FailureOr<onnx_import::ImportedModel> imported =
      onnx_import::importOnnxModel(ctx, importOptions, error);
  if (mlir::failed(imported)) {
    printError(!error.empty() ? error : errors.hasError() ? errors.message()
                                                          : opts.model + ": import failed");
    return 1;
  }
  mlir::ModuleOp module = imported->module.get();

  if (opts.emitMlir) {
    module.print(llvm::outs(), mlir::OpPrintingFlags().elideLargeElementsAttrs(1024));
    llvm::outs() << "\n";
    llvm::outs().flush();
    return 0;
  }

  bool training = opts.mode == Mode::Train;
  if (training && describeLossOutput(module.lookupSymbol<mlir::func::FuncOp>("forward")).empty()) {
    printError(opts.model + ": --mode train needs a scalar float output (the loss), and the "
                            "model has none; use --mode forward to compile inference");
    return 1;
  }
  if (mlir::failed(runPipeline(module, opts.dumpIrDir, training ? &opts.train : nullptr))) {
    printError(errors.hasError() ? errors.message() : opts.model + ": pass pipeline failed");
    return 1;
  }
  auto func = module.lookupSymbol<mlir::func::FuncOp>(training ? "train_step" : "forward");
  if (!func) {
    printError(opts.model + ": the compiled module has no @" +
               (training ? "train_step" : "forward") + " function");
    return 1;
  }
  mlir::FailureOr<EmittedProgram> emitted = emitProgram(func, imported->weights);
  if (mlir::failed(emitted)) {
    printError(errors.hasError() ? errors.message() : opts.model + ": lowering failed");
    return 1;
  }

  program::Bundle bundle;
  bundle.set_format_version(1);
  bundle.set_mode(training ? "train" : "forward");
  bundle.set_source_model(baseName(opts.model));
  bundle.set_world_size(1);
  *bundle.add_programs() = emitted->program;
  const std::vector<char> *weights = emitted->weightsComplete ? &emitted->weights : nullptr;
  // A training bundle carries the input model without its trained values, so that shardrun
  // can write the trained model (--export-onnx). Not for planning-only bundles: they cannot
  // train, and the model's external data may be absent.
  std::string sourceOnnx;
  bool withSource = false;
  if (training && weights) {
    std::set<std::string> trained;
    for (const program::StateInit &init : emitted->program.state_init())
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
  if (!writeBundle(opts.output, bundle, weights, withSource ? &sourceOnnx : nullptr, error)) {
    printError(error);
    return 1;
  }
  const program::Program &p = emitted->program;
  std::fprintf(stderr,
               "shardc: wrote %s: %d kernel calls, arena %llu bytes, weights %llu bytes, "
               "workspace %llu bytes; planned peak %llu bytes per rank%s\n",
               opts.output.c_str(), p.ops_size(),
               static_cast<unsigned long long>(p.arena_bytes()),
               static_cast<unsigned long long>(p.weights_bytes()),
               static_cast<unsigned long long>(p.workspace_bytes()),
               static_cast<unsigned long long>(p.planned_peak_bytes()),
               weights ? "" : " (weights absent: planning only)");
  return 0;
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
