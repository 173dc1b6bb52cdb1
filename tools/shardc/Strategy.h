//===- Strategy.h - the --strategy grammar ----------------------------------------------===//
//
//   --strategy auto                       the cheapest plan that fits --gpu-memory (AutoStrategy.h)
//   --strategy dp|zero1|zero2|zero3|fsdp  all --gpus in the data-parallel axis (fsdp = zero3)
//   --strategy tp                         all --gpus in the tensor-parallel axis
//   --strategy sp                         the same, with sequence parallelism
//   --strategy dp=2,tp=4,zero=1[,sp=1][,pp=1]  explicit axes; dp x tp x pp must equal --gpus
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_TOOLS_SHARDC_STRATEGY_H
#define SHARDC_TOOLS_SHARDC_STRATEGY_H

#include <optional>
#include <string>

namespace shardc::driver {

struct ParallelStrategy {
  bool automatic = false;
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int zero = 0;
  // Sequence parallelism (sp=1): the activations between the tensor-parallel blocks are also
  // split on tp.
  bool sequenceParallel = false;
  // "dp=4,zero=3"; "auto" while undecided.
  std::string canonical() const;
};

// Parses `text` for `gpus` devices. Returns an error message (without the "shardc: error: "
// prefix) when the text is malformed, names an unsupported axis, or does not use exactly
// `gpus` devices.
std::optional<std::string> parseStrategy(const std::string &text, int gpus,
                                         ParallelStrategy &out);

} // namespace shardc::driver

#endif
