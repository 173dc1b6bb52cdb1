//===- CommandLine.h - shardc's flags ---------------------------------------------------===//
#ifndef SHARDC_TOOLS_SHARDC_COMMANDLINE_H
#define SHARDC_TOOLS_SHARDC_COMMANDLINE_H

#include "shardc/Parallel/CompileOptions.h"

namespace shardc::driver {

enum class ParseResult { Ok, ExitSuccess, UsageError };

// Parses argv; prints --help/--version itself, and usage errors as
// "shardc: error: ..." plus a hint, to stderr.
ParseResult parseCommandLine(int argc, char **argv, CompileOptions &options);

} // namespace shardc::driver

#endif
