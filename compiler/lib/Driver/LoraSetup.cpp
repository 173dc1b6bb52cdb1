//===- LoraSetup.cpp - --lora on the imported model -------------------------------------===//
#include "shardc/Driver/LoraSetup.h"

#include "passes/training/TrainingPasses.h"

#include "shardc/Support/Diagnostics.h"

#include "mlir/Pass/PassManager.h"

#include "runtime/checkpoint/safetensors.h"
#include "runtime/support/philox.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

namespace shardc::driver {

namespace {

// PEFT prefixes the module paths of the model it wraps with this in its adapter files.
constexpr const char *kPeftPrefix = "base_model.model.";

struct NewParameter {
  std::string name;
  mlir::RankedTensorType type;
  LoraParameterKind kind;
  int64_t fanIn;
};

std::vector<char> asBytes(const std::vector<float> &values) {
  std::vector<char> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// PEFT's initial values: A ~ U(-1/sqrt(in), 1/sqrt(in)), which is kaiming_uniform_ with
// a = sqrt(5) on a [r, in] weight, drawn from a Philox stream per parameter; B zeros.
std::vector<float> initialValues(const NewParameter &p, uint64_t seed, uint64_t stream) {
  std::vector<float> values(static_cast<size_t>(p.type.getNumElements()), 0.0f);
  if (p.kind == LoraParameterKind::B)
    return values;
  const double bound = 1.0 / std::sqrt(static_cast<double>(p.fanIn));
  runtime::PhiloxStream random(seed, stream);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>((2.0 * random.uniform(i) - 1.0) * bound);
  return values;
}

// The key of `parameter` in a PEFT file: PEFT's prefix and a module path that the exported
// name ends with (the export may name the model's modules under a wrapper, "model.").
const std::string *peftKeyFor(const std::string &parameter,
                              const std::map<std::string, runtime::HostTensor> &file) {
  const std::string *found = nullptr;
  for (const auto &[key, tensor] : file) {
    if (key.rfind(kPeftPrefix, 0) != 0)
      continue;
    const std::string path = key.substr(std::strlen(kPeftPrefix));
    if (parameter == path || (parameter.size() > path.size() &&
                              parameter.compare(parameter.size() - path.size(), path.size(),
                                                path) == 0 &&
                              parameter[parameter.size() - path.size() - 1] == '.')) {
      if (found)
        return nullptr; // two keys fit: ambiguous, reported by the caller
      found = &key;
    }
  }
  return found;
}

} // namespace

bool addLoraAdapters(const CompileOptions &opts, mlir::ModuleOp module, WeightStore &weights,
                     std::string &error) {
  LoraAdaptersOptions options;
  options.rank = opts.lora.rank;
  options.alpha = opts.lora.alpha;
  options.rslora = opts.lora.rslora;
  options.dropout = opts.lora.dropout;
  options.targets = opts.lora.targets;
  options.trainBias = opts.lora.trainBias;
  options.trainNorm = opts.lora.trainNorm;
  std::vector<NewParameter> added;
  mlir::PassManager pm(module.getContext());
  pm.addPass(createLoraAdapters(options, [&](const std::string &name, mlir::RankedTensorType type,
                                             LoraParameterKind kind, int64_t fanIn) {
    added.push_back({name, type, kind, fanIn});
  }));
  // The pass's first error, located in the model (or the model file itself).
  FirstErrorCollector errors(*module.getContext(), opts.model);
  if (mlir::failed(pm.run(module))) {
    error = errors.hasError() ? errors.message() : opts.model + ": shardc-lora-adapters failed";
    return false;
  }

  std::map<std::string, runtime::HostTensor> file;
  if (!opts.lora.initFile.empty()) {
    runtime::Status status = runtime::readSafetensors(opts.lora.initFile, &file, nullptr);
    if (!status.isOk()) {
      error = "--lora-init " + status.message();
      return false;
    }
  }
  std::set<std::string> used;
  std::map<std::string, std::string> peftKeys; // adapter parameter -> its key in PEFT's files
  for (size_t i = 0; i < added.size(); ++i) {
    const NewParameter &p = added[i];
    std::vector<float> values;
    if (file.empty() && opts.lora.initFile.empty()) {
      values = initialValues(p, opts.lora.seed, i);
      peftKeys[p.name] = kPeftPrefix + p.name;
    } else {
      const std::string *key = peftKeyFor(p.name, file);
      if (!key) {
        error = opts.lora.initFile + ": no single tensor " + kPeftPrefix +
                "<module path>.lora_X.weight for adapter '" + p.name +
                "' (the file's adapters do not match --lora targets, or two of its names fit)";
        return false;
      }
      const runtime::HostTensor &tensor = file.at(*key);
      runtime::Tensor view = const_cast<runtime::HostTensor &>(tensor).view();
      const std::vector<int64_t> shape(p.type.getShape().begin(), p.type.getShape().end());
      if (view.dtype != program::F32 || view.shape != shape) {
        std::string want;
        for (int64_t d : shape)
          want += (want.empty() ? "" : "x") + std::to_string(d);
        error = opts.lora.initFile + ": tensor '" + *key + "' must be f32[" + want +
                "] for adapter '" + p.name + "' (r=" + std::to_string(opts.lora.rank) + ")";
        return false;
      }
      values.assign(view.as<float>(), view.as<float>() + view.numel());
      used.insert(*key);
      peftKeys[p.name] = *key;
    }
    weights.add(p.name, WeightTensor{p.type, true, asBytes(values)});
  }
  for (const auto &[key, tensor] : file)
    if (!used.count(key)) {
      error = opts.lora.initFile + ": tensor '" + key + "' is no adapter of a module --lora " +
              "targets (targets=" + (opts.lora.targets.empty() ? "default" : opts.lora.targets) +
              ")";
      return false;
    }
  // Each adapter's PEFT key beside its merge record (graph.lora_merges), for lora.json: the
  // init file's own names, so that saved adapters load where the file's did.
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (auto merges = forward->getAttrOfType<mlir::ArrayAttr>(graph::kLoraMergesAttr)) {
    mlir::Builder b(module.getContext());
    llvm::SmallVector<mlir::Attribute> keyed;
    for (auto merge : merges.getAsRange<mlir::DictionaryAttr>()) {
      mlir::NamedAttrList entries(merge);
      for (auto [parameter, key] : {std::pair{"lora_A", "peft_key_A"}, {"lora_B", "peft_key_B"}})
        entries.set(key, b.getStringAttr(peftKeys[merge.getAs<mlir::StringAttr>(parameter).str()]));
      keyed.push_back(entries.getDictionary(module.getContext()));
    }
    forward->setAttr(graph::kLoraMergesAttr, b.getArrayAttr(keyed));
  }
  return true;
}

std::string loraAdapterConfigJson(const CompileOptions &opts,
                                  const std::vector<std::string> &adapterNames,
                                  const std::vector<PlanNotes::LoraMerge> &merges,
                                  const std::vector<PlanNotes::QuantizedWeight> &quantized,
                                  std::string &error) {
  std::map<std::string, std::string> peftKeyOf;
  for (const PlanNotes::LoraMerge &m : merges) {
    peftKeyOf[m.loraA] = m.peftKeyA;
    peftKeyOf[m.loraB] = m.peftKeyB;
  }
  nlohmann::ordered_json keys = nlohmann::ordered_json::object();
  std::set<std::string> modules;
  for (const std::string &name : adapterNames) {
    auto found = peftKeyOf.find(name);
    if (found == peftKeyOf.end() || found->second.empty()) {
      error = opts.output + "/lora.json: the bundle's adapter '" + name +
              "' has no PEFT name (no merge record of shardc-lora-adapters names it)";
      return "";
    }
    const std::string &key = found->second;
    keys[name] = key;
    // The module path PEFT sees: the key without its prefix and ".lora_X.weight".
    const std::string path = key.substr(std::strlen(kPeftPrefix));
    modules.insert(path.substr(0, path.size() - std::strlen(".lora_A.weight")));
  }
  nlohmann::ordered_json config = {
      {"peft_type", "LORA"},
      {"task_type", nullptr},
      {"base_model_name_or_path", nullptr},
      {"r", opts.lora.rank},
      {"lora_alpha", opts.lora.alpha},
      {"lora_dropout", opts.lora.dropout},
      {"use_rslora", opts.lora.rslora},
      {"target_modules", std::vector<std::string>(modules.begin(), modules.end())},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"init_lora_weights", true},
      {"inference_mode", true},
      {"modules_to_save", nullptr}};
  std::map<std::string, std::string> formatOf;
  for (const PlanNotes::QuantizedWeight &q : quantized)
    formatOf[q.weight] = q.format;
  nlohmann::ordered_json mergeList = nlohmann::ordered_json::array();
  std::set<std::string> merged;
  for (const PlanNotes::LoraMerge &m : merges) {
    merged.insert(m.weight);
    mergeList.push_back({{"weight", m.weight},
                         {"lora_A", m.loraA},
                         {"lora_B", m.loraB},
                         {"scale", m.scale},
                         {"weight_layout", m.weightInByOut ? "in_out" : "out_in"},
                         {"base_dtype", formatOf.count(m.weight) ? formatOf[m.weight] : "fp32"}});
  }
  nlohmann::ordered_json dequantizeList = nlohmann::ordered_json::array();
  for (const PlanNotes::QuantizedWeight &q : quantized)
    if (!merged.count(q.weight))
      dequantizeList.push_back({{"weight", q.weight},
                                {"weight_layout", q.weightInByOut ? "in_out" : "out_in"},
                                {"base_dtype", q.format}});
  nlohmann::ordered_json out = {{"format", "shardc-lora-adapters-1"},
                                {"peft_keys", keys},
                                {"adapter_config", config},
                                {"merge", mergeList},
                                {"dequantize", dequantizeList}};
  return out.dump(2) + "\n";
}

} // namespace shardc::driver
