#include "tests/unit/runtime/shardrun_runner.h"

#include <cstdlib>
#include <sys/wait.h>

#ifndef SHARDRUN_BINARY
#error "SHARDRUN_BINARY must name the shardrun executable"
#endif

namespace shardc::runtime::testing {

std::string shellQuote(const std::string &s) {
  std::string quoted = "'";
  for (char c : s)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

RunResult runShardrun(const TempDir &scratch, const std::vector<std::string> &args,
                      const std::string &prefix) {
  std::string command = (prefix.empty() ? "" : prefix + " ") + shellQuote(SHARDRUN_BINARY);
  for (const std::string &arg : args)
    command += " " + shellQuote(arg);
  command += " >" + shellQuote(scratch.file("stdout")) + " 2>" + shellQuote(scratch.file("stderr"));
  int status = std::system(command.c_str());
  RunResult result;
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = readBytes(scratch.file("stdout"));
  result.err = readBytes(scratch.file("stderr"));
  return result;
}

} // namespace shardc::runtime::testing
