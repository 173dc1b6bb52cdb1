//===- ParallelStrategy.h - the parallel strategy and its grammar ------------------------===//
//
//   auto                       the cheapest plan that fits the device memory (AutoStrategy.h)
//   dp|zero1|zero2|zero3|fsdp  every device in the data-parallel axis (fsdp = zero3)
//   tp                         every device in the tensor-parallel axis
//   sp                         the same, with sequence parallelism
//   dp=2,tp=4,zero=1[,sp=1][,pp=1]  explicit axes; dp x tp x pp must equal the device count
//
// The command line's --strategy and the bundle's recorded strategy (Bundle.strategy, written
// as canonical()) are parsed by the same parser. Plain C++: the plan report links it without
// the compiler's passes.
//
//===-------------------------------------------------------------------------------------===//
#ifndef SHARDC_PARALLEL_PARALLELSTRATEGY_H
#define SHARDC_PARALLEL_PARALLELSTRATEGY_H

#include <optional>
#include <string>

namespace shardc {

struct ParallelStrategy {
  bool automatic = false;
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int zero = 0;
  // Sequence parallelism (sp=1): the activations between the tensor-parallel blocks are also
  // split on tp.
  bool sequenceParallel = false;
  // "auto,tp=8,pp=4": axes auto keeps fixed (0 / -1: free); only the cost model's search
  // (--cluster) honours them.
  int fixedTp = 0, fixedPp = 0, fixedZero = -1, fixedSp = -1;
  bool constrained() const { return fixedTp || fixedPp || fixedZero >= 0 || fixedSp >= 0; }
  // "dp=4,zero=3"; "auto" while undecided.
  std::string canonical() const;
};

// Parses `text` for `gpus` devices. Returns an error message (without the "shardc: error: "
// prefix) when the text is malformed, names an unsupported axis, or does not use exactly
// `gpus` devices.
std::optional<std::string> parseStrategy(const std::string &text, int gpus,
                                         ParallelStrategy &out);

} // namespace shardc

#endif
