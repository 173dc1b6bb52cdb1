//===- OnnxImporter.cpp - the import pipeline -------------------------------------------===//
//
//   parse -> opset check -> unsupported-op report -> --input-shape -> initializers
//   (+ external data) -> libonnx checker and shape inference -> @forward, node by node
//   (each op verified and folded as it is created) -> graph outputs -> module verification
//
//===-------------------------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"

#include "frontends/onnx/DoubleConstants.h"
#include "frontends/onnx/ErrorReporting.h"
#include "frontends/onnx/GraphBuilder.h"
#include "frontends/onnx/Initializers.h"
#include "frontends/onnx/InputShapes.h"
#include "frontends/onnx/ModelLoader.h"
#include "frontends/onnx/ModelValidation.h"
#include "frontends/onnx/NodeImport.h"
#include "frontends/onnx/NodeContext.h"
#include "frontends/onnx/SupportedOps.h"
#include "frontends/onnx/TrainableRecord.h"

#include "shardc/Dialect/Graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <exception>

using namespace mlir;

namespace shardc::onnx_import {

namespace {

std::set<std::string> initializerNames(const onnx::GraphProto &graph) {
  std::set<std::string> names;
  for (const onnx::TensorProto &tensor : graph.initializer())
    names.insert(tensor.name());
  return names;
}

FailureOr<ImportedModel> importParsed(MLIRContext &ctx, onnx::ModelProto &model,
                                      const ImportOptions &opts, llvm::StringRef baseDir,
                                      ErrorReporter &errors) {
  FailureOr<int64_t> opset = supportedOpset(model, errors);
  if (failed(opset))
    return failure();
  onnx::GraphProto &graph = *model.mutable_graph();
  // Before anything op-specific, so that one error lists every op type shardc lacks.
  if (failed(checkAllOpsSupported(graph, *opset, errors)) ||
      failed(applyInputShapes(graph, initializerNames(graph), opts.inputShapes, errors)))
    return failure();

  ImportedModel result;
  InitializerSet initializers;
  FailureOr<std::optional<std::set<std::string>>> record = readTrainableRecord(model, errors);
  FailureOr<std::map<std::string, int64_t>> paddingRows = readPaddingIdxRecord(model, errors);
  if (failed(record) || failed(paddingRows))
    return failure();
  InitializerOptions initOptions{baseDir.str(), opts.requireWeights,
                                 compileTimeInputNames(graph, *opset), *record};
  if (failed(loadInitializers(ctx, graph, initOptions, initializers, result.weights, errors)) ||
      failed(inlineConstantNodeData(ctx, graph, baseDir, errors)))
    return failure();
  narrowDoubleConstantsCastToFloat(graph);
  result.warnings = narrowFloat64Regions(graph);

  // libonnx checks first what it can check robustly; its shape inference waits until the
  // importer has accepted every node (see ModelValidation.h).
  bool useLibonnx = libonnxKnowsOpset(*opset);
  onnx::ModelProto copy;
  if (useLibonnx) {
    copy = validationCopy(model, initializers.parameterNames);
    if (failed(runOnnxChecker(copy, errors)))
      return failure();
  }

  GraphBuilder builder(ctx, errors, declaredTypes(graph));
  builder.setTrainingDropout(opts.trainingDropout);
  builder.setProducerName(model.producer_name());
  for (const auto &[name, row] : opts.paddingRows) {
    bool looked = false;
    for (const onnx::NodeProto &node : graph.node())
      looked |= node.op_type() == "Gather" && node.input_size() > 0 && node.input(0) == name;
    if (!looked)
      return errors.fail("--padding-row '" + name + "=" + std::to_string(row) +
                         "': no Gather looks up rows of an initializer of that name");
    (*paddingRows)[name] = row;
  }
  builder.setPaddingRows(*paddingRows);
  builder.setUpdateBuffers(opts.updateBuffers);
  if (failed(builder.begin(graph, initializers)) || failed(importGraphNodes(builder, graph, *opset)) ||
      failed(builder.finish(graph)))
    return failure();
  if (useLibonnx) {
    OnnxTypes inferred;
    if (failed(runOnnxShapeInference(copy, inferred, errors)) ||
        failed(builder.checkInferredTypes(graph, inferred)))
      return failure();
  }
  result.module = builder.takeModule();
  if (*record)
    if (auto forward = result.module->lookupSymbol<func::FuncOp>("forward"))
      forward->setAttr(graph::kTrainableRecordAttr, UnitAttr::get(&ctx));
  return result;
}

FailureOr<ImportedModel> importBytes(MLIRContext &ctx, llvm::StringRef bytes,
                                     const ImportOptions &opts, llvm::StringRef baseDir,
                                     std::string &error) {
  ErrorReporter errors(opts.modelPath.empty() ? "<memory>" : opts.modelPath, error);
  ctx.loadDialect<graph::GraphDialect, func::FuncDialect>();
  // protobuf and libonnx report some failures (e.g. allocation) as exceptions.
  try {
    onnx::ModelProto model;
    if (failed(parseModel(bytes, model, errors)))
      return failure();
    return importParsed(ctx, model, opts, baseDir, errors);
  } catch (const std::exception &e) {
    (void)errors.fail("internal error: " + firstLine(e.what()));
    return failure();
  }
}

} // namespace

FailureOr<ImportedModel> importOnnxModel(MLIRContext &ctx, const ImportOptions &opts,
                                         std::string &error) {
  ErrorReporter errors(opts.modelPath, error);
  FailureOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = readModelFile(opts.modelPath, errors);
  if (failed(buffer))
    return failure();
  return importBytes(ctx, (*buffer)->getBuffer(), opts, modelDirectory(opts.modelPath), error);
}

FailureOr<ImportedModel> importOnnxModelFromBytes(MLIRContext &ctx, llvm::StringRef bytes,
                                                  const ImportOptions &opts, std::string &error) {
  return importBytes(ctx, bytes, opts, /*baseDir=*/"", error);
}

} // namespace shardc::onnx_import
