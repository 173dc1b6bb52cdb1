//===- BundleOutput.cpp -----------------------------------------------------------------===//
#include "shardc/Driver/BundleOutput.h"

#include "shardc/Driver/LoraSetup.h"
#include "shardc/Driver/SourceModel.h"
#include "shardc/Parallel/DataParallelCompile.h"
#include "shardc/Plan/PlanSummary.h"
#include "shardc/Support/Diagnostics.h"

#include "runtime/loader/bundle.h"
#include "runtime/support/lora_names.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>

namespace shardc {

namespace {

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Above this share of the trained elements whole on every tp rank, the summary says so: such a
// plan saves less memory than its tp degree suggests (heads or a vocabulary that tp does not
// divide, a cut the rules keep whole), which plan.txt alone would leave to be found.
constexpr double kReplicatedShareToReport = 0.10;

void noteReplicatedShare(const program::Bundle &bundle, const PlanNotes &notes) {
  PlanSummary s = summarizePlan(bundle, notes);
  int tp = 1;
  for (const auto &[axis, size] : s.meshAxes)
    if (axis == "tp")
      tp = size;
  if (tp < 2 || s.trainedElements == 0)
    return;
  const double share = static_cast<double>(s.trainedReplicatedElements) /
                       static_cast<double>(s.trainedElements);
  if (share <= kReplicatedShareToReport)
    return;
  std::fprintf(stderr,
               "shardc: note: tp=%d keeps %.0f%% of the trained parameters (%llu of %llu "
               "elements) whole on every tp rank; plan.txt's \"Tensor-parallel layout\" says "
               "why for each\n",
               tp, 100.0 * share, static_cast<unsigned long long>(s.trainedReplicatedElements),
               static_cast<unsigned long long>(s.trainedElements));
}

} // namespace

int writeCompiledBundle(mlir::MLIRContext &ctx, const CompileOptions &opts,
                        const CompiledBundle &compiled) {
  const program::Bundle &bundle = compiled.bundle;
  // --no-weights plans only: no weights.bin even when every stored value happened to be at
  // hand (a model whose only initializers are shapes and constants).
  const std::vector<char> *weights =
      compiled.weights && !opts.withoutWeights ? &*compiled.weights : nullptr;
  const PlanNotes &notes = compiled.notes;
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
      // LoRA adapters are no initializers of the model: it keeps its base weights whole.
      if (!opts.lora.enabled || !runtime::isLoraAdapterName(init.name()))
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
  if (training && opts.lora.enabled) {
    // lora.json: the adapters' PEFT names and config, for shardrun --save-adapters.
    std::vector<std::string> adapters;
    for (const program::StateInit &init : bundle.programs(0).state_init())
      if (runtime::isLoraAdapterName(init.name()))
        adapters.push_back(init.name());
    const std::string json = driver::loraAdapterConfigJson(opts, adapters, notes.loraMerges,
                                                         notes.quantizedBase, error);
    const std::string path = opts.output + "/lora.json";
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    if (json.empty() || !(file << json) || !file.flush()) {
      printError(json.empty() ? error : path + ": cannot write the LoRA adapters' config");
      return 1;
    }
  }
  const uint64_t peak = largestPlannedPeak(bundle.programs());
  const program::Program &p = bundle.programs(0);
  std::fprintf(
      stderr,
      "shardc: wrote %s: %s%d kernel calls, arena %llu bytes, weights %llu bytes, "
      "workspace %llu bytes; planned peak %llu bytes per rank%s\n",
      opts.output.c_str(),
      bundle.world_size() > 1
          ? (std::to_string(bundle.world_size()) + " ranks (" + bundle.strategy() + "), ").c_str()
          : "",
      p.ops_size(), static_cast<unsigned long long>(p.arena_bytes()),
      static_cast<unsigned long long>(p.weights_bytes()),
      static_cast<unsigned long long>(p.workspace_bytes()), static_cast<unsigned long long>(peak),
      weights ? "" : " (weights absent: planning only)");
  noteReplicatedShare(bundle, notes);
  if (notes.trainedSetGuessed) {
    // The parameters whose values look like a buffer's, named (the first 3) in the one line.
    std::string doubts;
    for (size_t i = 0; i < notes.doubtfulTrained.size() && i < 3; ++i)
      doubts += (i ? ", " : "") + notes.doubtfulTrained[i];
    if (notes.doubtfulTrained.size() > 3)
      doubts += " and " + std::to_string(notes.doubtfulTrained.size() - 3) + " more";
    std::fprintf(stderr,
                 "shardc: warning: %s records no trained parameters: trained every float "
                 "initializer the loss depends on but %zu recognised buffers (plan.txt, "
                 "\"Trained set\")%s%s; export with tools/export/shardc_export.py or settle it "
                 "with --trainable/--freeze\n",
                 opts.model.c_str(), notes.notTrained.size(),
                 doubts.empty() ? "" : "; unsure of ", doubts.c_str());
  }
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

program::Bundle newBundle(const CompileOptions &opts) {
  program::Bundle bundle;
  bundle.set_format_version(runtime::kBundleFormatVersion);
  bundle.set_mode(opts.mode == Mode::Train ? "train" : "forward");
  bundle.set_source_model(baseName(opts.model));
  return bundle;
}

} // namespace shardc
