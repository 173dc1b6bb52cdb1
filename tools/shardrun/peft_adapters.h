// shardrun --save-adapters DIR: the trained LoRA adapters of a bundle compiled with shardc --lora
// as a PEFT adapter directory (adapter_model.safetensors and adapter_config.json), which
// peft.PeftModel.from_pretrained loads onto the base model.
#pragma once

#include "runtime/executor/host_tensor.h"
#include "runtime/export/onnx_export.h"
#include "runtime/support/status.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace shardrun {

// What the bundle's lora.json says: each adapter parameter's key in the PEFT file, and the
// PEFT config to write beside it.
struct PeftAdapterLayout {
  std::vector<std::pair<std::string, std::string>> keys; // parameter name, PEFT key
  std::string adapterConfigJson;
  // Each adapted weight and its adapters, for --export-onnx --merge-lora.
  std::vector<shardc::runtime::LoraMergeSpec> merges;
};

// Reads BUNDLE/lora.json; an error naming the file when the bundle has none (it was not
// compiled with --lora; `flag` names the option that needs it) or it is malformed.
shardc::runtime::Status readPeftAdapterLayout(const std::string &bundleDir,
                                              PeftAdapterLayout *layout,
                                              const std::string &flag = "--save-adapters");

// Writes DIR/adapter_model.safetensors (the adapters' values under their PEFT keys, metadata
// format=pt as PEFT writes it) and DIR/adapter_config.json, creating DIR.
shardc::runtime::Status
writePeftAdapters(const std::string &dir, const PeftAdapterLayout &layout,
                  const std::function<const shardc::runtime::HostTensor *(const std::string &)>
                      &valueOf);

} // namespace shardrun
