//===- main.cpp - shardc: ONNX model -> shardc bundle -----------------------------------===//
//
//   shardc MODEL.onnx --mode forward -o OUT.shard
//
// The command line (CommandLine.h) fills the compile options; the compiler library
// (shardc/Driver/Compile.h) does the rest. Errors are one line "shardc: error: ..." with exit
// code 1; usage errors exit with 2.
//
//===-------------------------------------------------------------------------------------===//
#include "CommandLine.h"

#include "shardc/Driver/Compile.h"
#include "shardc/Support/Diagnostics.h"

#include <exception>

int main(int argc, char **argv) {
  shardc::CompileOptions opts;
  switch (shardc::driver::parseCommandLine(argc, argv, opts)) {
  case shardc::driver::ParseResult::ExitSuccess:
    return 0;
  case shardc::driver::ParseResult::UsageError:
    return 2;
  case shardc::driver::ParseResult::Ok:
    break;
  }
  try {
    return shardc::compileModel(opts);
  } catch (const std::exception &e) {
    shardc::printError(opts.model + ": internal error: " + e.what());
    return 1;
  }
}
