// Runs the real shardrun binary for the command-line tests: its exit code, stdout and stderr.
#pragma once

#include "tests/unit/runtime/test_util.h"

#include <string>
#include <vector>

namespace shardc::runtime::testing {

struct RunResult {
  int exitCode = -1;
  std::string out; // stdout
  std::string err; // stderr
};

// Single-quotes `s` for /bin/sh.
std::string shellQuote(const std::string &s);

// Runs `prefix` (e.g. "env NAME=value" or "mpirun -np 2", as shell words; empty: none) followed
// by shardrun and `args`, with stdout and stderr captured in files in `scratch`.
RunResult runShardrun(const TempDir &scratch, const std::vector<std::string> &args,
                      const std::string &prefix = "");

} // namespace shardc::runtime::testing
