// The names of LoRA adapter parameters (shardc --lora): MODULE.lora_A.weight and
// MODULE.lora_B.weight, PEFT's names relative to the module path, shared by the compiler,
// which makes them, and the runtime, which writes and exports parameters by name.
#pragma once

#include <string_view>

namespace shardc::runtime {

inline bool isLoraAdapterName(std::string_view name) {
  auto endsWith = [&](std::string_view suffix) {
    return name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  return endsWith(".lora_A.weight") || endsWith(".lora_B.weight");
}

} // namespace shardc::runtime
