//===- CommandLine.h - shardc's flags ---------------------------------------------------===//
#ifndef SHARDC_TOOLS_SHARDC_COMMANDLINE_H
#define SHARDC_TOOLS_SHARDC_COMMANDLINE_H

#include "shardc/Autodiff/TrainStep.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardc::driver {

enum class Mode { Train, Forward };

struct Options {
  std::string model;
  std::string output;
  Mode mode = Mode::Train;
  bool emitMlir = false;
  std::string dumpIrDir;
  bool withoutWeights = false;
  std::map<std::string, std::vector<int64_t>> inputShapes;
  TrainStepOptions train;
  bool weightDecayGiven = false; // else PyTorch's default for the optimizer
};

enum class ParseResult { Ok, ExitSuccess, UsageError };

// Parses argv; prints --help/--version itself, and usage errors as
// "shardc: error: ..." plus a hint, to stderr.
ParseResult parseCommandLine(int argc, char **argv, Options &options);

} // namespace shardc::driver

#endif
