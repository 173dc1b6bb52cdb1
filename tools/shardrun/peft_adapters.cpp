#include "tools/shardrun/peft_adapters.h"

#include "runtime/checkpoint/safetensors.h"
#include "runtime/loader/bundle.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace shardrun {

using shardc::runtime::HostTensor;
using shardc::runtime::Status;

Status readPeftAdapterLayout(const std::string &bundleDir, PeftAdapterLayout *layout,
                             const std::string &flag) {
  const std::string path = shardc::runtime::joinPath(bundleDir, "lora.json");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(bundleDir + ": no lora.json: " + flag +
                         " applies to bundles compiled with shardc --lora");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object() || !json.contains("peft_keys") ||
      !json["peft_keys"].is_object() || !json.contains("adapter_config") ||
      !json["adapter_config"].is_object())
    return Status::error(path + ": not a LoRA adapter description (expected an object with "
                                "peft_keys and adapter_config)");
  layout->keys.clear();
  for (const auto &[name, key] : json["peft_keys"].items()) {
    if (!key.is_string())
      return Status::error(path + ": peft_keys['" + name + "'] is not a string");
    layout->keys.emplace_back(name, key.get<std::string>());
  }
  layout->adapterConfigJson = json["adapter_config"].dump(2) + "\n";
  layout->merges.clear();
  // merge: the adapted weights; dequantize: the quantized weights no adapter merges into
  // (written as the step computed with them).
  for (const char *list : {"merge", "dequantize"}) {
    if (!json.contains(list))
      continue;
    if (!json[list].is_array())
      return Status::error(path + ": " + list + " is not a list");
    const bool adapted = std::string(list) == "merge";
    for (const nlohmann::json &m : json[list]) {
      auto text = [&](const char *key) { return m.contains(key) && m[key].is_string(); };
      if (!m.is_object() || !text("weight") || !text("weight_layout") ||
          (m["weight_layout"] != "in_out" && m["weight_layout"] != "out_in") ||
          !text("base_dtype") ||
          (adapted && (!text("lora_A") || !text("lora_B") || !m.contains("scale") ||
                       !m["scale"].is_number())))
        return Status::error(path + ": a " + list + " entry needs weight, " +
                             (adapted ? "lora_A, lora_B, scale, " : "") +
                             "weight_layout (in_out or out_in) and base_dtype");
      layout->merges.push_back(
          {m["weight"].get<std::string>(), adapted ? m["lora_A"].get<std::string>() : "",
           adapted ? m["lora_B"].get<std::string>() : "", adapted ? m["scale"].get<double>() : 0.0,
           m["weight_layout"] == "in_out",
           m["base_dtype"].get<std::string>()});
    }
  }
  return Status::ok();
}

Status writePeftAdapters(const std::string &dir, const PeftAdapterLayout &layout,
                         const std::function<const HostTensor *(const std::string &)> &valueOf) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::error(dir + ": cannot create the directory: " + ec.message());
  std::vector<std::pair<std::string, HostTensor>> tensors;
  for (const auto &[name, key] : layout.keys) {
    const HostTensor *value = valueOf(name);
    if (value == nullptr)
      return Status::error("the bundle trains no parameter '" + name + "' that lora.json names");
    tensors.emplace_back(key, *value);
  }
  SHARDC_RETURN_IF_ERROR(shardc::runtime::writeSafetensors(
      shardc::runtime::joinPath(dir, "adapter_model.safetensors"), tensors, {{"format", "pt"}}));
  const std::string configPath = shardc::runtime::joinPath(dir, "adapter_config.json");
  std::ofstream config(configPath, std::ios::binary | std::ios::trunc);
  if (!(config << layout.adapterConfigJson) || !config.flush())
    return Status::error(configPath + ": cannot write");
  return Status::ok();
}

} // namespace shardrun
