//===- BundleNotes.cpp ------------------------------------------------------------------===//
#include "shardc/Driver/BundleNotes.h"

#include "shardc/Dialect/Graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdio>

namespace shardc {

namespace {

// Training: "NAME: why" for each initializer the step keeps frozen because it cannot be a
// trained parameter (graph.not_trainable): ONNX does not say what PyTorch trains, so the user
// learns which were left out.
std::vector<std::string> notTrainedNotes(const CompileOptions &opts, mlir::ModuleOp module) {
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
std::string trainedSetSource(const CompileOptions &opts, mlir::ModuleOp module, bool *guessed) {
  *guessed = false;
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (opts.mode != Mode::Train || !forward)
    return "";
  std::string filters;
  if (!opts.train.trainable.empty())
    filters += " --trainable '" + opts.train.trainable + "'";
  if (!opts.train.freeze.empty())
    filters += " --freeze '" + opts.train.freeze + "'";
  if (opts.lora.enabled)
    return std::string("--lora: the LoRA adapters") +
           (opts.lora.trainBias ? ", the biases" : "") +
           (opts.lora.trainNorm ? ", the normalisation weights" : "") +
           "; every other parameter is the frozen base" +
           (filters.empty() ? std::string() : ", then" + filters);
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

} // namespace

void addTrainedSetNotes(const CompileOptions &opts, mlir::ModuleOp module, PlanNotes &notes) {
  notes.notTrained = notTrainedNotes(opts, module);
  // The records shardc-lora-adapters and shardc-quantize-base left on @forward.
  notes.loraMerges.clear();
  notes.quantizedBase.clear();
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  auto records = [&](llvm::StringRef attr) {
    auto list = forward ? forward->getAttrOfType<mlir::ArrayAttr>(attr) : mlir::ArrayAttr();
    return (list ? list : mlir::ArrayAttr::get(module.getContext(), {}))
        .getAsRange<mlir::DictionaryAttr>();
  };
  auto text = [](mlir::DictionaryAttr record, llvm::StringRef key) {
    auto value = record.getAs<mlir::StringAttr>(key);
    return value ? value.str() : std::string();
  };
  auto inByOut = [](mlir::DictionaryAttr record) {
    return record.getAs<mlir::BoolAttr>("weight_in_by_out").getValue();
  };
  for (mlir::DictionaryAttr q : records(graph::kQuantizedBaseAttr))
    notes.quantizedBase.push_back({text(q, "weight"), text(q, "format"), inByOut(q)});
  for (mlir::DictionaryAttr m : records(graph::kLoraMergesAttr))
    notes.loraMerges.push_back({text(m, "weight"), text(m, "lora_A"), text(m, "lora_B"),
                                text(m, "peft_key_A"), text(m, "peft_key_B"),
                                m.getAs<mlir::FloatAttr>("scale").getValueAsDouble(),
                                inByOut(m)});
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
              "master copy (under ZeRO as their shards, before the all-gather: "
              "shardc-half-storage); "
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

} // namespace shardc
